package model

import (
	"slices"
	"time"
)

// Tail is a latency: Fast, or Slow for SlowFraction (0 to 1) of the calls.
type Tail struct {
	Fast, Slow   time.Duration
	SlowFraction float64
}

// Quantile is the q-quantile by nearest rank.
func (t Tail) Quantile(q float64) time.Duration {
	if q > 1-t.SlowFraction+1e-12 {
		return t.Slow
	}
	return t.Fast
}

// HedgePrediction is hedging's effect on a Tail.
type HedgePrediction struct {
	// Extra: the fraction sending a copy.
	Extra float64
	P99   time.Duration
}

// Hedge predicts hedging: a call unanswered after delay sends a copy to another instance, and
// the first answer wins.
func (t Tail) Hedge(delay time.Duration) HedgePrediction {
	type point struct {
		at time.Duration
		w  float64
	}
	f := min(max(t.SlowFraction, 0), 1)
	var pts []point
	var extra float64
	for _, first := range []point{{t.Fast, 1 - f}, {t.Slow, f}} {
		if first.w == 0 {
			continue
		}
		if first.at <= delay {
			pts = append(pts, first)
			continue
		}
		extra += first.w
		pts = append(pts, point{min(first.at, delay+t.Fast), first.w * (1 - f)}, point{min(first.at, delay+t.Slow), first.w * f})
	}
	slices.SortFunc(pts, func(a, b point) int { return cmpDuration(a.at, b.at) })
	var cum float64
	p99 := time.Duration(0)
	for _, p := range pts {
		if p.w == 0 {
			continue
		}
		cum += p.w
		p99 = p.at
		if cum >= 0.99-1e-12 {
			break
		}
	}
	return HedgePrediction{Extra: extra, P99: p99}
}

// HedgeEdge is how near delay a measured call leaves open whether its hedge went out.
const HedgeEdge = 2 * time.Millisecond

// Hedges bounds the hedges sent: none below delay - HedgeEdge, one above delay + late.
func Hedges(took []time.Duration, delay, late time.Duration) (lo, hi int) {
	late = max(late, HedgeEdge)
	for _, t := range took {
		if t > delay+late {
			lo++
		}
		if t > delay-HedgeEdge {
			hi++
		}
	}
	return lo, hi
}

// Breaker is gobreaker's: it opens after Trip failures in a row, sheds calls for Open, then
// admits HalfOpenMax calls, closing after that many successes or reopening on a failure.
type Breaker struct {
	Trip        int
	Open        time.Duration
	HalfOpenMax int
}

// BreakerCall is a call's start, downstream time and failure.
type BreakerCall struct {
	At, Took time.Duration
	Fails    bool
}

// BreakerState is closed, open or half-open.
type BreakerState string

const (
	Closed   BreakerState = "closed"
	Opened   BreakerState = "open"
	HalfOpen BreakerState = "half-open"
)

// BreakerChange is a change of state.
type BreakerChange struct {
	At time.Duration
	To BreakerState
}

// BreakerPrediction is a breaker's effect on calls.
type BreakerPrediction struct {
	// Shed: per call, refused.
	Shed    []bool
	Changes []BreakerChange
}

// Sheds counts the calls shed.
func (p BreakerPrediction) Sheds() int {
	n := 0
	for _, s := range p.Shed {
		if s {
			n++
		}
	}
	return n
}

// Predict runs the calls through; at one instant ends precede starts, and an open breaker
// half-opens strictly after Open, as gobreaker. It panics on Trip or HalfOpenMax below 1.
func (b Breaker) Predict(calls []BreakerCall) BreakerPrediction {
	if b.Trip < 1 || b.HalfOpenMax < 1 {
		panic("model: Breaker needs Trip and HalfOpenMax >= 1")
	}
	type event struct {
		at    time.Duration
		call  int
		start bool
	}
	var evs []event
	for i, c := range calls {
		evs = append(evs, event{c.At, i, true})
	}
	p := BreakerPrediction{Shed: make([]bool, len(calls))}
	state, gen := Closed, 0
	var openedAt time.Duration
	fails, succ, halfInFlight := 0, 0, 0
	callGen := make([]int, len(calls))
	set := func(t time.Duration, to BreakerState) {
		state, gen = to, gen+1
		fails, succ, halfInFlight = 0, 0, 0
		openedAt = t
		p.Changes = append(p.Changes, BreakerChange{t, to})
	}
	sortEvents := func() {
		slices.SortStableFunc(evs, func(a, b event) int {
			if c := cmpDuration(a.at, b.at); c != 0 {
				return c
			}
			if a.start != b.start {
				if a.start {
					return 1
				}
				return -1
			}
			return a.call - b.call
		})
	}
	sortEvents()
	for len(evs) > 0 {
		e := evs[0]
		evs = evs[1:]
		c := calls[e.call]
		if e.start {
			if state == Opened && e.at > openedAt+b.Open {
				set(e.at, HalfOpen)
			}
			if state == Opened || (state == HalfOpen && halfInFlight >= b.HalfOpenMax) {
				p.Shed[e.call] = true
				continue
			}
			if state == HalfOpen {
				halfInFlight++
			}
			callGen[e.call] = gen
			evs = append(evs, event{e.at + c.Took, e.call, false})
			sortEvents()
			continue
		}
		if callGen[e.call] != gen {
			continue
		}
		switch {
		case state == Closed && c.Fails:
			if fails++; fails >= b.Trip {
				set(e.at, Opened)
			}
		case state == Closed:
			fails = 0
		case state == HalfOpen && c.Fails:
			set(e.at, Opened)
		case state == HalfOpen:
			if succ++; succ >= b.HalfOpenMax {
				set(e.at, Closed)
			}
		}
	}
	return p
}

// Chain is hops calling the next with Timeouts[i], the last working Work, each on after its
// caller left. Propagate passes the budget down (X-Deadline-Ms); the last refuses longer work.
type Chain struct {
	Timeouts  []time.Duration
	Work      time.Duration
	Propagate bool
}

// ChainHop is hop i + 1, the callee of Timeouts[i].
type ChainHop struct {
	// Budget: Timeouts[i], or less with Propagate.
	Budget time.Duration
	Busy   time.Duration
	After  time.Duration
}

// ChainPrediction accounts for a Chain.
type ChainPrediction struct {
	// GaveUp is the gateway call's end; TimedOut, on its timeout.
	GaveUp   time.Duration
	TimedOut bool
	Hops     []ChainHop
	Executed bool
}

// Predict panics on an empty chain or a negative time.
func (c Chain) Predict() ChainPrediction {
	if len(c.Timeouts) == 0 || c.Work < 0 {
		panic("model: Chain needs a timeout per hop and no negative work")
	}
	n := len(c.Timeouts)
	hops := make([]ChainHop, n)
	budget := Forever
	for i, t := range c.Timeouts {
		if t <= 0 {
			panic("model: Chain needs positive timeouts")
		}
		b := t
		if c.Propagate {
			b = min(t, budget)
			budget = b
		}
		hops[i].Budget = b
	}
	p := ChainPrediction{Executed: !(c.Propagate && hops[n-1].Budget < c.Work)}
	answer := c.Work
	if !p.Executed {
		answer = 0
	}
	hops[n-1].Busy = min(answer, hops[n-1].Budget)
	end := hops[n-1].Busy
	for i := n - 2; i >= 0; i-- {
		hops[i].Busy = end
		end = min(end, hops[i].Budget)
	}
	p.GaveUp, p.TimedOut = end, hops[0].Busy > hops[0].Budget
	for i := range hops {
		hops[i].After = max(hops[i].Busy-p.GaveUp, 0)
	}
	p.Hops = hops
	return p
}

// StormConns counts the connections a caller opens and closes over calls through a pool holding
// idle: a failure closes its connection, a shed call (shed[i]) takes none; each close is the
// caller's, so it leaves a TIME_WAIT.
func StormConns(calls []BreakerCall, shed []bool, idle int) (dials, closes int) {
	var busy []time.Duration
	for i, c := range calls {
		if shed != nil && shed[i] {
			continue
		}
		busy = slices.DeleteFunc(busy, func(end time.Duration) bool {
			if end <= c.At {
				idle++
				return true
			}
			return false
		})
		if idle > 0 {
			idle--
		} else {
			dials++
		}
		if c.Fails {
			closes++
		} else {
			busy = append(busy, c.At+c.Took)
		}
	}
	return dials, closes
}
