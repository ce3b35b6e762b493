package model

import (
	"math"
	"slices"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// The caller's side of a slow downstream: bounded workers calling through a pool.

// Concurrency is Little's law: calls in progress at rate per second, each held for hold.
func Concurrency(rate float64, hold time.Duration) float64 {
	return rate * hold.Seconds()
}

// PoolSize is QPS x p99 x headroom (1.5 documented) rounded up, at least 1.
func PoolSize(qps float64, p99 time.Duration, headroom float64) int {
	n := math.Ceil(max(qps, 0)*p99.Seconds()*max(headroom, 0) - 1e-9)
	return max(int(n), 1)
}

// Cascade is a caller whose downstream pauses: Requests calls arrive at 0, each takes a worker
// (FIFO), then a pooled connection (FIFO, failing at LeaseTimeout), then the downstream, which
// answers nothing before Pause and then serves each in Service, Capacity at once. A health check
// at each of Health takes a worker for no time.
type Cascade struct {
	Workers      int
	Pool         int
	LeaseTimeout time.Duration
	Requests     int
	Health       []time.Duration
	Pause        time.Duration
	Service      time.Duration
	// Capacity: 0 is unbounded.
	Capacity int
	// Arrivals: each request's start (nil: all at 0).
	Arrivals []time.Duration
}

// CascadeCall is one request of a Cascade.
type CascadeCall struct {
	Outcome vocab.Outcome
	// Worker, Leased (-1: never) and End are when it got a worker, a connection, and freed it.
	Worker, Leased, End time.Duration
}

// CascadePrediction accounts for a Cascade.
type CascadePrediction struct {
	Calls []CascadeCall
	// Health is each check's wait for a worker.
	Health         []time.Duration
	PeakDownstream int
	// Recovered is when the last worker freed.
	Recovered time.Duration
}

// BusyAt counts the workers holding a request at t.
func (p CascadePrediction) BusyAt(t time.Duration) int {
	n := 0
	for _, c := range p.Calls {
		if c.Worker <= t && t < c.End {
			n++
		}
	}
	return n
}

// PendingAt counts the requests waiting for a connection at t.
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

// Count counts the requests ending with o.
func (p CascadePrediction) Count(o vocab.Outcome) int {
	n := 0
	for _, c := range p.Calls {
		if c.Outcome == o {
			n++
		}
	}
	return n
}

// Ends lists, sorted, the ends of the requests ending with o.
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

// Predict simulates the cascade; at one instant answers come first, then health checks, then
// lease timeouts (strict). It panics on Workers or Pool below 1 or negative values.
func (c Cascade) Predict() CascadePrediction {
	if c.Workers < 1 || c.Pool < 1 || c.Requests < 0 || c.Capacity < 0 || c.LeaseTimeout < 0 || c.Pause < 0 || c.Service < 0 ||
		c.Arrivals != nil && len(c.Arrivals) != c.Requests {
		panic("model: Cascade needs Workers and Pool >= 1, no negative count or time, and an arrival per request when any")
	}
	arrive := make([]int, c.Requests)
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

// job is a request (call >= 0) or a health check.
type job struct {
	call   int
	health int
	at     time.Duration
}

type served struct {
	at   time.Duration
	call int
}

type cascadeSim struct {
	c                      Cascade
	freeWorkers, freeConns int
	freeSlots              int
	workerQ                []job
	leaseQ                 []int
	sendQ                  []int
	inService              []served // by answer time, then call
	inFlight               int
	p                      CascadePrediction
}

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

// grantLeases leases connections in order and sends the calls.
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

// serveDownstream starts sent calls on free slots after the pause.
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
