package model

import (
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Simulate predicts a scenario's calls through the route's pool, a FIFO lease queue. At one
// instant, in order: connections freed, attempts arriving, waiters cut by the deadline, leases
// granted, lease timeouts. A success returns its connection idle, a failure closes it; a call
// waiting forever ends as Hang at Forever. TotalMax is each call's end in the same scenario
// played with the retry layer's waits at their longest.
func Simulate(s Scenario) []Prediction {
	if s.Calls < 0 || s.Pool < 1 || s.Idle < 0 || s.Limits.Retries < 0 {
		panic("model: Simulate needs Calls >= 0, Pool >= 1, Idle >= 0 and Retries >= 0")
	}
	m := newSim(s)
	m.run()
	var hi *sim
	if rulesOf(s.Limits).Retry.Backoff.Jitter() {
		hi = newSim(s)
		hi.high = true
		hi.run()
	}
	for i := range m.preds {
		m.preds[i].TotalMax = m.preds[i].Total
		if hi != nil {
			m.preds[i].TotalMax = max(m.preds[i].Total, hi.preds[i].Total)
		}
	}
	return m.preds
}

// release frees a leased connection at at.
type release struct {
	at   time.Duration
	keep bool
	dead bool
}

// arrival asks for a lease at at.
type arrival struct {
	at   time.Duration
	call int
}

type sim struct {
	s        Scenario
	deadline time.Duration // Forever when unset

	free     int
	idle     []time.Duration // live idle connections, by idle start, last taken first
	dead     []time.Duration // dropped idle connections
	stale    int
	dying    int
	releases []release
	arrivals []arrival
	queue    []int
	ask      []time.Duration
	sent     []time.Duration
	// Per call: library re-sends, route accounting (rules.Routes) and whether its last dial
	// took the pinned route.
	libRetries []int
	resent     []int
	routes     []rules.Routes
	dialPinned []bool
	// Per call: the business attempt's start (for AttemptTimeout) and business retries.
	attemptStart []time.Duration
	retried      []int
	// The retry quota's tokens (rules.RetryQuota), and per call what its last retry took.
	quota     int
	quotaPaid []int
	high      bool
	preds     []Prediction
}

func newSim(s Scenario) *sim {
	s.Limits.Rules = rulesOf(s.Limits)
	if s.Limits.Rules.Pool.Unbounded {
		s.Pool = max(s.Pool, s.Calls)
	}
	m := &sim{
		s:          s,
		deadline:   Forever,
		free:       s.Pool,
		ask:        make([]time.Duration, s.Calls),
		sent:       make([]time.Duration, s.Calls),
		libRetries: make([]int, s.Calls),
		resent:     make([]int, s.Calls),
		routes:     make([]rules.Routes, s.Calls),
		dialPinned: make([]bool, s.Calls),
		preds:      make([]Prediction, s.Calls),

		attemptStart: make([]time.Duration, s.Calls),
		retried:      make([]int, s.Calls),
		quotaPaid:    make([]int, s.Calls),
	}
	if q := quotaOf(s.Limits); q != nil {
		m.quota = q.Tokens
	}
	for i := range m.sent {
		m.sent[i] = -1
	}
	if s.Limits.Deadline > 0 {
		m.deadline = s.Limits.Deadline
	}
	idle := s.Idle
	if idle > s.Pool {
		idle = s.Pool
	}
	if s.Downstream.HostDown {
		idle = 0
	}
	m.poolAtStart(idle)
	if s.BusyUntil > 0 {
		m.free = 0
		m.idle, m.dead, m.stale, m.dying = nil, nil, 0, 0
		for i := 0; i < s.Pool; i++ {
			m.releases = append(m.releases, release{at: s.BusyUntil, keep: !s.Cold && !s.Downstream.HostDown, dead: s.Downstream.Dropped})
		}
	}
	for i := 0; i < s.Calls; i++ {
		m.arrivals = append(m.arrivals, arrival{at: 0, call: i})
		m.routes[i] = s.Limits.Rules.NewRoutes()
	}
	return m
}

// limitOf is c's deadline, or its attempt timeout if sooner.
func (m *sim) limitOf(c int) time.Duration {
	return min(m.deadline, after(m.attemptStart[c], m.s.Limits.AttemptTimeout))
}

func (m *sim) leaseExpiry(call int) time.Duration {
	exp := m.limitOf(call)
	if lt := m.s.Limits.LeaseTimeout; lt > 0 && !m.s.Limits.Rules.Pool.NoLeaseTimeout && m.ask[call]+lt < exp {
		exp = m.ask[call] + lt
	}
	return exp
}

func (m *sim) next() time.Duration {
	t := Forever
	for _, r := range m.releases {
		t = min(t, r.at)
	}
	for _, a := range m.arrivals {
		t = min(t, a.at)
	}
	for _, c := range m.queue {
		t = min(t, m.leaseExpiry(c))
	}
	return t
}

func (m *sim) run() {
	for {
		t := m.next()
		if t == Forever {
			break
		}
		kept := m.releases[:0]
		for _, r := range m.releases {
			switch {
			case r.at > t:
				kept = append(kept, r)
				continue
			case r.keep && r.dead:
				m.dead = append(m.dead, r.at)
			case r.keep:
				m.idle = append(m.idle, r.at)
			}
			m.free++
		}
		m.releases = kept
		waiting := m.arrivals[:0]
		for _, a := range m.arrivals {
			if a.at > t {
				waiting = append(waiting, a)
				continue
			}
			m.ask[a.call] = a.at
			m.queue = append(m.queue, a.call)
		}
		m.arrivals = waiting
		m.expire(t)
		for m.free > 0 && len(m.queue) > 0 {
			c := m.queue[0]
			m.queue = m.queue[1:]
			m.free--
			m.grant(c, t)
		}
		// Lease timeouts (net/http's pool wait has none).
		if lt := m.s.Limits.LeaseTimeout; lt > 0 && !m.s.Limits.Rules.Pool.NoLeaseTimeout {
			kept := m.queue[:0]
			for _, c := range m.queue {
				if m.ask[c]+lt > t {
					kept = append(kept, c)
					continue
				}
				m.finish(c, Attempt{
					Start: m.ask[c], End: m.ask[c] + lt, Outcome: vocab.LeaseTimeout,
					Phases: []Span{{vocab.PhaseLease, m.ask[c], m.ask[c] + lt}},
				})
			}
			m.queue = kept
		}
	}
	for _, c := range m.queue {
		m.finish(c, Attempt{
			Start: m.ask[c], End: Forever, Outcome: vocab.Hang,
			Phases: []Span{{vocab.PhaseLease, m.ask[c], Forever}},
		})
	}
	m.queue = nil
}

func (m *sim) expire(t time.Duration) {
	kept := m.queue[:0]
	var cut []int
	for _, c := range m.queue {
		if m.limitOf(c) > t {
			kept = append(kept, c)
			continue
		}
		cut = append(cut, c)
	}
	m.queue = kept
	for _, c := range cut {
		limit := m.limitOf(c)
		m.finish(c, Attempt{
			Start: m.ask[c], End: limit, Outcome: vocab.Deadline,
			Phases: []Span{{vocab.PhaseLease, m.ask[c], limit}},
		})
	}
}

func (m *sim) grant(c int, t time.Duration) {
	d := m.s.Downstream
	a := Attempt{Start: m.ask[c], Phases: []Span{{vocab.PhaseLease, m.ask[c], t}}}
	switch {
	case d.HostDown:
		a.NewConnection = true
	case len(m.idle) > 0:
		t = m.check(&a, t, pop(&m.idle))
	case len(m.dead) > 0:
		a.Dropped = true
		t = m.check(&a, t, pop(&m.dead))
	case m.takeDoomed(&a):
		if a.Killed {
			t = m.check(&a, t, -d.IdleFor) // dies once the request is read
		}
	default:
		a.NewConnection = true
		a.Killed = d.KillNew && d.KillAfterRead != KillNone
	}
	if a.NewConnection {
		_, pin := m.routes[c].Next()
		m.dialPinned[c] = pin != ""
	}
	end, out := m.phases(&a, t, c)
	a.End, a.Outcome = end, out
	if end != Forever {
		m.releases = append(m.releases, release{at: end, keep: out == vocab.OK && d.Cut == KillNone})
	}
	m.finish(c, a)
}

func pop(s *[]time.Duration) time.Duration {
	last := (*s)[len(*s)-1]
	*s = (*s)[:len(*s)-1]
	return last
}

// finish records attempt a of c and decides on a retry.
func (m *sim) finish(c int, a Attempt) {
	p := &m.preds[c]
	p.Attempts = append(p.Attempts, a)
	if a.NewConnection {
		p.Connects++
	}
	if a.Executed() && !(m.s.Downstream.Idempotent && p.Executions > 0) {
		p.Executions++
	}
	p.Outcome, p.Total = a.Outcome, a.End
	layer := m.s.Limits.Rules.Retry
	switch {
	case a.Outcome == vocab.OK:
		m.quotaBack(c)
		return
	case a.Outcome == vocab.Hang:
		return
	case a.Outcome == vocab.Deadline && (a.End >= m.deadline || !layer.On):
		return
	}
	if a.End < m.deadline && m.resend(c, a) {
		m.libRetries[c]++
		m.arrivals = append(m.arrivals, arrival{at: a.End, call: c})
		return
	}
	if m.retried[c] >= m.s.Limits.Retries || m.s.Downstream.OneShotBody {
		return
	}
	if layer.On && !layer.Retries(layerFailure(a, m.s.Downstream)) || !m.quotaTake(c, a) {
		return
	}
	// A business retry is a new call: its routes and the library's retries start again.
	m.routes[c], m.resent[c] = m.s.Limits.Rules.NewRoutes(), 0
	m.retried[c]++
	next := Later(a.End, m.wait(m.retried[c]))
	if next >= m.deadline {
		p.Outcome, p.Total = vocab.Deadline, m.deadline
		return
	}
	m.attemptStart[c] = next
	m.arrivals = append(m.arrivals, arrival{at: next, call: c})
}
