// Package clock makes the lab's timers fire on time.
//
// Go's scheduler sleeps in epoll_wait, whose timeout is a whole number of milliseconds: the
// runtime rounds the time to its next timer down, wakes early, and then sleeps at least one
// more millisecond. Every time.Timer, net.Conn deadline and context deadline of an otherwise
// idle process fires 0 to 1 ms late, 0.5 to 0.7 ms in the median on the lab's 2-core machine
// (golang/go#53824; an opt-in epoll_pwait2 is proposed, not in Go 1.26). Six read timeouts in
// a row are then 3 to 4 ms late, which is the lab's own error, not the library's: a Java
// client's SO_TIMEOUT sleeps in poll(2), whose kernel timer fires within tens of
// microseconds.
//
// An Alarm arms a Linux timerfd, registered in the same netpoller, for the instant a timer is
// due: the kernel ends the runtime's epoll_wait on time, and the runtime, awake, runs its due
// timers. An Alarm is only a wake-up: the timer that fires is still Go's own, so a missing
// alarm (another system, no timerfd) changes no behaviour, only precision. One goroutine
// serves every alarm, and only while one is set: a process with no alarm pending has none.
//
// Usage: arm an alarm next to each timer whose firing time a measurement depends on, and
// stop it when the timer is stopped.
//
//	t := time.NewTimer(d)
//	a := clock.Wake(time.Now().Add(d))
//	defer a.Stop()
package clock

import (
	"container/heap"
	"sync"
	"time"
)

// maxPending bounds the alarms set at once; beyond it Set leaves the alarm unset (the timer it
// goes with fires, late as Go's timers do).
const maxPending = 1 << 16

// An Alarm wakes the process at a set instant. Its zero value is unset; its methods are safe
// for concurrent use.
type Alarm struct {
	at    time.Time // guarded by the waker's mu
	index int       // in the waker's heap, while set
	set   bool
}

// Wake returns an alarm set for t.
func Wake(t time.Time) *Alarm {
	a := &Alarm{}
	a.Set(t)
	return a
}

// Set sets the alarm for t, replacing any earlier setting; a zero t unsets it. An instant
// already past is a no-op: the runtime is awake.
func (a *Alarm) Set(t time.Time) {
	if t.IsZero() {
		a.Stop()
		return
	}
	w.set(a, t)
}

// Stop unsets the alarm.
func (a *Alarm) Stop() { w.unset(a) }

// Pending is how many alarms are set, for tests.
func Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.h)
}

// alarms is a min-heap of alarms by instant.
type alarms []*Alarm

func (h alarms) Len() int           { return len(h) }
func (h alarms) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h alarms) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *alarms) Push(x any) {
	a := x.(*Alarm)
	a.index = len(*h)
	*h = append(*h, a)
}
func (h *alarms) Pop() any {
	old := *h
	a := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	a.index = -1
	return a
}

// waker owns the alarms and the timer behind them.
type waker struct {
	mu      sync.Mutex // guards the fields below and every Alarm's at, index and set
	h       alarms
	armed   time.Time // the instant the timer is armed for; zero when disarmed
	running bool      // the serving goroutine runs
	t       *timer    // nil where the system has none
	failed  bool      // the timer could not be made: alarms are no-ops
}

// w is the process's one waker: one timerfd and at most one goroutine for any number of
// alarms. It is the package's only state, and nothing outside the package reaches it.
var w waker

func (w *waker) set(a *Alarm, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ready() {
		return
	}
	if !t.After(time.Now()) {
		if a.set {
			heap.Remove(&w.h, a.index)
			a.set = false
			w.rearmLocked()
		}
		return
	}
	if a.set {
		a.at = t
		heap.Fix(&w.h, a.index)
	} else {
		if len(w.h) >= maxPending {
			return
		}
		a.at, a.set = t, true
		heap.Push(&w.h, a)
	}
	w.rearmLocked()
}

func (w *waker) unset(a *Alarm) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !a.set {
		return
	}
	heap.Remove(&w.h, a.index)
	a.set = false
	w.rearmLocked()
}

// ready makes the timer on first use and reports whether there is one.
func (w *waker) ready() bool {
	if w.t == nil && !w.failed {
		t, err := newTimer()
		if err != nil {
			w.failed = true
			return false
		}
		w.t = t
	}
	return w.t != nil
}

// rearmLocked arms the timer for the earliest alarm and starts the serving goroutine. With
// no alarm left it lets the goroutine end: the timer fires at once, and the goroutine, finding
// nothing to serve, returns. (A timerfd stays readable until read, so this wake-up cannot be
// lost, as an interrupt through a read deadline could be.)
func (w *waker) rearmLocked() {
	if len(w.h) == 0 {
		if w.running && !w.armed.IsZero() {
			if w.t.arm(time.Nanosecond) == nil {
				w.armed = time.Time{}
			}
		}
		return
	}
	next := w.h[0].at
	if !next.Equal(w.armed) {
		if w.t.arm(max(time.Until(next), time.Nanosecond)) != nil {
			return // the alarm stays set; the timer it goes with fires as Go's do
		}
		w.armed = next
	}
	if !w.running {
		w.running = true
		go w.serve()
	}
}

// serve waits for the timer and drops the alarms it served, until none is left.
func (w *waker) serve() {
	for {
		err := w.t.wait()
		w.mu.Lock()
		w.armed = time.Time{}
		now := time.Now()
		for len(w.h) > 0 && !w.h[0].at.After(now) {
			a := heap.Pop(&w.h).(*Alarm)
			a.set = false
		}
		if len(w.h) == 0 || err != nil {
			// Nothing left to serve, or a timer that broke: end. The next Set starts anew;
			// the alarms left over fire as Go's timers do.
			w.running = false
			w.mu.Unlock()
			return
		}
		next := w.h[0].at
		if w.t.arm(max(time.Until(next), time.Nanosecond)) != nil {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.armed = next
		w.mu.Unlock()
	}
}
