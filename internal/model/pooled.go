package model

import (
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// A pooled connection that died (pit 6). Besides Downstream.Dropped, the connections pooled at
// the start can have been closed while pooled (ServerIdleTimeout ran out during IdleFor: a FIN)
// or be killed after read (KillAfterRead). What the client then does is its library's rule:
//
//   - net/http watches idle connections in the background (transport.go readLoop): a FIN closes
//     one at once, so it is never used; so does labrun's client unless ValidateAfterInactivity
//     is set.
//   - HttpClient 5 checks a connection idle longer than validateAfterInactivity with a 1 ms read
//     before leasing it (BHttpConnectionBase.isStale) and discards a stale one; otherwise the
//     request is written into the dead connection and fails (NoHttpResponseException).
//   - OkHttp's isHealthy reads only for a method other than GET (doExtensiveHealthChecks): a
//     GET is written into the dead connection and fails.
//   - An evictor (Limits.EvictIdle) closes idle connections before the call sees them.
//
// A killed-after-read connection passes every check: all libraries use it.

// Kill is how a server ends a connection after reading a request, without answering it.
type Kill string

const (
	// KillNone: the server answers.
	KillNone Kill = ""
	// KillClose closes the connection with a FIN: the client reads the end of the stream.
	KillClose Kill = "close"
	// KillReset closes it with an RST (SO_LINGER 0): "connection reset by peer".
	KillReset Kill = "reset"
)

// NoValidation, as Limits.ValidateAfterInactivity, turns HttpClient 5's stale check off; the
// zero value is net/http's background watch, not this.
const NoValidation = rules.NoValidation

// HC5ValidateAfterInactivity is HttpClient 5's default stale-check period
// (PoolingHttpClientConnectionManager.resolveValidateAfterInactivity, 5.2 to 5.6).
const HC5ValidateAfterInactivity = rules.HC5ValidateAfterInactivity

// HC5EvictInterval is how often HttpClient 5.6's evictor checks: maxIdle / 10, at least 1 s
// (IdleConnectionEvictor.calculateSleepTime; 5.0 to 5.5 slept maxIdle), so a connection
// closes at most maxIdle + HC5EvictInterval(maxIdle) after it went idle.
func HC5EvictInterval(maxIdle time.Duration) time.Duration {
	return max(maxIdle/10, time.Second)
}

// stale reports whether the server closed the pooled connections during the idle period.
func stale(d Downstream, l Limits) bool {
	if d.ServerIdleTimeout <= 0 || d.IdleFor < d.ServerIdleTimeout {
		return false
	}
	return !evicted(d, l)
}

// evicted reports whether the client closed the pooled connections before the call, taking
// the evictor's latest check; net/http and OkHttp time each connection exactly.
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

// poolAtStart sorts the idle connections at the start of a scenario by what happened to them.
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

// HealthRead is how long a library's check of a working pooled connection takes: a read with
// a 1 ms timeout that times out (OkHttp's isHealthy(true), HttpClient 5's isStale).
const HealthRead = time.Millisecond

// healthRead is how long the library checks a working pooled connection idle for idle: OkHttp
// every one, for any method but GET; HttpClient 5 one idle longer than validateAfterInactivity
// (strictly); net/http never (OkHttp 4.x, which reads only after 10 s idle, is not profiled).
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

// takeDoomed gives c's attempt a dead pooled connection if the library's checks let it use one,
// and reports whether it did; one a check finds dead is discarded.
func (m *sim) takeDoomed(a *Attempt) bool {
	d, l := m.s.Downstream, m.s.Limits
	if m.stale > 0 {
		switch {
		case l.Rules.Reuse.Check == rules.CheckNonGet && method(d) != "GET":
			m.stale = 0
			return false
		case l.Rules.Reuse.Check == rules.CheckAfterInactivity && l.ValidateAfterInactivity > 0 && d.IdleFor > l.ValidateAfterInactivity:
			// Idle longer than the period (strict): discarded, and the lease connects anew.
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

// doomedPhases plays an attempt on a dead pooled connection from t: the request is written and
// the read fails at once.
func (m *sim) doomedPhases(a *Attempt, t time.Duration, c int) (time.Duration, vocab.Outcome) {
	if a.Killed && m.sent[c] < 0 {
		m.sent[c] = t
	}
	end, out := race(t, vocab.Failed, Forever, "", m.limitOf(c))
	a.Phases = append(a.Phases, Span{vocab.PhaseWait, t, end})
	return end, out
}

// method returns d's method, GET when unset; HttpClient 5 upper-cases it (HC5Idempotent).
func method(d Downstream) string {
	if d.Method == "" {
		return "GET"
	}
	return d.Method
}
