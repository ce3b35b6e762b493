package probe

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/results"
)

// debianPython is the Python that sees Debian's python3-grpcio.
const debianPython = "/usr/bin/python3"

// withEnv is c with env added.
func withEnv(c Command, env ...string) Command {
	c.Env = append(c.Env, env...)
	return c
}

// missing skips a test whose runtime or library this machine lacks, with the reason; in CI
// (CI set), where .ci/run installs them, it fails the test.
func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: .ci/run installs it", why)
	}
	t.Skip(why)
}

// grpcioProbe returns the shipped grpcio probe's command with args, skipping the test when
// this machine has no grpcio.
func grpcioProbe(t *testing.T) Command {
	t.Helper()
	if exec.Command(debianPython, "-c", "import grpc").Run() != nil {
		missing(t, "no grpcio for "+debianPython+" (Debian's python3-grpcio)")
	}
	return Command{Args: []string{debianPython, "../examples/probes/python/grpcio_probe.py"}}
}

// TestGRPCProbeGrpcio holds the shipped grpcio probe to the model under grpcio's rules
// (rules.LookupGRPC("grpcio"): its grpc-timeout's rounding, a refused stream as an attempt),
// every row, configured with a deadline, a retry policy and the deadline passed down a chain
// by hand (PROBE_PROPAGATE). make probes (TestShippedGRPCProbes) holds it at its defaults and
// without PROBE_PROPAGATE, and the grpc-go probe both ways.
func TestGRPCProbeGrpcio(t *testing.T) {
	testenv.Slow(t, "a shipped gRPC probe run through its scenarios")
	holdGRPC(t, []grpcCase{
		{"configured", &GRPC{Command: withEnv(grpcioProbe(t), "PROBE_DEADLINE=1.5", "PROBE_MAX_ATTEMPTS=3", "PROBE_PROPAGATE=1"), Deadline: 1500 * time.Millisecond, MaxAttempts: 3, Expect: "grpcio"}},
	})
}

// TestGRPCProbeGrpcJs holds the shipped grpc-js probe (examples/probes/node/grpc, after npm
// ci there from its committed lockfile) to the model, configured with its chain's hop given
// the parent call (PROBE_PROPAGATE); make probes holds it at its defaults and without.
func TestGRPCProbeGrpcJs(t *testing.T) {
	testenv.Slow(t, "a shipped gRPC probe run through its scenarios")
	const dir = "../examples/probes/node/grpc"
	if _, err := exec.LookPath("node"); err != nil {
		missing(t, "no node here")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@grpc", "grpc-js")); err != nil {
		missing(t, "no @grpc/grpc-js: run npm ci in "+dir)
	}
	script := filepath.Join(dir, "grpc_probe.mjs")
	holdGRPC(t, []grpcCase{
		{"configured", &GRPC{Command: Command{Args: []string{"node", script}, Env: []string{"PROBE_DEADLINE=1.5", "PROBE_MAX_ATTEMPTS=3", "PROBE_PROPAGATE=1"}}, Deadline: 1500 * time.Millisecond, MaxAttempts: 3}},
	})
}

// grpcCase is a shipped gRPC probe under one configuration.
type grpcCase struct {
	name string
	g    *GRPC
}

// holdGRPC runs each case's probe and requires every row to agree with the model.
func holdGRPC(t *testing.T, cases []grpcCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run, err := tc.g.Run(context.Background(), experiments.Options{Tolerance: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range run.Rows {
				if !r.Pass {
					t.Errorf("%s: %s (server: %s)", r.Name, r.Reason, r.Server)
				}
			}
		})
	}
}

func TestGRPCCheck(t *testing.T) {
	g := NewGRPC(Command{Args: []string{"true"}})
	g.Only = "grpc-hang,silent"
	if err := g.Check(); err == nil || !strings.Contains(err.Error(), `unknown gRPC scenario "silent"`) {
		t.Errorf("got %v, want the unknown scenario named", err)
	}
}

// TestGRPCChainRows: the chain's rows hold a hop to passing on what is left of A's deadline.
// A hop that passes nothing (C got no grpc-timeout, worked its 2 s, charged) fails both rows
// under a deadline, and agrees when the command has none.
func TestGRPCChainRows(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	var sc grpcScenario
	for _, s := range grpcScenarios() {
		if s.Name == "grpc-chain" {
			sc = s
		}
	}
	passed := grpcRun{sc: sc, exec: Exec{ExitCode: 1}, st: grpcsrv.Stats{
		Calls: []grpcsrv.Call{{ID: "grpc-chain", Timeout: "1394m", TimeoutMs: f(1394), CtxErr: "Canceled", Code: "Canceled"}}}}
	dropped := grpcRun{sc: sc, exec: Exec{ExitCode: 1}, st: grpcsrv.Stats{
		Calls: []grpcsrv.Call{{ID: "grpc-chain", Code: "OK"}}, Executions: map[string]int{"grpc-chain": 1}}}
	noDeadline := grpcRun{sc: sc, exec: Exec{ExitCode: 0}, st: dropped.st}
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		x        grpcRun
		want     []bool // each row's verdict
	}{
		{"passed on", 1500 * time.Millisecond, passed, []bool{true, true}},
		{"passed nothing", 1500 * time.Millisecond, dropped, []bool{false, false}},
		{"no deadline to pass", 0, noDeadline, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &GRPC{Deadline: tc.deadline}
			run := results.Run{Rows: g.chainRows(tc.x)}
			run.Finish(100 * time.Millisecond)
			var got []bool
			for _, r := range run.Rows {
				got = append(got, r.Pass)
			}
			if !slices.Equal(got, tc.want) {
				for _, r := range run.Rows {
					t.Logf("%s: %s", r.Name, r.Reason)
				}
				t.Errorf("got verdicts %v, want %v", got, tc.want)
			}
		})
	}
}
