//go:build linux

package probe

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/netns"
)

// proberEnv makes the test binary a prober (for TestProbeKilledLeavesNothing): it probes the
// command of its arguments on the scenario named by the variable, and waits.
const proberEnv = "LABRUN_PROBE_TEST_PROBER"

// runProber is the prober's main.
func runProber() int {
	p := New(Command{Args: os.Args[1:]})
	p.Only = os.Getenv(proberEnv)
	if _, err := p.Run(context.Background(), experiments.Options{Tolerance: 50 * time.Millisecond}); err != nil {
		return 1
	}
	return 0
}

// needNamespaces skips the test, with the reason, where the command's namespaces cannot be
// had; CI has them, and fails instead.
func needNamespaces(t *testing.T) {
	t.Helper()
	netns.Require(t)
}

// escaper is a command that leaves a process behind, which writes its pid to pidFile and
// sleeps: "setsid" keeps the command's stdout and stderr open in a session of its own,
// "setsid-closed" closes them, "double" is double-forked. With then "exit" the command exits
// once the pid is written; with "hang" it sleeps too.
func escaper(how, then, pidFile string) Command {
	inner := `sh -c 'echo $$ > ` + pidFile + `; exec sleep 100'`
	script := map[string]string{
		"setsid":        `setsid ` + inner + ` &`,
		"setsid-closed": `setsid ` + inner + ` </dev/null >/dev/null 2>&1 &`,
		"double":        `( ` + inner + ` </dev/null >/dev/null 2>&1 & ) ;`,
	}[how]
	script += ` while [ ! -s ` + pidFile + ` ]; do sleep 0.01; done; `
	if then == "hang" {
		script += `exec sleep 100`
	} else {
		script += `exit 0`
	}
	return Command{Args: []string{"sh", "-c", script}}
}

// needSetsid skips the test where setsid(1) is missing; CI has it.
func needSetsid(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("setsid is missing in CI")
		}
		t.Skip("setsid is missing")
	}
}

// waitPid reads the pid in pidFile once it is there (up to 10 s), and kills it at the test's
// end in case the probe did not.
func waitPid(t *testing.T, pidFile string) int {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			return pid
		}
	}
	t.Fatal("the command wrote no pid")
	return 0
}

// probeWithin runs p and fails the test when it has not returned within limit, without
// waiting for it: the bound is what is tested.
func probeWithin(t *testing.T, ctx context.Context, p *Probe, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx, experiments.Options{Tolerance: 50 * time.Millisecond})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("the probe still runs after %v", limit)
		return nil
	}
}

// TestEscapedChildrenDoNotOutliveProbe: a command that leaves a child in a session of its
// own, holding its output or not, or double-forked, has its run end when it exits, and the
// child is gone when the probe returns; in the lookup scenarios too, inside their namespaces.
func TestEscapedChildrenDoNotOutliveProbe(t *testing.T) {
	needSetsid(t)
	for _, sc := range []string{"instant", "nxdomain"} {
		for _, how := range []string{"setsid", "setsid-closed", "double"} {
			t.Run(sc+"/"+how, func(t *testing.T) {
				if sc == "nxdomain" {
					needNamespaces(t)
				}
				pidFile := filepath.Join(t.TempDir(), "pid")
				p := New(escaper(how, "exit", pidFile))
				p.Only = sc
				if err := probeWithin(t, context.Background(), p, 20*time.Second); err != nil {
					t.Fatal(err)
				}
				if pid := waitPid(t, pidFile); !goneWithin(pid, 0) {
					t.Errorf("process %d outlived the probe", pid)
				}
			})
		}
	}
}

// TestCancelLeavesNothing: a probe cancelled (labrun's SIGINT, SIGTERM) while the command
// runs returns at once, and neither the command nor what it left is there afterwards, in
// the lookup scenario's namespaces too.
func TestCancelLeavesNothing(t *testing.T) {
	needSetsid(t)
	for _, sc := range []string{"silent", "nxdomain", "tls-mixed"} {
		t.Run(sc, func(t *testing.T) {
			if sc != "silent" {
				needNamespaces(t)
			}
			pidFile := filepath.Join(t.TempDir(), "pid")
			p := New(escaper("setsid", "hang", pidFile))
			p.Only = sc
			ctx, cancel := context.WithCancel(context.Background())
			pids := make(chan int, 1)
			go func() { pids <- waitPid(t, pidFile); cancel() }()
			err := probeWithin(t, ctx, p, 15*time.Second)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			if pid := <-pids; !goneWithin(pid, 2*time.Second) {
				t.Errorf("process %d outlived the cancelled probe", pid)
			}
		})
	}
}

// TestProbeKilledLeavesNothing: when labrun itself is killed with SIGKILL (an OOM kill, a
// CI's hard timeout), the command and what it left go too, in the lookup scenarios'
// namespaces too.
func TestProbeKilledLeavesNothing(t *testing.T) {
	needSetsid(t)
	for _, sc := range []string{"silent", "slow-lookup"} {
		t.Run(sc, func(t *testing.T) {
			if sc != "silent" {
				needNamespaces(t)
			}
			pidFile := filepath.Join(t.TempDir(), "pid")
			prober := exec.Command(os.Args[0], escaper("setsid", "hang", pidFile).Args...)
			prober.Env = append(os.Environ(), proberEnv+"="+sc)
			if err := prober.Start(); err != nil {
				t.Fatal(err)
			}
			pid := waitPid(t, pidFile)
			_ = prober.Process.Kill()
			_ = prober.Wait()
			if !goneWithin(pid, 3*time.Second) {
				t.Errorf("process %d outlived labrun's SIGKILL", pid)
			}
		})
	}
}

// goneWithin waits up to wait for pid to be gone, or dead and not reaped yet.
func goneWithin(pid int, wait time.Duration) bool {
	for end := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) || zombie(pid) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// TestCapBoundsEscapedRun: a command that hangs while a child it left in a session of its
// own holds its output ends at the cap, and the probe soon after: the caps bound a probe
// whatever the command does.
func TestCapBoundsEscapedRun(t *testing.T) {
	needSetsid(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := New(escaper("setsid", "hang", pidFile))
	p.Only = "instant"
	p.caps[0] = 3 * time.Second
	start := time.Now()
	if err := probeWithin(t, context.Background(), p, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > p.caps[0]+5*time.Second {
		t.Errorf("took %v, want the %v cap and at most 5 s more", took, p.caps[0])
	}
	if pid := waitPid(t, pidFile); !goneWithin(pid, 0) {
		t.Errorf("process %d outlived the probe", pid)
	}
}
