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

// Error is a failed call: the limit that ended it (or Failed), phase, attempt and time.
type Error struct {
	Outcome vocab.Outcome
	Phase   vocab.Phase
	// Attempt is 1-based.
	Attempt int
	// Elapsed is from the start of the call.
	Elapsed time.Duration
	Err     error
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
