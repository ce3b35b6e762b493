//go:build !linux

package reap

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// MaybeHelper reports helper = false: there is no helper on this system.
func MaybeHelper() (code int, helper bool) { return 0, false }

// Run runs c in its own process group, killed when c exits, its limit passes or ctx is done; a
// child leaving the group may outlive it.
func Run(ctx context.Context, c Cmd) (Result, error) {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return Result{}, errors.New("reap: no command")
	}
	cmd := exec.Command(c.Args[0], c.Args[1:]...)
	cmd.Env = c.Env
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	res := Result{Started: time.Now()}
	if err := cmd.Start(); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return Result{}, &StartError{Program: c.Args[0], Err: err}
	}
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var limit <-chan time.Time
	if c.Limit > 0 {
		t := time.NewTimer(c.Limit)
		defer t.Stop()
		limit = t.C
	}
	select {
	case <-exited:
	case <-limit:
		res.Killed, res.KilledAt = true, time.Now()
	case <-ctx.Done():
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	res.Ended = time.Now()
	res.ExitCode = cmd.ProcessState.ExitCode()
	return res, nil
}
