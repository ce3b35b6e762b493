//go:build linux

package reap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reapLimit bounds the killing of what the command left.
const reapLimit = 2 * time.Second

// MaybeHelper runs the helper if this process is one, returning its exit code and helper = true.
func MaybeHelper() (code int, helper bool) {
	if os.Getenv(helperEnv) == "" {
		return 0, false
	}
	return runHelper(os.Args[1:]), true
}

// runHelper starts args, waits for its end or a kill request (fd 3 or a signal), kills its tree,
// and reports on fd 4: "started PID", then "exit CODE" or "error TEXT".
func runHelper(args []string) int {
	ctl, status := os.NewFile(3, "reap-control"), os.NewFile(4, "reap-status")
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	report := func(format string, a ...any) { _, _ = fmt.Fprintf(status, format+"\n", a...) }
	if len(args) == 0 {
		report("error no command")
		return 2
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		report("error become a child subreaper: %v", err)
		return 1
	}
	// Handlers, not SIG_IGN: an ignored signal stays ignored in the command.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	path, err := exec.LookPath(args[0])
	if err != nil {
		if ee := (*exec.Error)(nil); errors.As(err, &ee) {
			err = ee.Err
		}
		report("error %v", err)
		return 1
	}
	pid, err := syscall.ForkExec(path, args, &syscall.ProcAttr{
		Env:   withoutMark(os.Environ()),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		report("error %v", err)
		return 1
	}
	report("started %d", pid)
	asked := make(chan struct{})
	go func() {
		_, _ = ctl.Read(make([]byte, 1))
		close(asked)
	}()
	exited := make(chan syscall.WaitStatus, 1)
	go func() {
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
				break
			}
		}
		exited <- ws
	}()
	var ws syscall.WaitStatus
	ended := false
	select {
	case ws = <-exited:
		ended = true
	case <-asked:
	case <-sigs:
	}
	if !ended {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		ws = <-exited
	}
	killAll(reapLimit)
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = -1
	}
	report("exit %d", code)
	return 0
}

// killAll kills and reaps every child and inherited orphan, until none is left or limit passes.
func killAll(limit time.Duration) {
	self, signal := procSelf()
	for end := time.Now().Add(limit); ; time.Sleep(time.Millisecond) {
		kids := childrenOf(self)
		for _, k := range kids {
			signal(k)
		}
		none := false
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.ECHILD {
				none = true
			}
			if wpid <= 0 {
				break
			}
		}
		if (none && len(kids) == 0) || time.Now().After(end) {
			return
		}
	}
}

// procSelf is this pid as /proc numbers it, and a SIGKILL for /proc's pids (through a pidfd when
// /proc is another pid namespace's).
func procSelf() (string, func(pid string)) {
	self, err := os.Readlink("/proc/self")
	if err == nil && self == strconv.Itoa(os.Getpid()) {
		return self, func(pid string) {
			if n, err := strconv.Atoi(pid); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
	}
	return self, func(pid string) {
		fd, err := unix.Open("/proc/"+pid, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

func childrenOf(ppid string) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		// comm may hold spaces and parentheses.
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == ppid {
			kids = append(kids, strings.Fields(s)[0])
		}
	}
	return kids
}
