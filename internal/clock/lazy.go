package clock

import (
	"sync"
	"time"
)

// Ahead is how early a Lazy alarm is set.
const Ahead = 5 * time.Millisecond

// A Lazy alarm is an Alarm set only Ahead of its instant, for deadlines moved often and rarely
// due: setting the earliest alarm costs a system call.
type Lazy struct {
	a *Alarm

	mu  sync.Mutex
	at  time.Time // zero when unset
	set bool
	t   *time.Timer
}

// NewLazy returns an unset lazy alarm calling fn as NewAlarm's does.
func NewLazy(fn func()) *Lazy {
	l := &Lazy{a: NewAlarm(fn)}
	l.t = time.AfterFunc(time.Hour, l.near)
	l.t.Stop()
	return l
}

// Set sets the alarm for t, replacing any earlier setting; a zero t unsets it.
func (l *Lazy) Set(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = t
	until := time.Until(t)
	switch {
	case t.IsZero():
		l.t.Stop()
		l.unsetLocked()
	case until <= Ahead:
		l.t.Stop()
		l.a.Set(t)
		l.set = true
	default:
		l.unsetLocked()
		l.t.Reset(until - Ahead)
	}
}

// Stop unsets the alarm.
func (l *Lazy) Stop() { l.Set(time.Time{}) }

func (l *Lazy) unsetLocked() {
	if l.set {
		l.a.Stop()
		l.set = false
	}
}

func (l *Lazy) near() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.at.IsZero() {
		l.a.Set(l.at)
		l.set = true
	}
}
