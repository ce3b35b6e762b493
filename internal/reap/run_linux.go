//go:build linux

package reap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startWait bounds the helper's start, up to "started".
const startWait = 10 * time.Second

// killWait bounds the helper's killing; then it is killed itself.
const killWait = 3 * time.Second

// Run runs c until it exits, its limit passes or ctx is done, and returns when it and all it
// started are gone. A cancelled ctx kills them at once and returns ctx's error.
func Run(ctx context.Context, c Cmd) (Result, error) {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return Result{}, errors.New("reap: no command")
	}
	if os.Getenv(helperEnv) != "" {
		return Result{}, errors.New("reap: called inside a helper: the binary must call MaybeHelper before anything else")
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("reap: %w", err)
	}
	defer ctlW.Close()
	stR, stW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		return Result{}, fmt.Errorf("reap: %w", err)
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = append([]string{"labrun-reap"}, c.Args...)
	cmd.Env = append(withoutMark(c.Env), helperEnv+"=1")
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
	}
	cmd.ExtraFiles = []*os.File{ctlR, stW} // the helper's fds 3 and 4
	// Its own group: a terminal's ^C reaches the caller, which asks the helper.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	ctlR.Close()
	stW.Close()
	if err != nil {
		stR.Close()
		return Result{}, fmt.Errorf("reap: start helper: %w", err)
	}
	// The helper is the status pipe's only writer.
	lines := make(chan string, 4)
	go func() {
		defer close(lines)
		defer stR.Close()
		sc := bufio.NewScanner(stR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// The limit includes the helper's start.
	var limit <-chan time.Time
	if c.Limit > 0 {
		t := time.NewTimer(c.Limit)
		defer t.Stop()
		limit = t.C
	}
	var (
		res      Result
		final    string
		abandon  = time.After(startWait)
		done     = ctx.Done()
		askedOut bool
	)
	ask := func() {
		if !askedOut {
			askedOut = true
			_, _ = ctlW.Write([]byte{'k'})
			abandon = time.After(killWait)
		}
	}
	for lines != nil {
		select {
		case line, ok := <-lines:
			switch {
			case !ok:
				lines = nil
			case strings.HasPrefix(line, "started "):
				res.Started = time.Now()
				if !askedOut {
					abandon = nil
				}
			default:
				final = line
				res.Ended = time.Now()
			}
		case <-limit:
			limit = nil
			res.Killed, res.KilledAt = true, time.Now()
			ask()
		case <-done:
			done = nil
			ask()
		case <-abandon:
			abandon = nil
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if what, ok := strings.CutPrefix(final, "error "); ok {
		return Result{}, &StartError{Program: c.Args[0], Err: errors.New(what)}
	}
	code, err := strconv.Atoi(strings.TrimPrefix(final, "exit "))
	if !strings.HasPrefix(final, "exit ") || err != nil {
		return Result{}, fmt.Errorf("reap: helper ended without a result (%v)", waitErr)
	}
	res.ExitCode = code
	return res, nil
}
