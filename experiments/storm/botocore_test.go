package storm

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
)

// debianPython is the Python that sees Debian's python3-botocore.
const debianPython = "/usr/bin/python3"

// TestBotocoreQuota holds rules.BotocoreStandard to the real botocore: the retries its quota
// grants failing calls until it is empty, for 503 answers and for timeouts, as the model
// counts them.
func TestBotocoreQuota(t *testing.T) {
	if exec.Command(debianPython, "-c", "import botocore").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no botocore for " + debianPython + ": .ci/run installs python3-botocore")
		}
		t.Skip("no botocore for " + debianPython + " (Debian's python3-botocore)")
	}
	out, err := exec.Command(debianPython, "testdata/botocore_quota.py").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var version string
	var errors503, timeouts int
	if _, err := fmt.Sscan(string(out), &version, &errors503, &timeouts); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	p := rules.BotocoreStandard()
	if !strings.Contains(p.Source, "botocore "+version+" ") {
		t.Errorf("botocore %s here; the rule cites %q", version, p.Source)
	}
	p.Backoff = rules.StormBackoff{}
	for _, tt := range []struct {
		name    string
		service time.Duration
		got     int
	}{{"503 answers", time.Millisecond, errors503}, {"timeouts", 100 * time.Millisecond, timeouts}} {
		want, err := model.Storm{Rate: 1, Capacity: 1000, Service: tt.service, Timeout: 50 * time.Millisecond,
			Window: 300 * time.Second, FailUntil: time.Hour, Policy: p}.Predict()
		if err != nil {
			t.Fatal(err)
		}
		if tt.got != want.Retries {
			t.Errorf("%s: botocore grants %d retries, the model %d", tt.name, tt.got, want.Retries)
		}
	}
}
