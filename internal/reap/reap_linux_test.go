//go:build linux

package reap

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
)

// callerEnv makes the test binary a caller of Run (for TestCallerKilled): it runs the command
// of its arguments and waits.
const callerEnv = "LABRUN_REAP_TEST_CALLER"

func TestMain(m *testing.M) {
	if code, helper := MaybeHelper(); helper {
		os.Exit(code)
	}
	if os.Getenv(callerEnv) != "" {
		_, err := Run(context.Background(), Cmd{Args: os.Args[1:], Env: os.Environ()})
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// leaver is a shell command that leaves behind a process which writes its pid to pidFile and
// sleeps 100 s; how says how it leaves: "group" (a plain background child), "setsid" (a new
// session, stdio closed) or "double" (a double fork: its parent exits at once).
func leaver(how, pidFile string) []string {
	inner := `sh -c 'echo $$ > ` + pidFile + `; exec sleep 100'`
	var script string
	switch how {
	case "group":
		script = inner + ` &`
	case "setsid":
		script = `setsid ` + inner + ` </dev/null >/dev/null 2>&1 &`
	case "setsid-stdout": // the new session keeps the command's stdout and stderr open
		script = `setsid ` + inner + ` &`
	case "double":
		script = `( ` + inner + ` </dev/null >/dev/null 2>&1 & ) ;`
	}
	// The command waits for the pid file: the leaver has started when it exits.
	return []string{"sh", "-c", script + ` while [ ! -s ` + pidFile + ` ]; do sleep 0.01; done; exit 0`}
}

// leftPid reads the pid a leaver wrote, and kills it at the test's end in case Run did not.
func leftPid(t *testing.T, pidFile string) int {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the command wrote no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// gone waits up to wait for pid to be gone (or a zombie its new parent has not reaped).
func gone(pid int, wait time.Duration) bool {
	for end := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			s := string(b)
			if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == "Z" {
				return true
			}
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// TestNothingOutlivesTheCommand: what a command leaves behind, in its group, in a session of
// its own or double-forked, is gone when Run returns, and Run returns when the command exits.
func TestNothingOutlivesTheCommand(t *testing.T) {
	for _, how := range []string{"group", "setsid", "setsid-stdout", "double"} {
		t.Run(how, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			out, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			start := time.Now()
			res, err := Run(context.Background(), Cmd{Args: leaver(how, pidFile), Env: os.Environ(), Stdout: out, Stderr: out, Limit: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			pid := leftPid(t, pidFile)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v, want the command's own few tens of milliseconds", took)
			}
			if res.Killed || res.ExitCode != 0 {
				t.Errorf("got killed %v exit %d, want exit 0 by itself", res.Killed, res.ExitCode)
			}
			if !gone(pid, 0) {
				t.Errorf("process %d, left %s, outlived Run", pid, how)
			}
		})
	}
}

// TestLimitKillsTree: at the limit the command and what it left are killed, exit code -1.
func TestLimitKillsTree(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	args := leaver("setsid", pidFile)
	args[2] = strings.Replace(args[2], "exit 0", "sleep 100", 1) // the command itself hangs
	start := time.Now()
	res, err := Run(context.Background(), Cmd{Args: args, Env: os.Environ(), Limit: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	pid := leftPid(t, pidFile)
	if !res.Killed || res.ExitCode != -1 {
		t.Errorf("got killed %v exit %d, want killed, -1", res.Killed, res.ExitCode)
	}
	if took > 4*time.Second {
		t.Errorf("took %v, want the 500ms limit and little more", took)
	}
	if !gone(pid, 0) {
		t.Errorf("process %d outlived the limit", pid)
	}
}

// TestCancelKillsTree: a cancelled ctx kills the tree at once and returns ctx's error.
func TestCancelKillsTree(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	args := leaver("double", pidFile)
	args[2] = strings.Replace(args[2], "exit 0", "sleep 100", 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for i := 0; i < 500; i++ {
			if b, _ := os.ReadFile(pidFile); len(b) > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err := Run(ctx, Cmd{Args: args, Env: os.Environ()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if pid := leftPid(t, pidFile); !gone(pid, 0) {
		t.Errorf("process %d outlived the cancel", pid)
	}
}

// TestCallerKilled: when the caller of Run is killed with SIGKILL, which it cannot catch,
// the helper kills the command and what it left.
func TestCallerKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	args := leaver("setsid", pidFile)
	args[2] = strings.Replace(args[2], "exit 0", "sleep 100", 1)
	caller := exec.Command(os.Args[0], args...)
	caller.Env = append(os.Environ(), callerEnv+"=1")
	if err := caller.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if b, _ := os.ReadFile(pidFile); len(b) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	pid := leftPid(t, pidFile)
	_ = caller.Process.Kill()
	_ = caller.Wait()
	if !gone(pid, 3*time.Second) {
		t.Errorf("process %d outlived its caller's SIGKILL", pid)
	}
}

// TestExitCodeAndStartError: the command's exit code comes back as it is; a program that
// does not exist is a StartError.
func TestExitCodeAndStartError(t *testing.T) {
	res, err := Run(context.Background(), Cmd{Args: []string{"sh", "-c", "exit 3"}, Env: os.Environ()})
	if err != nil || res.ExitCode != 3 {
		t.Errorf("got %d, %v; want exit 3", res.ExitCode, err)
	}
	res, err = Run(context.Background(), Cmd{Args: []string{"sh", "-c", "kill -9 $$"}, Env: os.Environ()})
	if err != nil || res.ExitCode != -1 {
		t.Errorf("got %d, %v; want -1 for a signal", res.ExitCode, err)
	}
	_, err = Run(context.Background(), Cmd{Args: []string{"no-such-program-labrun"}, Env: os.Environ()})
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, exec.ErrNotFound) && !strings.Contains(err.Error(), "not found") {
		t.Errorf("got %v, want a StartError saying not found", err)
	}
}
