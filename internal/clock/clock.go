// Package clock makes the lab's timers fire on time: Go's fire 0 to 1 ms late, as epoll_wait
// takes whole milliseconds (golang/go#53824). An Alarm arms a Linux timerfd in the netpoller Lead
// early, yields through the rest, then calls its function; the Go timer stays as the backstop.
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

// Lead covers the kernel's wake-up latency.
const Lead = 500 * time.Microsecond

// maxPending bounds the alarms set.
const maxPending = 1 << 16

// An Alarm calls its function at a set instant; its methods are safe for concurrent use.
type Alarm struct {
	fn    func()
	at    time.Time
	index int
	set   bool
	gen   uint64
}

// NewAlarm returns an unset alarm calling fn from the goroutine serving all alarms: fn must not
// block, and must check it is still wanted.
func NewAlarm(fn func()) *Alarm {
	if fn == nil {
		panic("clock: NewAlarm with a nil function")
	}
	return &Alarm{fn: fn}
}

// Wake returns a zero Alarm set for t: it only wakes the runtime (best effort).
func Wake(t time.Time) *Alarm {
	a := &Alarm{}
	a.Set(t)
	return a
}

func (a *Alarm) wakeAt() time.Time {
	if a.fn == nil {
		return a.at
	}
	return a.at.Add(-Lead)
}

// Set sets the alarm for t, replacing any earlier setting; a zero or past t unsets it.
func (a *Alarm) Set(t time.Time) { w.set(a, t) }

// Stop unsets the alarm.
func (a *Alarm) Stop() { w.set(a, time.Time{}) }

// Pending counts the alarms set, for tests.
func Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.h)
}

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

type waker struct {
	mu      sync.Mutex // guards these and the Alarms
	h       alarms
	armed   time.Time // zero when unarmed
	running bool
	t       *timer // nil without a system timer
	failed  bool
}

var w waker

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

// rearmLocked arms the timer for the earliest alarm, or at once with none left to end serve.
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
		return
	}
	w.armed = next
	if !w.running {
		w.running = true
		go w.serve()
	}
}

type due struct {
	a   *Alarm
	at  time.Time
	gen uint64
}

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
				continue
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
