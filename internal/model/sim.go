package model

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// Simulate predicts every call of a scenario: an event simulation of the route's pool with a
// FIFO lease queue. At one instant, events are taken in this order, which fixes the ties:
// connections freed, attempts arriving (first attempts and retries, in call order), waiting
// calls cut by the deadline, leases granted first-come first-served, waiting calls failing on
// the lease timeout. So a connection that frees exactly at a waiter's lease timeout is still
// granted to it (the limit is strict), but never one that frees at its deadline.
//
// A connection freed by a successful attempt returns to the pool idle; a failed attempt
// closes its connection. A call with no limit that waits forever ends as Hang at Forever.
func Simulate(s Scenario) []Prediction {
	if s.Calls < 0 || s.Pool < 1 || s.Idle < 0 || s.Limits.Retries < 0 {
		panic("model: Simulate needs Calls >= 0, Pool >= 1, Idle >= 0 and Retries >= 0")
	}
	m := newSim(s)
	m.run()
	return m.preds
}

// release is a leased connection that frees at a given time.
type release struct {
	at   time.Duration
	keep bool // the connection returns to the pool (else it is closed)
	dead bool // the returned connection was dropped by a middlebox
}

// arrival is an attempt asking for a lease at a given time.
type arrival struct {
	at   time.Duration
	call int
}

type sim struct {
	s        Scenario
	deadline time.Duration // absolute, Forever when not set

	free     int             // lease slots nobody holds
	idle     []time.Duration // idle pooled connections that work: when each went idle, the last taken first
	dead     []time.Duration // idle pooled connections that were silently dropped: when each went idle
	stale    int             // idle pooled connections the server closed (Downstream.ServerIdleTimeout)
	dying    int             // idle pooled connections the server kills after a read (Downstream.KillAfterRead)
	releases []release
	arrivals []arrival
	queue    []int           // calls waiting for a lease, first come first
	ask      []time.Duration // per call: when its current attempt asked for a lease
	sent     []time.Duration // per call: when its first executed request was sent, -1 if none
	// Per call: libRetries counts the attempts that were the library's own re-sends (not
	// business retries); okSelected and okPinned are the route accounting of the current
	// business attempt (okDial, rules.Resend.ByRoute); resent counts the library's re-sends of
	// it.
	libRetries []int
	resent     []int
	okSelected []int
	okPinned   []bool
	preds      []Prediction
}

func newSim(s Scenario) *sim {
	s.Limits.Rules = rulesOf(s.Limits)
	if s.Limits.Rules.Pool.Unbounded {
		s.Pool = max(s.Pool, s.Calls) // no call waits for a connection
	}
	m := &sim{
		s:          s,
		deadline:   Forever,
		free:       s.Pool,
		ask:        make([]time.Duration, s.Calls),
		sent:       make([]time.Duration, s.Calls),
		libRetries: make([]int, s.Calls),
		resent:     make([]int, s.Calls),
		okSelected: make([]int, s.Calls),
		okPinned:   make([]bool, s.Calls),
		preds:      make([]Prediction, s.Calls),
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
		idle = 0 // a host that is down has no live connection
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
	}
	return m
}

func (m *sim) leaseExpiry(call int) time.Duration {
	exp := m.deadline
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
		// Connections freed.
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
		// Attempts arriving, in call order.
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
		// Waiting calls cut by the deadline.
		m.expire(t, m.deadline, vocab.Deadline)
		// Leases granted.
		for m.free > 0 && len(m.queue) > 0 {
			c := m.queue[0]
			m.queue = m.queue[1:]
			m.free--
			m.grant(c, t)
		}
		// Waiting calls failing on the lease timeout (net/http's pool wait has none).
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
	// Calls still waiting for a lease wait forever.
	for _, c := range m.queue {
		m.finish(c, Attempt{
			Start: m.ask[c], End: Forever, Outcome: vocab.Hang,
			Phases: []Span{{vocab.PhaseLease, m.ask[c], Forever}},
		})
	}
	m.queue = nil
}

// expire ends every waiting call whose limit is at or before t.
func (m *sim) expire(t, limit time.Duration, o vocab.Outcome) {
	if limit > t {
		return
	}
	for _, c := range m.queue {
		m.finish(c, Attempt{
			Start: m.ask[c], End: limit, Outcome: o,
			Phases: []Span{{vocab.PhaseLease, m.ask[c], limit}},
		})
	}
	m.queue = m.queue[:0]
}

// grant gives call c a lease at time t and plays the rest of its attempt.
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
		t = m.check(&a, t, pop(&m.dead)) // nothing arrives on a dropped connection either
	case m.takeDoomed(&a):
		if a.Killed {
			t = m.check(&a, t, -d.IdleFor) // it dies only once the request is read
		}
	default:
		a.NewConnection = true
		a.Killed = d.KillNew && d.KillAfterRead != KillNone
	}
	if a.NewConnection && m.s.Limits.Rules.Resend.ByRoute {
		m.okDial(c)
	}
	end, out := m.phases(&a, t, c)
	a.End, a.Outcome = end, out
	if end != Forever {
		m.releases = append(m.releases, release{at: end, keep: out == vocab.OK})
	}
	m.finish(c, a)
}

// pop takes the last of the times in s.
func pop(s *[]time.Duration) time.Duration {
	last := (*s)[len(*s)-1]
	*s = (*s)[:len(*s)-1]
	return last
}

// check plays the library's check of a pooled connection that looks alive at t, idle since
// since: its read waits its whole timeout (HealthRead), counted in the lease. It returns when
// the request can be written.
func (m *sim) check(a *Attempt, t, since time.Duration) time.Duration {
	if c := m.healthRead(t - since); c > 0 {
		t += c
		a.Phases[0].End = t
		a.Checked = true
	}
	return t
}

// phases plays connect, wait and body of call c's attempt from t and returns when and how the
// attempt ended.
func (m *sim) phases(a *Attempt, t time.Duration, c int) (time.Duration, vocab.Outcome) {
	d, l := m.s.Downstream, m.s.Limits
	if a.NewConnection {
		natural, kernel := t+ConnectTime, vocab.Outcome("")
		limit, limitOut := after(m.connectTimerStart(c, t), l.ConnectTimeout), vocab.ConnectTimeout
		if d.HostDown {
			natural, limit, kernel = m.downConnect(c, t)
		}
		if rt := m.headLimit(a, t); rt < limit {
			limit, limitOut = rt, vocab.ReadTimeout // the JDK's timeout() runs from the send, connect included
		}
		end, out := race(natural, kernel, limit, limitOut, m.deadline)
		a.Phases = append(a.Phases, Span{vocab.PhaseConnect, t, end})
		if out != "" {
			return end, out
		}
		t = end
	}
	a.Sent = true
	if a.Stale || a.Killed {
		return m.doomedPhases(a, t, c)
	}
	if a.Dropped {
		end, out := race(t+DataGiveUp, vocab.KernelTimeout, after(t, l.ReadTimeout), vocab.ReadTimeout, m.deadline)
		a.Phases = append(a.Phases, Span{vocab.PhaseWait, t, end})
		return end, out
	}
	head := Forever
	switch {
	case d.HonoursBudget && m.deadline != Forever && m.deadline-t < d.Delay:
		// The server sees too little budget left for its work: it answers at once.
		a.Rejected = true
		head = t
	case d.Stall:
	case d.Idempotent && m.sent[c] >= 0:
		// A repeat gets the first execution's result, when that is ready.
		head = max(t, m.sent[c]+d.Delay)
	default:
		head = t + d.Delay
	}
	if m.sent[c] < 0 && !a.Rejected {
		m.sent[c] = t
	}
	end, out := race(head, "", m.headLimit(a, t), vocab.ReadTimeout, m.deadline)
	a.Phases = append(a.Phases, Span{vocab.PhaseWait, t, end})
	if out != "" {
		return end, out
	}
	bodyEnd, readFires := head, Forever
	if d.Every > 0 && d.Bytes > 0 && !a.Rejected {
		bodyEnd = head + time.Duration(d.Bytes)*d.Every
		if l.ReadTimeout > 0 && d.Every > l.ReadTimeout && !l.Rules.Read.HeadOnly {
			readFires = head + l.ReadTimeout // the first gap is already too long
		}
	}
	end, out = race(bodyEnd, "", readFires, vocab.ReadTimeout, m.deadline)
	a.Phases = append(a.Phases, Span{vocab.PhaseBody, head, end})
	if out == "" {
		out = vocab.OK
	}
	return end, out
}

// headLimit is when the read timeout of attempt a, whose request is sent (or whose connect
// starts) at t, fires in the wait for the head: the read timeout after t, or after the
// attempt's start, connect included, when the library's timer runs from there
// (rules.Read.FromAttemptStart: the JDK's HttpRequest.timeout()).
func (m *sim) headLimit(a *Attempt, t time.Duration) time.Duration {
	l := m.s.Limits
	if l.Rules.Read.FromAttemptStart {
		return after(a.Start, l.ReadTimeout)
	}
	if a.NewConnection && !a.Sent {
		return Forever // only a timer from the attempt's start bounds a connect
	}
	return after(t, l.ReadTimeout)
}

// after returns t+limit, or Forever when the limit is not set.
func after(t, limit time.Duration) time.Duration {
	if limit <= 0 {
		return Forever
	}
	return t + limit
}

// race decides how a phase ends: at its natural end (with outcome natOut, "" meaning the
// phase completed), at its limit (strictly earlier than the natural end) or at the deadline
// (at or before both).
func race(natural time.Duration, natOut vocab.Outcome, limitAt time.Duration, limitOut vocab.Outcome, deadline time.Duration) (time.Duration, vocab.Outcome) {
	switch {
	case natural == Forever && limitAt == Forever && deadline == Forever:
		return Forever, vocab.Hang
	case deadline <= natural && deadline <= limitAt:
		return deadline, vocab.Deadline
	case limitAt < natural:
		return limitAt, limitOut
	default:
		return natural, natOut
	}
}

// finish records attempt a of call c and decides whether the call goes on with a retry.
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
	switch a.Outcome {
	case vocab.OK, vocab.Deadline, vocab.Hang:
		return
	}
	if a.End < m.deadline && m.resend(c, a) {
		m.libRetries[c]++
		m.arrivals = append(m.arrivals, arrival{at: a.End, call: c})
		return
	}
	if len(p.Attempts)-m.libRetries[c] > m.s.Limits.Retries || m.s.Downstream.OneShotBody {
		return
	}
	// A business retry is a new call: its routes and the library's retries start again.
	m.okSelected[c], m.okPinned[c], m.resent[c] = 0, false, 0
	next := a.End + m.s.Limits.Backoff
	if next >= m.deadline {
		p.Outcome, p.Total = vocab.Deadline, m.deadline
		return
	}
	m.arrivals = append(m.arrivals, arrival{at: next, call: c})
}
