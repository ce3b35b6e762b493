package clock

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done and returns its cause (context.Cause). A d of zero or
// less returns at once, with ctx's cause if it is already done.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// SleepUntil waits until t, or until ctx is done (false). An alarm wakes the process at t.
func SleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	alarm := Wake(t)
	defer alarm.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
