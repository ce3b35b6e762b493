package model

import (
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// A pooled connection that died (pit 6): closed idle, killed after read or Dropped. Whether the
// client notices is rules.Reuse; one killed after read passes every check.

// Kill is how a server ends a connection after reading a request, unanswered.
type Kill string

const (
	KillNone Kill = ""
	// KillClose sends a FIN.
	KillClose Kill = "close"
	// KillReset sends an RST (SO_LINGER 0).
	KillReset Kill = "reset"
)

// NoValidation turns HttpClient 5's stale check off.
const NoValidation = rules.NoValidation

// HC5ValidateAfterInactivity is HttpClient 5's default stale-check period (5.2 to 5.6).
const HC5ValidateAfterInactivity = rules.HC5ValidateAfterInactivity

// HC5EvictInterval is HttpClient 5.6's evictor period: maxIdle / 10, at least 1 s
// (IdleConnectionEvictor; 5.0 to 5.5 slept maxIdle).
func HC5EvictInterval(maxIdle time.Duration) time.Duration {
	return max(maxIdle/10, time.Second)
}

// stale: the server closed the pooled connections while idle.
func stale(d Downstream, l Limits) bool {
	if d.ServerIdleTimeout <= 0 || d.IdleFor < d.ServerIdleTimeout {
		return false
	}
	return !evicted(d, l)
}

// evicted: the evictor closed them before the call.
func evicted(d Downstream, l Limits) bool {
	if l.EvictIdle <= 0 {
		return false
	}
	var every time.Duration
	if l.Rules.Reuse.PeriodicEvictor {
		every = l.EvictInterval
		if every <= 0 {
			every = HC5EvictInterval(l.EvictIdle)
		}
	}
	return d.IdleFor >= l.EvictIdle+every
}

func (m *sim) poolAtStart(idle int) {
	d, l := m.s.Downstream, m.s.Limits
	switch {
	case d.Dropped:
		for range idle {
			m.dead = append(m.dead, -d.IdleFor)
		}
	case evicted(d, l):
	case stale(d, l):
		switch w := l.Rules.Reuse.Watch; {
		case w == rules.WatchAlways:
			return
		case w == rules.WatchUnlessChecked && l.ValidateAfterInactivity == 0:
			return
		}
		m.stale = idle
	case d.KillAfterRead != KillNone:
		m.dying = idle
	default:
		for range idle {
			m.idle = append(m.idle, -d.IdleFor)
		}
	}
}

// HealthRead is a pooled-connection check: a read with a 1 ms timeout.
const HealthRead = time.Millisecond

// healthRead is the check's time before the request (rules.Reuse.Check).
func (m *sim) healthRead(idle time.Duration) time.Duration {
	d, l := m.s.Downstream, m.s.Limits
	switch l.Rules.Reuse.Check {
	case rules.CheckNonGet:
		if method(d) != "GET" {
			return HealthRead
		}
	case rules.CheckAfterInactivity:
		if l.ValidateAfterInactivity > 0 && idle > l.ValidateAfterInactivity {
			return HealthRead
		}
	}
	return 0
}

// takeDoomed gives the attempt a dead connection the checks miss; one they catch is discarded.
func (m *sim) takeDoomed(a *Attempt) bool {
	d, l := m.s.Downstream, m.s.Limits
	if m.stale > 0 {
		switch {
		case l.Rules.Reuse.Check == rules.CheckNonGet && method(d) != "GET":
			m.stale = 0
			return false
		case l.Rules.Reuse.Check == rules.CheckAfterInactivity && l.ValidateAfterInactivity > 0 && d.IdleFor > l.ValidateAfterInactivity:
			m.stale--
			return false
		}
		m.stale--
		a.Stale = true
		return true
	}
	if m.dying > 0 {
		m.dying--
		a.Killed = true
		return true
	}
	return false
}

// doomedPhases: the request is written and the read fails at once.
func (m *sim) doomedPhases(a *Attempt, t time.Duration, c int) (time.Duration, vocab.Outcome) {
	if a.Killed && m.sent[c] < 0 {
		m.sent[c] = t
	}
	end, out := race(t, vocab.Failed, Forever, "", m.limitOf(c))
	a.Phases = append(a.Phases, Span{vocab.PhaseWait, t, end})
	return end, out
}

func method(d Downstream) string {
	if d.Method == "" {
		return "GET"
	}
	return d.Method
}
