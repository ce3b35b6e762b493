package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/results"
)

// TestProbeBadInput: a missing or unusable command, an unknown scenario and a limit without
// --expect are bad input: exit 2, one line on stderr, nothing on stdout.
func TestProbeBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"probe"}, "labrun: probe: no command: give it after --"},
		{[]string{"probe", "--", "labrun-no-such-command", "{url}"}, `labrun: probe: command "labrun-no-such-command": executable file not found in $PATH`},
		{[]string{"probe", "--", "/etc/passwd"}, `labrun: probe: command "/etc/passwd": permission denied`},
		{[]string{"probe", "--only", "nope", "--", "true"}, `labrun: --only: unknown scenario "nope"`},
		{[]string{"probe", "--only", strings.Repeat("x", 100<<10), "--", "true"}, `labrun: --only: unknown scenario "` + strings.Repeat("x", 64) + `… (102400 bytes)" (want `},
		{[]string{"probe", "--expect", "", "--", "true"}, "labrun: --expect needs a client (want urlconnection, jdk"},
		{[]string{"probe", "--expect", " ", "--", "true"}, "labrun: --expect needs a client (want urlconnection, jdk"},
		{[]string{"probe", "--read-timeout", "1s", "--", "true"}, "labrun: --read-timeout needs --expect"},
		{[]string{"probe", "--expect", "nope", "--", "true"}, `labrun: --expect: unknown value "nope" (want urlconnection, jdk`},
		{[]string{"probe", "--silent-cap", "1s", "--", "true"}, "labrun: --silent-cap must be at least 3s"},
		{[]string{"probe", "--cap-scale", "0", "--", "true"}, "labrun: --cap-scale must be at least 1, got 0"},
		{[]string{"probe", "--cap-scale", "1.5", "--", "true"}, `labrun: --cap-scale: invalid value "1.5" (want a whole number)`},
		{[]string{"probe", "--cap-scale", "21", "--", "true"}, "labrun: --cap-scale must be at most 20, got 21"},
		{[]string{"probe", "--cap-scale", "20", "--silent-cap", "1m", "--", "true"}, "labrun: --cap-scale 20 makes the silent cap 20m0s, longer than 10m0s"},
		{[]string{"probe", "--grpc", "--cap-scale", "2", "--", "true"}, "labrun: --cap-scale does not apply to --grpc"},
		{[]string{"probe", "--expect", "go", "--hc5-retries", "none", "--", "true"}, "labrun: --expect: --hc5-retries is HttpClient 5's"},
	}
	for _, tt := range tests {
		got := runArgs(t, context.Background(), nil, false, tt.args...)
		if got.code != exitUsage || got.stdout != "" || !strings.HasPrefix(got.stderr, tt.want) || strings.Count(got.stderr, "\n") != 1 || len(got.stderr) > 1000 {
			t.Errorf("%q: got exit %d, stdout %q, stderr %q; want exit 2 and one line starting %q", tt.args, got.code, got.stdout, got.stderr, tt.want)
		}
	}
}

// TestProbeIgnoresURL: a command that never calls the URL is reported, not an error; with
// --expect the gate fails (exit 1) on it.
func TestProbeIgnoresURL(t *testing.T) {
	got := runArgs(t, context.Background(), nil, false, "probe", "--only", "instant", "--format", "json", "--", "true")
	if got.code != exitPass {
		t.Fatalf("got exit %d (%s), want 0: nothing was expected", got.code, got.stderr)
	}
	var run results.Run
	if err := json.Unmarshal([]byte(got.stdout), &run); err != nil {
		t.Fatal(err)
	}
	if len(run.Rows) != 1 || !strings.HasPrefix(run.Rows[0].Server, "no request arrived") {
		t.Errorf("got rows %+v, want one saying no request arrived", run.Rows)
	}
	got = runArgs(t, context.Background(), nil, false, "probe", "--only", "instant", "--expect", "go", "--", "true")
	if got.code != exitFail {
		t.Errorf("with --expect: got exit %d, want 1", got.code)
	}
}

// TestProbeInterrupted: Ctrl-C during a probe kills the command and exits 130 with nothing
// on stdout, also while a child the command left in a session of its own holds its output.
func TestProbeInterrupted(t *testing.T) {
	for _, args := range [][]string{
		{"sleep", "30"},
		{"sh", "-c", "setsid sleep 30 & exec sleep 30"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		start := time.Now()
		got := runArgs(t, ctx, []experiments.Experiment{}, false, append([]string{"probe", "--only", "silent", "--"}, args...)...)
		cancel()
		if got.code != exitInterrupted || got.stdout != "" || got.stderr != "labrun: interrupted\n" {
			t.Errorf("%q: got %+v, want exit 130, no stdout, \"labrun: interrupted\"", args, got)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%q: took %v, want the command killed at once", args, took)
		}
	}
}

func TestProbeGRPCRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--grpc", "--expect", "go", "--", "true"}, `--expect: unknown value "go" (want grpc-go, grpcio)`},
		{[]string{"--grpc", "--read-timeout", "1s", "--", "true"}, "--read-timeout does not apply to --grpc"},
		{[]string{"--grpc", "--silent-cap", "5s", "--", "true"}, "--silent-cap does not apply to --grpc"},
		{[]string{"--grpc", "--only", "silent", "--", "true"}, `unknown gRPC scenario "silent"`},
		{[]string{"--grpc", "--", "no-such-command-here"}, `command "no-such-command-here"`},
	} {
		got := runArgs(t, context.Background(), experiments.All(), false, append([]string{"probe"}, tc.args...)...)
		if got.code != 2 || !strings.Contains(got.stderr, tc.want) {
			t.Errorf("%v: got exit %d, stderr %q; want 2 and %q", tc.args, got.code, got.stderr, tc.want)
		}
	}
}
