package labtest

import (
	"context"
	"errors"
	"fmt"
	"github.com/labrun/labrun/results"
	"reflect"
	"time"
)

// ErrInvalid is matched by the Err of a row not run for a bad argument; its Outcome is
// results.Failed and its Expected empty.
var ErrInvalid = errors.New("labtest: invalid argument")

// MaxRetries is the largest Limits.Retries labtest models.
const MaxRetries = 1000

// MaxConcurrent is the largest number of calls RunConcurrent makes at once.
const MaxConcurrent = 10000

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func invalidRow(s Scenario, err error) Row {
	return Row{Scenario: s.Name, Outcome: results.Failed, Err: err}
}

// checkRun reports what keeps l from making a call with c for s under lim.
func (l *Lab) checkRun(ctx context.Context, c Doer, s Scenario, lim Limits) error {
	switch {
	case l == nil || l.srv == nil:
		return invalid("the Lab was not started (make one with labtest.New or labtest.Start)")
	case ctx == nil:
		return invalid("nil context")
	case isNil(c):
		return invalid("nil client (%T)", c)
	}
	if err := s.check(); err != nil {
		return err
	}
	return lim.check()
}

// isNil reports whether c is nil or holds a nil pointer, func, map, channel or interface.
func isNil(c Doer) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	switch v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Interface, reflect.Slice:
		return v.IsNil()
	}
	return false
}

// check reports a scenario that no constructor made, or that one refused.
func (s Scenario) check() error {
	if s.err != nil {
		return s.err
	}
	if s.path == "" {
		return invalid("a zero Scenario (make one with a constructor such as labtest.Slow)")
	}
	return nil
}

// check reports limits no client has: a negative time or count, retries over MaxRetries.
func (l Limits) check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ConnectTimeout", l.ConnectTimeout}, {"HeaderTimeout", l.HeaderTimeout}, {"AttemptTimeout", l.AttemptTimeout},
		{"Deadline", l.Deadline}, {"Backoff", l.Backoff}} {
		if d.v < 0 {
			return invalid("Limits.%s is %v, want 0 (not set) or more", d.name, d.v)
		}
	}
	if l.Retries < 0 || l.Retries > MaxRetries {
		return invalid("Limits.Retries is %d, want 0 to %d", l.Retries, MaxRetries)
	}
	if l.Pool < 0 {
		return invalid("Limits.Pool is %d, want 0 (no limit) or more", l.Pool)
	}
	return nil
}

// addSat adds durations, saturating at Forever: a backoff of centuries must not wrap.
func addSat(a, b time.Duration) time.Duration {
	if a > Forever-b {
		return Forever
	}
	return a + b
}
