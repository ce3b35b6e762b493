// Package reap runs a command so that nothing it starts outlives it: not its process group, not
// a child that called setsid or was double-forked, not when the caller is killed.
//
// A process group is not enough (setsid leaves it; an orphan goes to init), so Run starts the
// command through a helper, this binary again, made a child subreaper (PR_SET_CHILD_SUBREAPER):
// every orphan of the command's tree comes to it. When the command exits, its limit passes, or
// the caller asks or dies (a pipe's end), the helper kills and reaps the whole tree, then reports.
// It has a process group of its own and ignores the terminal's signals.
//
// Rejected: a subreaper on the caller itself (two commands' orphans cannot be told apart, and
// none is killed when the caller is), and a cgroup (unprivileged delegation is rare).
//
// A binary that calls Run dispatches MaybeHelper first thing in main (netns.MaybeChild does it).
package reap

import (
	"os"
	"strings"
	"time"
)

const helperEnv = "LABRUN_REAP_HELPER"

// Cmd is a command to run: Args[0] is looked up in the PATH of Env.
type Cmd struct {
	Args []string
	Env  []string
	// Stdout and Stderr are the command's; nil is /dev/null, as is its stdin.
	Stdout, Stderr *os.File
	// Limit is how long the command may run, the helper's start included (0: no limit).
	Limit time.Duration
}

// Result is what a run did.
type Result struct {
	// Started is when the command started, Ended when its whole tree was gone.
	Started, Ended time.Time
	// ExitCode is the command's exit code; -1 when a signal ended it.
	ExitCode int
	// Killed says the command outlived its limit and was killed; KilledAt is when.
	Killed   bool
	KilledAt time.Time
}

// StartError is Run's error for a command that could not be started.
type StartError struct {
	Program string
	Err     error
}

func (e *StartError) Error() string { return e.Program + ": " + e.Err.Error() }

func (e *StartError) Unwrap() error { return e.Err }

func withoutMark(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, helperEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}
