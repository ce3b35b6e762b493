package model

import (
	"slices"
	"time"
)

// The caller's defences against a slow downstream: a hedge against the slow tail, a circuit
// breaker in a timeout storm, and budgets down a chain of calls.

// Tail is a downstream's latency: most calls take Fast, a fraction SlowFraction (0 to 1) take
// Slow.
type Tail struct {
	Fast, Slow   time.Duration
	SlowFraction float64
}

// Quantile is the latency below which a fraction q of the calls end (q in 0..1): the nearest
// rank of a distribution with Fast for the first 1 - SlowFraction of the calls.
func (t Tail) Quantile(q float64) time.Duration {
	if q > 1-t.SlowFraction+1e-12 {
		return t.Slow
	}
	return t.Fast
}

// HedgePrediction is what hedging a call does to a Tail.
type HedgePrediction struct {
	// Extra is the fraction of calls that send a second copy: those not answered by the hedge
	// delay.
	Extra float64
	// P99 is the 99th percentile latency with hedging.
	P99 time.Duration
}

// Hedge predicts hedging at delay: a call not answered after delay (strictly longer) sends a
// second copy to another instance, with the same tail drawn independently, and takes the
// first answer. The copy helps a slow call when delay + Fast < Slow.
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

// HedgeEdge is how close to the hedge's delay a call's measured time may lie and still leave
// open whether the hedge went out: the timer that sends it and the answer that makes it
// unneeded race within about a millisecond on a quiet machine.
const HedgeEdge = 2 * time.Millisecond

// Hedges bounds the hedges that reach the server for calls whose measured times (from the
// call's start to its answer, the first of the original and its hedge) are took: a hedge goes
// out for every call not answered by delay, so a call that took less than delay less
// HedgeEdge sent none. A call that took longer sent one that reached the server when the
// answer came late enough after the delay for the hedge to be sent and delivered: by more
// than late, the most the machine delayed a wake-up meanwhile (at least HedgeEdge). A loaded
// machine widens the range; a quiet one leaves it exact but for the calls at the edge.
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

// Breaker is a circuit breaker with gobreaker's states: closed, it lets every call through
// and opens after Trip consecutive failures; open, it sheds every call for Open; then half-
// open, it lets HalfOpenMax calls through, closes after that many successes and opens again
// on one failure, shedding the calls beyond HalfOpenMax meanwhile.
type Breaker struct {
	Trip        int
	Open        time.Duration
	HalfOpenMax int
}

// BreakerCall is one call through a breaker: when it starts, how long the downstream takes
// and whether it fails.
type BreakerCall struct {
	At, Took time.Duration
	Fails    bool
}

// BreakerState is a state of a breaker.
type BreakerState string

// The states.
const (
	Closed   BreakerState = "closed"
	Opened   BreakerState = "open"
	HalfOpen BreakerState = "half-open"
)

// BreakerChange is a change of state at an instant.
type BreakerChange struct {
	At time.Duration
	To BreakerState
}

// BreakerPrediction is what a breaker does to a sequence of calls.
type BreakerPrediction struct {
	// Shed says, per call, whether the breaker refused it without calling.
	Shed []bool
	// Changes are the breaker's changes of state, in time order.
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

// Predict runs the calls through the breaker. At one instant, calls that end are counted
// before calls that start; an open breaker turns half-open when a call asks after its Open
// has passed (strictly: gobreaker's expiry.Before(now)), and the change is recorded then. It
// panics on Trip or HalfOpenMax below 1.
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
			continue // a result from an earlier generation counts for nothing (gobreaker)
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

// Chain is a call chain: hop 0 (the gateway) calls hop 1 with Timeouts[0], hop 1 calls hop 2
// with Timeouts[1], and so on; the last hop works Work. A hop keeps working on its own call
// after its caller gave up, as a thread blocked in a call does; the last hop stops when its
// caller leaves. With Propagate every hop passes its remaining budget down (X-Deadline-Ms),
// each caller bounds its call by the smaller of its timeout and the budget it was given, and
// the last hop refuses at once work longer than its budget. Network time counts as zero.
type Chain struct {
	Timeouts  []time.Duration
	Work      time.Duration
	Propagate bool
}

// ChainHop is the model's account of hop i + 1 (the callee of Timeouts[i]).
type ChainHop struct {
	// Budget is the time its caller allows its call: Timeouts[i], or less with Propagate.
	Budget time.Duration
	// Busy is when the hop stops working on the request.
	Busy time.Duration
	// After is how long it worked after the gateway gave up (0 if it stopped before).
	After time.Duration
}

// ChainPrediction is the model's account of a Chain.
type ChainPrediction struct {
	// GaveUp is when the gateway's call ended (on its timeout or an answer); TimedOut says
	// it ended on its timeout.
	GaveUp   time.Duration
	TimedOut bool
	Hops     []ChainHop
	// Executed says whether the last hop did its work.
	Executed bool
}

// Predict follows the chain. It panics on an empty chain or a negative time.
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
	// The last hop's answer, then each caller's call end from the bottom up.
	answer := c.Work
	if !p.Executed {
		answer = 0 // refused at once
	}
	hops[n-1].Busy = min(answer, hops[n-1].Budget)
	end := hops[n-1].Busy // when hop n-1's call ends
	for i := n - 2; i >= 0; i-- {
		hops[i].Busy = end // hop i+1 works until its own call ended
		end = min(end, hops[i].Budget)
	}
	p.GaveUp, p.TimedOut = end, hops[0].Busy > hops[0].Budget
	for i := range hops {
		hops[i].After = max(hops[i].Busy-p.GaveUp, 0)
	}
	p.Hops = hops
	return p
}

// StormConns counts the connections a caller opens and closes over calls (in start order)
// through a pool that holds idle connections at the start: a call takes an idle connection
// or dials one; a call that fails (a timeout) closes its connection, one that succeeds
// returns it to the pool when it ends (At + Took). A shed call (shed[i], nil for none) takes
// none. The caller closes first, so every closed connection leaves its socket in TIME_WAIT on
// the caller's side.
func StormConns(calls []BreakerCall, shed []bool, idle int) (dials, closes int) {
	var busy []time.Duration // when the connections of answered calls come back
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
