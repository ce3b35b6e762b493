package model

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// Storm is a retry storm: callers that do not slow down (open loop: a call every 1/Rate s
// during Window) call a downstream of Capacity servers taking Service each, in FIFO order,
// which starts no work from PauseAt for Pause (the trigger). Each attempt has Timeout; the
// downstream cannot see that a caller left, so it still executes the queued work of
// abandoned attempts. Policy retries a timed-out or failed attempt. Work the downstream starts
// before FailUntil, or for a call i with FailCalls[i], ends in an error answer (a failing
// downstream). Seed draws the jitter (StormJitter).
type Storm struct {
	Rate           float64
	Capacity       int
	Service        time.Duration
	Timeout        time.Duration
	PauseAt, Pause time.Duration
	Window         time.Duration
	FailUntil      time.Duration
	FailCalls      []bool
	Policy         rules.RetryPolicy
	Seed           uint64
}

// StormPhase counts what happened to the calls made in one phase: the calls, the requests
// the downstream received for them, those answered within their limit, and the executions
// done for them after their caller had left.
type StormPhase struct {
	Calls, Requests, Good, Wasted int
}

// Amplification is the requests received per call made.
func (p StormPhase) Amplification() float64 {
	if p.Calls == 0 {
		return 0
	}
	return float64(p.Requests) / float64(p.Calls)
}

// The phases of a storm, by when a call is made.
const (
	BeforePause = iota
	DuringPause
	AfterPause
)

// StormPoint is one step of a storm's timeline: per second, and the queue at its end.
type StormPoint struct {
	At               time.Duration
	Offered, Goodput float64
	Queue            int
}

// StormAttempt is one attempt; a Shed one (a breaker's refusal) reaches no downstream.
type StormAttempt struct {
	Call, Attempt int // Attempt 0 is the first
	Sent          time.Duration
	Start, End    time.Duration
	InTime        bool
	Failed        bool // answered with an error
	Shed          bool
}

// StormPrediction is what the storm does.
type StormPrediction struct {
	Phases   [3]StormPhase
	Attempts []StormAttempt
	// Good and First say per call whether an attempt, the first, was answered in time.
	Good, First []bool
	// Recovered: from some call on, every first attempt is answered in time (RecoveredFrom);
	// Drained: a request after the pause started at once. Both times from the pause's end.
	Recovered      bool
	RecoveredAfter time.Duration
	Drained        bool
	DrainedAfter   time.Duration
	Retries        int // retries sent
	Denied         int // retries the policy's bounds refused
	Wasted         int // executions for callers that had left
	PeakQueue      int
	Timeline       []StormPoint
}

// StormStep is the step of a storm's timeline.
const StormStep = 100 * time.Millisecond

// MaxStormRequests bounds a storm's simulation.
const MaxStormRequests = 1_000_000

// Check reports parameters the storm cannot run with.
func (s Storm) Check() error {
	switch {
	case s.Rate <= 0 || math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0):
		return errors.New("the rate must be above 0")
	case s.Capacity < 1:
		return errors.New("the capacity must be at least 1")
	case s.Service <= 0 || s.Timeout <= 0 || s.Window <= 0:
		return errors.New("the service time, the timeout and the window must be above 0")
	case s.Pause < 0 || s.PauseAt < 0:
		return errors.New("the pause and its start must not be negative")
	case s.Rate*s.Window.Seconds()*float64(s.Policy.TotalAttempts()) > MaxStormRequests:
		return fmt.Errorf("rate x window x attempts must stay within %d requests", MaxStormRequests)
	}
	return nil
}

// StormJitter is retry k of call i's draw in [0, 1): a hash (splitmix64), the same for the
// model and a run in any order.
func StormJitter(seed uint64, i, k int) float64 {
	z := seed ^ uint64(i)*0x9e3779b97f4a7c15 ^ uint64(k)*0xbf58476d1ce4e5b9
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// CallAt is when call i is made.
func (s Storm) CallAt(i int) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / s.Rate)
}

// Calls is how many calls the window makes.
func (s Storm) Calls() int { return int(math.Ceil(s.Window.Seconds()*s.Rate - 1e-9)) }

// PhaseOf is the phase of an instant.
func (s Storm) PhaseOf(t time.Duration) int {
	switch {
	case t < s.PauseAt:
		return BeforePause
	case t < s.PauseAt+s.Pause:
		return DuringPause
	}
	return AfterPause
}

// stormEvent sends attempt, or (not send) settles the attempt at index ref.
type stormEvent struct {
	at      time.Duration
	seq     int
	call    int
	attempt int
	send    bool
	ref     int
}

type stormQueue []stormEvent

func (q stormQueue) Len() int { return len(q) }
func (q stormQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q stormQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *stormQueue) Push(x any)   { *q = append(*q, x.(stormEvent)) }
func (q *stormQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type durHeap []time.Duration

func (h durHeap) Len() int           { return len(h) }
func (h durHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h durHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *durHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *durHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// Predict runs the storm. It returns an error for parameters Check refuses.
func (s Storm) Predict() (StormPrediction, error) {
	p, _, err := s.predict(false)
	return p, err
}

// predict runs the storm; with hopeless it stops, returning false, once a request starts too
// late for the last call's first attempt (which queues behind it) to be answered in time:
// the storm cannot recover then.
func (s Storm) predict(hopeless bool) (StormPrediction, bool, error) {
	if err := s.Check(); err != nil {
		return StormPrediction{}, false, err
	}
	n := s.Calls()
	p := StormPrediction{Good: make([]bool, n), First: make([]bool, n)}
	g := newStormGates(s.Policy)
	free := make(durHeap, s.Capacity)
	pauseEnd := s.PauseAt + s.Pause
	var q stormQueue
	seq := 0
	push := func(e stormEvent) {
		e.seq = seq
		seq++
		heap.Push(&q, e)
	}
	for i := range n {
		push(stormEvent{at: s.CallAt(i), call: i, send: true})
	}
	for q.Len() > 0 {
		e := heap.Pop(&q).(stormEvent)
		if e.send {
			if e.attempt == 0 {
				g.called(e.at)
				p.Phases[s.PhaseOf(e.at)].Calls++
			} else {
				p.Retries++
			}
			ref := len(p.Attempts)
			a := StormAttempt{Call: e.call, Attempt: e.attempt, Sent: e.at}
			if !g.admit(e.at, ref) {
				a.Shed = true
				p.Attempts = append(p.Attempts, a)
				g.failed(e.call)
				continue
			}
			phase := s.PhaseOf(s.CallAt(e.call))
			p.Phases[phase].Requests++
			a.Start = max(e.at, free[0])
			if a.Start >= s.PauseAt && a.Start < pauseEnd {
				a.Start = pauseEnd
			}
			a.End = a.Start + s.Service
			if hopeless && e.at <= s.CallAt(n-1) && a.End > s.CallAt(n-1)+s.Timeout {
				return StormPrediction{}, false, nil
			}
			free[0] = a.End
			heap.Fix(&free, 0)
			deadline := e.at + s.Timeout
			a.InTime = a.End <= deadline
			a.Failed = a.Start < s.FailUntil || e.call < len(s.FailCalls) && s.FailCalls[e.call]
			if !p.Drained && e.at >= pauseEnd && a.Start == e.at {
				p.Drained, p.DrainedAfter = true, e.at-pauseEnd
			}
			if !a.InTime {
				p.Wasted++
				p.Phases[phase].Wasted++
			}
			p.Attempts = append(p.Attempts, a)
			push(stormEvent{at: min(a.End, deadline), call: e.call, attempt: e.attempt, ref: ref})
			continue
		}
		a := p.Attempts[e.ref]
		ok := a.InTime && !a.Failed
		g.settle(e.at, e.ref, ok)
		if ok {
			g.succeeded(e.call, e.attempt)
			p.Good[e.call] = true
			p.First[e.call] = e.attempt == 0
			continue
		}
		if !g.retry(e.at, e.call, e.attempt, !a.InTime) {
			if e.attempt+1 < s.Policy.TotalAttempts() {
				p.Denied++
			}
			g.failed(e.call)
			continue
		}
		d := s.Policy.Backoff.Delay(e.attempt+1, StormJitter(s.Seed, e.call, e.attempt+1))
		push(stormEvent{at: e.at + d, call: e.call, attempt: e.attempt + 1, send: true})
	}
	for i, good := range p.Good {
		if good {
			p.Phases[s.PhaseOf(s.CallAt(i))].Good++
		}
	}
	p.recovery(s, n)
	p.timeline(s)
	return p, true, nil
}

// recovery finds the first call from which every call's first attempt was answered in time.
func (p *StormPrediction) recovery(s Storm, n int) {
	from, ok := RecoveredFrom(p.First, 0)
	if !ok {
		return
	}
	p.Recovered = true
	p.RecoveredAfter = max(s.CallAt(from)-(s.PauseAt+s.Pause), 0)
}

// RecoveredFrom is the first call from which every first attempt but late ones was answered
// in time; ok needs a tenth of the calls at least.
func RecoveredFrom(first []bool, late int) (from int, ok bool) {
	from = len(first)
	failed := 0
	for from > 0 {
		if !first[from-1] {
			if failed == late {
				break
			}
			failed++
		}
		from--
	}
	return from, len(first)-from >= max(len(first)/10, 1)
}

// timeline fills Timeline and PeakQueue, one point a StormStep until the last work ends.
func (p *StormPrediction) timeline(s Storm) {
	var last time.Duration
	for _, a := range p.Attempts {
		last = max(last, a.End)
	}
	steps := int(last/StormStep) + 1
	sent := make([]int, steps+1)
	started := make([]int, steps+1)
	good := make([]int, steps+1)
	for _, a := range p.Attempts {
		if a.Shed {
			continue
		}
		sent[int(a.Sent/StormStep)]++
		started[int(a.Start/StormStep)]++
		if a.InTime && !a.Failed {
			good[int(a.End/StormStep)]++
		}
	}
	per := float64(time.Second) / float64(StormStep)
	queue := 0
	p.Timeline = make([]StormPoint, steps)
	for k := range steps {
		queue += sent[k] - started[k]
		p.Timeline[k] = StormPoint{At: time.Duration(k+1) * StormStep, Offered: float64(sent[k]) * per, Goodput: float64(good[k]) * per, Queue: queue}
		p.PeakQueue = max(p.PeakQueue, queue)
	}
}

// TipOver is the lowest rate, to 1% of the capacity, at which the storm does not recover,
// by bisection (a higher load recovers no sooner); 0 when it recovers at the capacity.
func (s Storm) TipOver() (float64, error) {
	capacity := float64(s.Capacity) / s.Service.Seconds()
	step := capacity / 100
	recovers := func(k int) (bool, error) {
		t := s
		t.Rate = float64(k) * step
		p, finished, err := t.predict(true)
		return finished && p.Recovered, err
	}
	lo, hi := 1, 100 // recovers(lo) assumed, hi tested
	if ok, err := recovers(hi); err != nil || ok {
		return 0, err
	}
	if ok, err := recovers(lo); err != nil || !ok {
		return step, err
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, err := recovers(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return float64(hi) * step, nil
}
