package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/results"
)

// TestGateTeeth: labrun built with a deliberate regression of its client (set at link time:
// 30 ms more on every dial; one business retry more than configured) fails labrun all at the
// default tolerance, exit 1, on a quiet machine; the unchanged build passes, or is at worst
// inconclusive (exit 0 or 3). A regressed run that a busy machine made inconclusive (exit 3)
// runs once more, as the shipped probes' disagreeing rows do; it fails when it is not caught
// twice. The three builds link side by side first. LABRUN_TEETH=regressions leaves the unchanged
// run to .ci/run's gate, which runs that build four times; LABRUN_TEETH=later skips the test in
// the conformance tier, as .ci/run runs it beside its one-core gate, on the other core.
func TestGateTeeth(t *testing.T) {
	testenv.Slow(t, "builds labrun three times and runs labrun all with each build")
	if os.Getenv("LABRUN_TEETH") == "later" {
		t.Skip("LABRUN_TEETH=later: .ci/run runs it beside its one-core gate")
	}
	root, err := filepath.Abs(".") // the module's: TestMain moved there
	if err != nil {
		t.Fatal(err)
	}
	const client = "github.com/labrun/labrun/client."
	builds := []struct {
		name, set string // set: the client's variable set at link time
		codes     []int
		bin       string
		args      []string // what it runs: labrun all when nil
	}{
		{name: "unchanged", codes: []int{exitPass, exitInconclusive}},
		{name: "dial-30ms", set: client + "regressDial=30ms", codes: []int{exitFail}},
		// One re-send more moves counts, which no noise explains: exp-c's rows catch it, and
		// labrun all exits 1 when any experiment does.
		{name: "one-more-retry", set: client + "regressRetries=1", codes: []int{exitFail}, args: []string{"exp-c"}},
	}
	regressions := os.Getenv("LABRUN_TEETH") == "regressions"
	var g errgroup.Group
	for i := range builds {
		b := &builds[i]
		if b.set == "" && regressions {
			continue
		}
		b.bin = filepath.Join(t.TempDir(), "labrun")
		g.Go(func() error {
			build := exec.Command("go", "build", "-o", b.bin, ".")
			if b.set != "" {
				build.Args = append(build.Args[:2], "-ldflags=-X "+b.set, "-o", b.bin, ".")
			}
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %v\n%s", build.Args, err, out)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range builds {
		t.Run(tt.name, func(t *testing.T) {
			if tt.set == "" && regressions {
				t.Skip("LABRUN_TEETH=regressions: the unchanged build is .ci/run's gate's")
			}
			code, suite := gateRun(t, tt.bin, tt.args...)
			if code == exitInconclusive && tt.set != "" {
				t.Logf("inconclusive (exit 3), running once more:\n%s", notPassed(suite))
				code, suite = gateRun(t, tt.bin, tt.args...)
			}
			if !slices.Contains(tt.codes, code) {
				t.Fatalf("exit %d, want one of %v; rows not passed:\n%s", code, tt.codes, notPassed(suite))
			}
			t.Logf("exit %d; rows not passed:\n%s", code, notPassed(suite))
		})
	}
}

// gateRun runs bin's labrun all (or what args name) at its defaults, as CI's gate does, and
// returns its exit code and suite.
func gateRun(t *testing.T, bin string, args ...string) (int, results.Suite) {
	t.Helper()
	if len(args) == 0 {
		args = []string{"all"}
	}
	cmd := exec.Command(bin, append(args, "--quiet", "--format", "json")...)
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %s %s: %v", bin, args[0], err)
	}
	var suite results.Suite
	err = json.Unmarshal(out, &suite)
	if args[0] != "all" {
		var run results.Run
		err = json.Unmarshal(out, &run)
		suite.Experiments = []results.Run{run}
	}
	if err != nil && code != exitFail {
		t.Fatalf("labrun %s --format json, exit %d: %v\n%s", args[0], code, err, out)
	}
	return code, suite
}

// notPassed lists the rows of suite that did not pass, one a line, with their verdict.
func notPassed(suite results.Suite) string {
	var b strings.Builder
	for _, run := range suite.Experiments {
		for _, r := range run.Rows {
			if !r.Pass && r.Skipped == "" {
				b.WriteString(run.Experiment + ": " + r.Name + ": " + r.Reason + " " + r.Inconclusive + "\n")
			}
		}
	}
	return b.String()
}
