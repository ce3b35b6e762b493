package model

import (
	"math"
	"slices"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// The caller's side of a slow downstream: a service whose bounded worker pool (threads) calls
// one downstream through a connection pool. The questions are Little's law for the pool and
// the workers, the lease queue with its timeout, the pool as a bulkhead on the downstream's
// concurrency, hedged requests against a slow tail, a circuit breaker's states and the budget
// left at each hop of a call chain.

// Concurrency is Little's law: the calls in progress on average when calls arrive at rate per
// second and each is held for hold (connections leased = QPS x response time).
func Concurrency(rate float64, hold time.Duration) float64 {
	return rate * hold.Seconds()
}

// PoolSize is the per-route pool the sizing rule gives: QPS x p99 x headroom (1.5 is the
// documented headroom), rounded up, at least 1. A rate or a headroom below zero counts as 0.
func PoolSize(qps float64, p99 time.Duration, headroom float64) int {
	n := math.Ceil(max(qps, 0)*p99.Seconds()*max(headroom, 0) - 1e-9)
	return max(int(n), 1)
}

// Bulkhead is the most calls that can press on the downstream at once: every worker holds at
// most one call, and a call reaches the downstream only with a leased connection.
func Bulkhead(workers, pool int) int { return min(workers, pool) }

// Cascade is a caller whose downstream pauses: Requests calls arrive together at 0, each
// taking a worker (workers are handed out first come first served, then queued), then a
// connection of the pool (a FIFO lease queue, failing at LeaseTimeout), then the downstream,
// which answers nothing before Pause and then serves each call in Service with at most
// Capacity calls at once. A health check at each of Health takes a worker for no time.
type Cascade struct {
	Workers int
	Pool    int
	// LeaseTimeout bounds the wait for a connection (0: none).
	LeaseTimeout time.Duration
	Requests     int
	Health       []time.Duration
	Pause        time.Duration
	Service      time.Duration
	// Capacity is how many calls the downstream serves at once (0: no bound).
	Capacity int
}

// CascadeCall is the model's account of one request of a Cascade.
type CascadeCall struct {
	// Outcome is OK or LeaseTimeout.
	Outcome vocab.Outcome
	// Worker is when it got a worker and asked for a connection, Leased when it got one (-1
	// if never), End when its worker was freed.
	Worker, Leased, End time.Duration
}

// CascadePrediction is the model's account of a Cascade.
type CascadePrediction struct {
	Calls []CascadeCall
	// Health is each health check's wait for a worker, in the order of Cascade.Health.
	Health []time.Duration
	// PeakDownstream is the most calls sent to the downstream and not answered at once.
	PeakDownstream int
	// Recovered is when the last request's worker was freed: from then on the caller
	// answers as if nothing had happened.
	Recovered time.Duration
}

// BusyAt is how many workers hold a request at instant t.
func (p CascadePrediction) BusyAt(t time.Duration) int {
	n := 0
	for _, c := range p.Calls {
		if c.Worker <= t && t < c.End {
			n++
		}
	}
	return n
}

// PendingAt is how many requests wait for a connection at instant t.
func (p CascadePrediction) PendingAt(t time.Duration) int {
	n := 0
	for _, c := range p.Calls {
		got := c.Leased
		if got < 0 {
			got = c.End
		}
		if c.Worker <= t && t < got {
			n++
		}
	}
	return n
}

// Count is how many requests ended with outcome o.
func (p CascadePrediction) Count(o vocab.Outcome) int {
	n := 0
	for _, c := range p.Calls {
		if c.Outcome == o {
			n++
		}
	}
	return n
}

// Ends lists the end times of the requests that ended with outcome o, in order.
func (p CascadePrediction) Ends(o vocab.Outcome) []time.Duration {
	var ends []time.Duration
	for _, c := range p.Calls {
		if c.Outcome == o {
			ends = append(ends, c.End)
		}
	}
	slices.Sort(ends)
	return ends
}

// Predict runs the cascade as an event simulation. At one instant, events are taken in this
// order: downstream answers (each frees its connection to the first waiter, then its worker),
// health checks arriving, waiters failing on the lease timeout (strict: a connection freed at
// the timeout's instant is still granted). It panics on Workers or Pool below 1, negative
// counts or times (programmer misuse: callers check their parameters first).
func (c Cascade) Predict() CascadePrediction {
	if c.Workers < 1 || c.Pool < 1 || c.Requests < 0 || c.Capacity < 0 || c.LeaseTimeout < 0 || c.Pause < 0 || c.Service < 0 {
		panic("model: Cascade needs Workers and Pool >= 1 and no negative count or time")
	}
	s := cascadeSim{c: c, freeWorkers: c.Workers, freeConns: c.Pool, freeSlots: c.Capacity}
	if c.Capacity == 0 {
		s.freeSlots = math.MaxInt
	}
	s.p.Calls = make([]CascadeCall, c.Requests)
	s.p.Health = make([]time.Duration, len(c.Health))
	for i := range s.p.Calls {
		s.p.Calls[i].Leased = -1
		s.workerQ = append(s.workerQ, job{call: i})
	}
	health := make([]int, len(c.Health))
	for i := range health {
		health[i] = i
	}
	slices.SortStableFunc(health, func(a, b int) int { return cmpDuration(c.Health[a], c.Health[b]) })
	s.startWorkers(0)
	for {
		t := Forever
		if len(s.inService) > 0 {
			t = s.inService[0].at
		}
		if len(health) > 0 {
			t = min(t, c.Health[health[0]])
		}
		if len(s.leaseQ) > 0 && c.LeaseTimeout > 0 {
			t = min(t, s.p.Calls[s.leaseQ[0]].Worker+c.LeaseTimeout)
		}
		if t == Forever {
			break
		}
		for len(s.inService) > 0 && s.inService[0].at == t {
			d := s.inService[0]
			s.inService = s.inService[1:]
			s.inFlight--
			s.freeSlots++
			s.p.Calls[d.call].Outcome, s.p.Calls[d.call].End = vocab.OK, t
			s.freeConns++
			s.freeWorkers++
			s.grantLeases(t)
			s.serveDownstream(t)
		}
		for len(health) > 0 && c.Health[health[0]] == t {
			s.workerQ = append(s.workerQ, job{call: -1, health: health[0], at: t})
			health = health[1:]
		}
		s.startWorkers(t)
		for len(s.leaseQ) > 0 && c.LeaseTimeout > 0 && s.p.Calls[s.leaseQ[0]].Worker+c.LeaseTimeout == t {
			i := s.leaseQ[0]
			s.leaseQ = s.leaseQ[1:]
			s.p.Calls[i].Outcome, s.p.Calls[i].End = vocab.LeaseTimeout, t
			s.freeWorkers++
		}
		s.startWorkers(t)
	}
	for _, cl := range s.p.Calls {
		s.p.Recovered = max(s.p.Recovered, cl.End)
	}
	return s.p
}

// job is an entry of the worker queue: a request (call >= 0) or a health check.
type job struct {
	call   int
	health int
	at     time.Duration
}

// served is a call at the downstream that answers at a given time.
type served struct {
	at   time.Duration
	call int
}

type cascadeSim struct {
	c                      Cascade
	freeWorkers, freeConns int
	freeSlots              int
	workerQ                []job
	leaseQ                 []int    // calls waiting for a connection, first come first
	sendQ                  []int    // calls sent, waiting for a downstream slot
	inService              []served // by answer time, then call order
	inFlight               int
	p                      CascadePrediction
}

// startWorkers hands free workers to the queue: a request asks for a connection at once, a
// health check is answered at once and frees its worker again.
func (s *cascadeSim) startWorkers(t time.Duration) {
	for len(s.workerQ) > 0 && s.freeWorkers > 0 {
		j := s.workerQ[0]
		s.workerQ = s.workerQ[1:]
		if j.call < 0 {
			s.p.Health[j.health] = t - j.at
			continue
		}
		s.freeWorkers--
		s.p.Calls[j.call].Worker = t
		s.leaseQ = append(s.leaseQ, j.call)
		s.grantLeases(t)
	}
	s.serveDownstream(t)
}

// grantLeases gives free connections to the waiters, first come first served, and sends their
// calls.
func (s *cascadeSim) grantLeases(t time.Duration) {
	for len(s.leaseQ) > 0 && s.freeConns > 0 {
		i := s.leaseQ[0]
		s.leaseQ = s.leaseQ[1:]
		s.freeConns--
		s.p.Calls[i].Leased = t
		s.sendQ = append(s.sendQ, i)
		s.inFlight++
		s.p.PeakDownstream = max(s.p.PeakDownstream, s.inFlight)
	}
}

// serveDownstream starts the sent calls on free downstream slots; nothing is served before
// the pause ends.
func (s *cascadeSim) serveDownstream(t time.Duration) {
	for len(s.sendQ) > 0 && s.freeSlots > 0 {
		i := s.sendQ[0]
		s.sendQ = s.sendQ[1:]
		s.freeSlots--
		at := max(t, s.c.Pause) + s.c.Service
		k, _ := slices.BinarySearchFunc(s.inService, at, func(e served, at time.Duration) int {
			if e.at <= at {
				return -1
			}
			return 1
		})
		s.inService = slices.Insert(s.inService, k, served{at: at, call: i})
	}
}

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

// WorstCase is the longest a call with a per-attempt timeout and retries can take: a 250 ms
// read timeout with 2 retries is 750 ms, backoffs aside.
func WorstCase(timeout time.Duration, retries int) time.Duration {
	return timeout * time.Duration(retries+1)
}

// StormConns counts the connections a caller opens and closes over calls (in start order)
// through a pool that holds idle connections at the start: a call takes an idle connection
// or dials one; a call that fails (a timeout) closes its connection, one that succeeds
// returns it to the pool before the next call starts. A shed call (shed[i], nil for none)
// takes none. The caller closes first, so every closed connection leaves its socket in
// TIME_WAIT on the caller's side.
func StormConns(calls []BreakerCall, shed []bool, idle int) (dials, closes int) {
	for i, c := range calls {
		if shed != nil && shed[i] {
			continue
		}
		if idle > 0 {
			idle--
		} else {
			dials++
		}
		if c.Fails {
			closes++
		} else {
			idle++
		}
	}
	return dials, closes
}
