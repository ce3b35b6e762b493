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
	// Arrivals, when set (one per request, in request order), is when each request asks for
	// a worker; without it every request asks at 0. A run on a loaded machine passes the times
	// its requests really asked, so that the model says what those starts should have led to.
	Arrivals []time.Duration
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
	if c.Workers < 1 || c.Pool < 1 || c.Requests < 0 || c.Capacity < 0 || c.LeaseTimeout < 0 || c.Pause < 0 || c.Service < 0 ||
		c.Arrivals != nil && len(c.Arrivals) != c.Requests {
		panic("model: Cascade needs Workers and Pool >= 1, no negative count or time, and an arrival per request when any")
	}
	arrive := make([]int, c.Requests) // the requests in arrival order, those at 0 first
	for i := range arrive {
		arrive[i] = i
	}
	at := func(i int) time.Duration {
		if c.Arrivals == nil {
			return 0
		}
		return max(c.Arrivals[i], 0)
	}
	slices.SortStableFunc(arrive, func(a, b int) int { return cmpDuration(at(a), at(b)) })
	s := cascadeSim{c: c, freeWorkers: c.Workers, freeConns: c.Pool, freeSlots: c.Capacity}
	if c.Capacity == 0 {
		s.freeSlots = math.MaxInt
	}
	s.p.Calls = make([]CascadeCall, c.Requests)
	s.p.Health = make([]time.Duration, len(c.Health))
	for i := range s.p.Calls {
		s.p.Calls[i].Leased = -1
	}
	for len(arrive) > 0 && at(arrive[0]) == 0 {
		s.workerQ = append(s.workerQ, job{call: arrive[0]})
		arrive = arrive[1:]
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
		if len(arrive) > 0 {
			t = min(t, at(arrive[0]))
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
		for len(arrive) > 0 && at(arrive[0]) == t {
			s.workerQ = append(s.workerQ, job{call: arrive[0]})
			arrive = arrive[1:]
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
