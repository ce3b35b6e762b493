// Package clock makes the lab's timers fire on time.
//
// Go's scheduler sleeps in epoll_wait, whose timeout is a whole number of milliseconds: the
// runtime rounds the time to its next timer down, wakes early, and then sleeps at least one
// more millisecond. Every time.Timer, net.Conn deadline and context deadline of an otherwise
// idle process fires 0 to 1 ms late, 0.5 to 0.7 ms in the median on the lab's 2-core machine
// (golang/go#53824; an opt-in epoll_pwait2 is proposed, not in Go 1.26). Six read timeouts in
// a row are then 3 to 4 ms late: the lab's own error, not the library's.
//
// An Alarm calls a function at a set instant. It arms a Linux timerfd, registered in the same
// netpoller, Lead before the instant: the kernel ends the runtime's epoll_wait, and the alarm
// yields the processor through the rest of the lead and then calls its function, which does
// what the late Go timer would have done (a net.Conn's read deadline moved to the past ends a
// pending read at once). Two measurements decided this design:
//
//   - Waking the runtime alone is not enough: the woken thread runs its own processor's
//     timers, and a timer filed on another, idle processor can still wait for the next
//     millisecond (0.4 to 0.9 ms late with a bare wake-up).
//   - A kernel timer on the lab's virtual machine wakes a thread 0.1 to 0.35 ms late (median
//     0.2 ms; a blocking timerfd read, nanosleep and the netpoller alike). Java's SO_TIMEOUT,
//     a poll(2) with a timeout, pays that too; waking Lead early and yielding removes it from
//     the lab's measurement, so that a row shows the library's rule and not the machine's
//     timer latency. fakesrv's precise waits do the same.
//
// The Go timer stays as the backstop: a missing alarm (another system, no timerfd) changes no
// behaviour, only precision. One goroutine serves every alarm, and only while one is set: a
// process with no alarm pending has none. Yielding costs up to Lead of a core per alarm, so
// alarms are for the timers a row measures, not for every timer.
//
// A deadline that moves often and rarely falls due (a read deadline restarted on every read)
// takes a Lazy alarm, set only in its last Ahead by a cheap Go timer.
//
// Usage: give the alarm the timer's effect, set it with the timer, stop it with the timer.
//
//	cn.alarm = clock.NewAlarm(cn.expireRead) // moves the read deadline to the past
//	cn.SetReadDeadline(t)
//	cn.alarm.Set(t)
package clock

import (
	"container/heap"
	"runtime"
	"sync"
	"time"
)

// Lead is how much before its instant an alarm's timer wakes the process; the rest is spent
// yielding the processor. It covers the kernel's wake-up latency on a virtual machine (above).
const Lead = 500 * time.Microsecond

// maxPending bounds the alarms set at once; beyond it Set leaves the alarm unset (the timer it
// goes with fires, late as Go's timers do).
const maxPending = 1 << 16

// An Alarm calls its function at a set instant. Create it with NewAlarm; its methods are safe
// for concurrent use. The zero value is an alarm without a function, which only wakes the
// runtime at the instant (see Wake).
type Alarm struct {
	fn    func()    // nil: only a wake-up, at the instant itself
	at    time.Time // the fields below are guarded by the waker's mu
	index int       // in the waker's heap, while set
	set   bool
	gen   uint64 // counts settings and stops: a call for an older one is dropped
}

// NewAlarm returns an unset alarm that calls fn when it is due, from the goroutine that serves
// every alarm: fn must be quick and must not block. fn is not called for a setting replaced
// or stopped before it was due; one replaced while fn is being called may still see that call,
// so fn checks that its effect is still wanted.
func NewAlarm(fn func()) *Alarm {
	if fn == nil {
		panic("clock: NewAlarm with a nil function")
	}
	return &Alarm{fn: fn}
}

// Wake returns an alarm set for t that only wakes the runtime then, with no lead: the Go
// timers due by then run if they are filed on the processor that wakes, which makes it a best
// effort (see the package documentation). Prefer NewAlarm with the timer's effect where there
// is one to bring forward.
func Wake(t time.Time) *Alarm {
	a := &Alarm{}
	a.Set(t)
	return a
}

// wakeAt is when the timer must wake the process for a: Lead early to call its function on
// time, at the instant itself for a bare wake-up.
func (a *Alarm) wakeAt() time.Time {
	if a.fn == nil {
		return a.at
	}
	return a.at.Add(-Lead)
}

// Set sets the alarm for t, replacing any earlier setting; a zero t unsets it. An instant
// already past unsets it too: the timer it goes with has fired or is about to.
func (a *Alarm) Set(t time.Time) { w.set(a, t) }

// Stop unsets the alarm.
func (a *Alarm) Stop() { w.set(a, time.Time{}) }

// Pending is how many alarms are set, for tests.
func Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.h)
}

// alarms is a min-heap of alarms by instant.
type alarms []*Alarm

func (h alarms) Len() int           { return len(h) }
func (h alarms) Less(i, j int) bool { return h[i].wakeAt().Before(h[j].wakeAt()) }
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
	return a
}

// waker owns the alarms and the timer behind them.
type waker struct {
	mu      sync.Mutex // guards the fields below and every Alarm's at, index, set and gen
	h       alarms
	armed   time.Time // the instant the timer is armed for; zero when it is not
	running bool      // the serving goroutine runs
	t       *timer    // nil where the system has none
	failed  bool      // the timer could not be made: alarms are no-ops
}

// w is the process's one waker: one timerfd and at most one goroutine for any number of
// alarms. It is the package's only state, and nothing outside the package reaches it.
var w waker

// set sets a for t, or unsets it for a zero or past t.
func (w *waker) set(a *Alarm, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a.gen++
	on := !t.IsZero() && t.After(time.Now())
	switch {
	case !on && !a.set:
		return
	case !on:
		heap.Remove(&w.h, a.index)
		a.set = false
	case !w.ready():
		return
	case a.set:
		a.at = t
		heap.Fix(&w.h, a.index)
	case len(w.h) >= maxPending:
		return
	default:
		a.at, a.set = t, true
		heap.Push(&w.h, a)
	}
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

// rearmLocked arms the timer for the earliest alarm and starts the serving goroutine. With no
// alarm left it lets the goroutine end: the timer fires at once, and the goroutine, finding
// nothing to serve, returns. (A timerfd stays readable until read, so this wake-up cannot be
// lost, as an interrupt through a read deadline could be.)
func (w *waker) rearmLocked() {
	if len(w.h) == 0 {
		if w.running && !w.armed.IsZero() && w.t.arm(time.Nanosecond) == nil {
			w.armed = time.Time{}
		}
		return
	}
	next := w.h[0].wakeAt()
	if next.Equal(w.armed) {
		return
	}
	if w.t.arm(max(time.Until(next), time.Nanosecond)) != nil {
		return // the alarm stays set; the timer it goes with fires as Go's do
	}
	w.armed = next
	if !w.running {
		w.running = true
		go w.serve()
	}
}

// due is an alarm taken off the heap to be called.
type due struct {
	a   *Alarm
	at  time.Time
	gen uint64
}

// serve waits for the timer and calls the alarms that are due, until none is left.
func (w *waker) serve() {
	for {
		err := w.t.wait()
		w.mu.Lock()
		w.armed = time.Time{}
		var calls []due
		for len(w.h) > 0 && !w.h[0].wakeAt().After(time.Now()) {
			a := heap.Pop(&w.h).(*Alarm)
			a.set = false
			calls = append(calls, due{a, a.at, a.gen})
		}
		w.mu.Unlock()
		for _, c := range calls {
			if c.a.fn == nil {
				continue // the wake-up was the point
			}
			for time.Now().Before(c.at) {
				runtime.Gosched()
			}
			w.mu.Lock()
			current := c.a.gen == c.gen
			w.mu.Unlock()
			if current {
				c.a.fn()
			}
		}
		w.mu.Lock()
		if len(w.h) == 0 || err != nil {
			// Nothing left to serve, or a timer that broke: end. The next Set starts anew;
			// the alarms left over fire as Go's timers do.
			w.running = false
			w.mu.Unlock()
			return
		}
		next := w.h[0].wakeAt()
		if w.t.arm(max(time.Until(next), time.Nanosecond)) != nil {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.armed = next
		w.mu.Unlock()
	}
}
