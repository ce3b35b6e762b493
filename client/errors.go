package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/vocab"
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
	Outcome vocab.Outcome
	Phase   vocab.Phase
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
		return e.Outcome == vocab.LeaseTimeout
	case ErrConnectTimeout:
		return e.Outcome == vocab.ConnectTimeout
	case ErrReadTimeout:
		return e.Outcome == vocab.ReadTimeout
	case ErrDeadline:
		return e.Outcome == vocab.Deadline
	}
	return false
}

// Timeout reports whether a client limit ended the call, as net.Error does.
func (e *Error) Timeout() bool { return e.Outcome.Timeout() }
