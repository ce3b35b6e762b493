// Package reap runs a command so that nothing it starts outlives it: not its process group, not
// a child that called setsid or double-forked, not when the caller is killed.
//
// Run starts it through a helper, this binary again, made a child subreaper so every orphan of
// the tree comes to it. When the command exits, its limit passes, or the caller asks or dies,
// the helper kills and reaps the whole tree. The helper has its own process group and ignores
// the terminal's signals. A binary calling Run dispatches MaybeHelper first thing in main.
package reap

import (
	"os"
	"strings"
	"time"
)

const helperEnv = "LABRUN_REAP_HELPER"

// Cmd is a command: Args[0] is looked up in Env's PATH.
type Cmd struct {
	Args []string
	Env  []string
	// Stdout and Stderr: nil is /dev/null, as is stdin.
	Stdout, Stderr *os.File
	// Limit bounds the run, the helper's start included (0: none).
	Limit time.Duration
}

// Result is what a run did.
type Result struct {
	// Ended: the whole tree is gone.
	Started, Ended time.Time
	// ExitCode is -1 when a signal ended the command.
	ExitCode int
	// Killed: it outlived its limit, at KilledAt.
	Killed   bool
	KilledAt time.Time
}

// StartError is Run's error for a command that could not start.
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
