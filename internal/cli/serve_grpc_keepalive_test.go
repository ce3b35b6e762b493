package cli

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
)

// TestServeGRPCKeepaliveEnforced: grpcio pinging every second against --keepalive-min-time 5s
// gets GOAWAY ENHANCE_YOUR_CALM "too_many_pings" after its fourth ping (the first is free, the
// next three are grpc-go's three strikes), about 4 s in; the call ends UNAVAILABLE, and /stats
// counts the GOAWAY.
func TestServeGRPCKeepaliveEnforced(t *testing.T) {
	if testing.Short() {
		t.Skip("5 s of pings")
	}
	const python = "/usr/bin/python3" // Debian's, which sees python3-grpcio
	if exec.Command(python, "-c", "import grpc").Run() != nil {
		t.Skip("no grpcio for " + python)
	}
	src, err := os.ReadFile(serveDocPath)
	if err != nil {
		t.Fatal(err)
	}
	var script string
	for _, b := range fencedBlocks(string(src)) {
		if b.info == "python grpc keepalive" {
			script = b.body
		}
	}
	if script == "" {
		t.Fatalf("%s has no python grpc keepalive block", serveDocPath)
	}
	s := startServe(t, "--grpc", "--keepalive-min-time", "5s")
	cmd := exec.Command(python, "-c", strings.ReplaceAll(script, "127.0.0.1:PORT", s.url))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	// C-core logs what it received, and doubles its keepalive time.
	if !strings.Contains(stderr.String(), `Received a GOAWAY with error code ENHANCE_YOUR_CALM and debug data equal to "too_many_pings"`) {
		t.Errorf("grpcio's log lacks the GOAWAY too_many_pings:\n%s", stderr.String())
	}
	// The GOAWAY comes after the fourth ping, at 4 s; the call ends when the connection closes.
	if strings.TrimSpace(string(out)) != "StatusCode.UNAVAILABLE" || took < 4*time.Second || took > 7*time.Second {
		t.Errorf("got %q after %v, want StatusCode.UNAVAILABLE after 4 to 7 s", out, took)
	}
	var st struct {
		Pings        int `json:"pings"`
		TooManyPings int `json:"goaways_too_many_pings"`
	}
	getJSON(t, "http://"+s.url+"/stats", &st)
	if st.TooManyPings != 1 || st.Pings < 4 {
		t.Errorf("got /stats %+v, want 1 GOAWAY too_many_pings after at least 4 pings", st)
	}
}

func TestServeGRPCKeepaliveUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--keepalive-min-time", "5s"}, "labrun: --keepalive-min-time needs --grpc"},
		{[]string{"--keepalive-permit-without-stream", "--storm"}, "labrun: --keepalive-permit-without-stream needs --grpc"},
		{[]string{"--grpc", "--keepalive-min-time", "0s"}, "labrun: --keepalive-min-time must be positive, got 0s"},
	}
	for _, tt := range tests {
		got := runArgs(t, context.Background(), experiments.All(), false, append([]string{"serve"}, tt.args...)...)
		if got.code != exitUsage || strings.TrimSpace(got.stderr) != tt.want || got.stdout != "" {
			t.Errorf("serve %v: got exit %d, stderr %q; want exit 2 and %q", tt.args, got.code, got.stderr, tt.want)
		}
	}
}
