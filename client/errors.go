package client

import (
	"errors"
	"fmt"
	"time"
)

// Outcome is how an attempt or a call ended. The words are the ones labrun prints.
type Outcome string

// The outcomes.
const (
	OK             Outcome = "ok"
	LeaseTimeout   Outcome = "lease-timeout"
	ConnectTimeout Outcome = "connect-timeout"
	ReadTimeout    Outcome = "read-timeout"
	Deadline       Outcome = "deadline"
	Failed         Outcome = "error"
)

// Phase names a part of an attempt.
type Phase string

// The phases of an attempt, in order.
const (
	PhaseLease   Phase = "lease"
	PhaseConnect Phase = "connect"
	PhaseWait    Phase = "wait"
	PhaseBody    Phase = "body"
	// PhaseBackoff is the pause between attempts; only a deadline ends a call there.
	PhaseBackoff Phase = "backoff"
)

// Sentinel errors for errors.Is: every *Error matches the one of its outcome.
var (
	ErrLeaseTimeout   = errors.New("lease timeout")
	ErrConnectTimeout = errors.New("connect timeout")
	ErrReadTimeout    = errors.New("read timeout")
	ErrDeadline       = errors.New("deadline exceeded")
)

// Error is a failed call: which limit ended it (or Failed for any other error), in which
// phase of which attempt, and when.
type Error struct {
	Outcome Outcome
	Phase   Phase
	// Attempt is the 1-based attempt that failed.
	Attempt int
	// Elapsed is the time from the start of the call to the failure.
	Elapsed time.Duration
	// Err is the underlying error.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s in %s of attempt %d after %v: %v", e.Outcome, e.Phase, e.Attempt,
		e.Elapsed.Round(time.Millisecond), e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel error of e's outcome.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrLeaseTimeout:
		return e.Outcome == LeaseTimeout
	case ErrConnectTimeout:
		return e.Outcome == ConnectTimeout
	case ErrReadTimeout:
		return e.Outcome == ReadTimeout
	case ErrDeadline:
		return e.Outcome == Deadline
	}
	return false
}

// Timeout reports whether a client limit ended the call, as net.Error does.
func (e *Error) Timeout() bool { return e.Outcome != Failed && e.Outcome != OK }
