// Package reap runs a command so that nothing it starts outlives it: not its process group,
// not a child that called setsid or was double-forked, and not when the caller is killed.
//
// A process group is not enough for that: a child that calls setsid(2) leaves the group, and
// one whose parent exits is reparented to init, out of anyone's reach. So Run starts the
// command through a helper: this binary again (/proc/self/exe), which makes itself a child
// subreaper (prctl PR_SET_CHILD_SUBREAPER, Linux 3.4): every orphan of the command's tree is
// reparented to the helper instead of init. When the command has exited, when its limit has
// passed, when the caller asks, and when the caller dies (the helper reads a pipe from it and
// sees its end), the helper kills the command and every process reparented to it, reaps
// them, and only then reports the command's end. The helper runs in a process group of its
// own and ignores the terminal's signals, so that what kills the caller does not kill it
// before its work is done.
//
// Considered and rejected: a subreaper on the calling process itself (its orphans from two
// commands run at once cannot be told apart, and nothing is left to kill them when it is
// killed), and a cgroup (unprivileged cgroup delegation is not there on most machines).
//
// A binary that calls Run must dispatch the helper first thing in main, before parsing flags,
// with MaybeHelper (internal/netns.MaybeChild does it for every binary of labrun's).
package reap

import (
	"os"
	"strings"
	"time"
)

// helperEnv marks the helper process.
const helperEnv = "LABRUN_REAP_HELPER"

// Cmd is a command to run: Args[0] is looked up in the PATH of Env.
type Cmd struct {
	Args []string
	Env  []string
	// Stdout and Stderr are the command's; nil is /dev/null. Its stdin is /dev/null.
	Stdout, Stderr *os.File
	// Limit is how long the command may run, the helper's start included, before its whole
	// tree is killed; 0 is no limit.
	Limit time.Duration
}

// Result is what a run did.
type Result struct {
	// Started is when the command was started, Ended when it and everything it started were
	// gone.
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

// withoutMark is env without the helper's mark.
func withoutMark(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, helperEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}
