package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperEnv marks the child process of TestServeHelperProcess.
const helperEnv = "LABRUN_SERVE_HELPER_PROCESS"

// helperDirEnv, when set, is the directory the child process works in (TestMain moved it to
// the module root), for a relative path such as --url-file's to mean what its caller meant.
const helperDirEnv = "LABRUN_SERVE_HELPER_DIR"

// helperNofileEnv, when set, is the file descriptors the child process may have open
// (RLIMIT_NOFILE, set by the child itself: Go raises the soft limit at start).
const helperNofileEnv = "LABRUN_SERVE_HELPER_NOFILE"

// TestServeHelperProcess is not a test: it is labrun itself, run as a child process by the
// tests that need real signals or a process of their own. Its arguments follow "--".
func TestServeHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("runs only as a child process of the serve tests")
	}
	if dir := os.Getenv(helperDirEnv); dir != "" {
		if err := os.Chdir(dir); err != nil {
			t.Fatal(err)
		}
	}
	if v := os.Getenv(helperNofileEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := limitFiles(uint64(n)); err != nil {
			t.Fatal(err)
		}
	}
	i := slices.Index(os.Args, "--")
	os.Exit(run(append([]string{"labrun"}, os.Args[i+1:]...), os.Stdout, os.Stderr))
}

// helperCommand returns the command that runs labrun with args in a child process.
func helperCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestServeHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	return cmd
}

// serveProcess is labrun serve running as a child process.
type serveProcess struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	done   chan struct{} // closed when the process has exited
	code   int
}

// startServeProcess starts labrun serve with args in a child process and reads its URL. The
// test's end kills it if it still runs.
func startServeProcess(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	return startServeProcessEnv(t, nil, args...)
}

// startServeProcessEnv is startServeProcess with env added to the child's environment.
func startServeProcessEnv(t *testing.T, env []string, args ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{cmd: helperCommand(append([]string{"serve"}, args...)...), stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		_ = err // the exit code says it
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- strings.TrimSpace(line)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case p.url = <-lines:
	case <-time.After(10 * time.Second):
		t.Fatalf("no URL from labrun serve within 10 s; stderr %q", p.stderr.String())
	}
	if p.url == "" {
		t.Fatalf("labrun serve printed no URL; stderr %q", p.stderr.String())
	}
	return p
}

// wait waits (at most 10 s) for the process to exit and returns its exit code.
func (p *serveProcess) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(10 * time.Second):
		t.Fatalf("labrun serve still runs 10 s later; stderr %q", p.stderr.String())
		return -1
	}
}

// procCPU returns the CPU time (user and system) that process pid has used, from
// /proc/PID/stat (in clock ticks of 1/100 s, USER_HZ on Linux).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	utime, stime := procStat(t, pid)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procStat reads utime and stime, in clock ticks, from /proc/PID/stat.
func procStat(t *testing.T, pid int) (utime, stime int64) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	// The command name, field 2, is in parentheses and may hold spaces: count from after it.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if _, err := fmt.Sscan(fields[11], &utime); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(fields[12], &stime); err != nil {
		t.Fatal(err)
	}
	return utime, stime
}

// procFDs counts the open file descriptors of process pid.
func procFDs(t *testing.T, pid int) int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Errorf("open fds of %d: %v", pid, err)
	}
	return len(entries)
}

// procStatus returns a field of /proc/PID/status, such as VmHWM (the peak resident set).
func procStatus(t *testing.T, pid int, field string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "?"
}
