//go:build !linux

package clock

import (
	"errors"
	"time"
)

// timer is absent off Linux: alarms are no-ops.
type timer struct{}

func newTimer() (*timer, error) { return nil, errors.New("clock: no timerfd on this system") }

func (*timer) arm(time.Duration) error { return errors.New("clock: no timer") }

func (*timer) wait() error { return errors.New("clock: no timer") }
