package model

import (
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// A pooled connection that died (pit 6: a pooled connection the server closed, reset or dropped). The connections pooled at the start of a
// call (Scenario.Idle) can have died in two ways the model knows, besides Downstream.Dropped:
//
//   - closed while pooled: the server's keep-alive timeout (Downstream.ServerIdleTimeout) ran out
//     during the client's idle period (Downstream.IdleFor), and it closed them with a FIN;
//   - killed after read: the server reads the next request on one, executes it, then ends the
//     connection without a byte of answer (Downstream.KillAfterRead).
//
// What a client then does is each library's rule, read from its source:
//
//   - Go's net/http reads every idle connection in the background (transport.go, persistConn
//     readLoop and readLoopPeekFailLocked): a FIN closes it at once, so a closed pooled
//     connection is never used. labrun's client built on it does the same unless
//     Limits.ValidateAfterInactivity is set (its zero value, "watch").
//   - HttpClient 5 checks a connection idle longer than validateAfterInactivity with a 1 ms read
//     before leasing it (PoolingHttpClientConnectionManager.lease, BHttpConnectionBase.isStale):
//     a FIN or RST makes it stale, it is discarded and the lease connects anew. A connection
//     idle for less, or every connection when validation is off, is used: the request is
//     written into the dead connection, never read, and the read that follows sees the end of
//     the stream (NoHttpResponseException).
//   - OkHttp checks a pooled connection before reuse with RealConnection.isHealthy; the 1 ms
//     read ("extensive" check) runs only for a method other than GET (3.2.0
//     HttpEngine.connect, 3.14.9 ConnectInterceptor: doExtensiveHealthChecks =
//     !method.equals("GET")). A GET is written into the dead connection and fails.
//   - An evictor (Limits.EvictIdle) closes idle connections before the call sees them.
//
// A killed-after-read connection looks healthy to every check: all libraries use it.

// Kill is how a server ends a connection after reading a request, without answering it.
type Kill string

// The ways to end a connection.
const (
	// KillNone: the server answers.
	KillNone Kill = ""
	// KillClose closes the connection with a FIN: the client reads the end of the stream.
	KillClose Kill = "close"
	// KillReset closes it with an RST (SO_LINGER 0): the client's read fails with "connection
	// reset by peer".
	KillReset Kill = "reset"
)

// NoValidation, as Limits.ValidateAfterInactivity, turns HttpClient 5's stale check off
// (setValidateAfterInactivity with a negative value): a pooled connection that the server
// closed is used. The zero value is not this: it is net/http's background watch.
const NoValidation = rules.NoValidation

// HC5ValidateAfterInactivity is HttpClient 5's default stale-check period: a pooled connection
// idle longer than this is checked before it is leased. ConnectionConfig.DEFAULT leaves it null
// and PoolingHttpClientConnectionManager.resolveValidateAfterInactivity falls back to
// TimeValue.ofSeconds(2) (httpcomponents-client 5.2 to 5.6.x; 5.1 set 2 s in the manager's
// constructor, 5.0 validated nothing).
const HC5ValidateAfterInactivity = rules.HC5ValidateAfterInactivity

// HC5EvictInterval is how often HttpClient 5.6's evictor (HttpClientBuilder.evictIdleConnections
// (maxIdle)) looks for idle connections: IdleConnectionEvictor.calculateSleepTime, maxIdle / 10
// but at least 1 s. (5.0 to 5.5 slept maxIdle itself.) A connection is closed at the first
// check that finds it idle for maxIdle (StrictConnPool.closeIdle: updated <= now - maxIdle), so
// at the latest maxIdle + HC5EvictInterval(maxIdle) after it went idle. Eviction is off unless
// evictIdleConnections is called.
func HC5EvictInterval(maxIdle time.Duration) time.Duration {
	return max(maxIdle/10, time.Second)
}

// stale reports whether the connections pooled at the start were closed by the server during
// the idle period (and not evicted by the client before).
func stale(d Downstream, l Limits) bool {
	if d.ServerIdleTimeout <= 0 || d.IdleFor < d.ServerIdleTimeout {
		return false
	}
	return !evicted(d, l)
}

// evicted reports whether the client closed the pooled connections before the call: at the
// latest EvictIdle + the check interval after they went idle (HttpClient 5's evictor); net/http
// (IdleConnTimeout) and OkHttp (keepAliveDuration, ConnectionPool.cleanup) time each connection
// exactly. The model takes the latest moment: an idle period between EvictIdle and that is
// predicted as not evicted, although an evictor whose check happens to fall early closes it.
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
		// The client closed them; the call connects anew.
	case stale(d, l):
		switch w := l.Rules.Reuse.Watch; {
		case w == rules.WatchAlways:
			return // net/http's read loop, the JDK pool's CleanupTrigger saw the FIN and closed them
		case w == rules.WatchUnlessChecked && l.ValidateAfterInactivity == 0:
			return // net/http saw the FIN and closed them
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
// a 1 ms timeout that times out. OkHttp's RealConnection.isHealthy(true) (3.2.0 and 3.14.9:
// socket.setSoTimeout(1), source.exhausted(); a SocketTimeoutException means healthy) and
// HttpClient 5's BHttpConnectionBase.isStale (fillInputBuffer(Timeout.ofMilliseconds(1))). A
// connection whose end of stream is already there fails the check at once (takeDoomed).
const HealthRead = time.Millisecond

// healthRead is how long the library checks a working pooled connection, idle for idle, before
// the call's request is written on it:
//   - OkHttp (StreamAllocation.findHealthyConnection 3.2.0, ExchangeFinder 3.14.9) checks every
//     connection that carried an exchange (successCount > 0: all pooled ones), with the read
//     for any method but GET (doExtensiveHealthChecks);
//   - HttpClient 5 (PoolingHttpClientConnectionManager.lease) checks a connection idle longer
//     than validateAfterInactivity (Deadline.isExpired is strict);
//   - net/http never reads before reuse: its background read already watches the connection.
//
// OkHttp 4.x reads only on a connection idle for 10 s or more (RealConnection.isHealthy,
// IDLE_CONNECTION_HEALTHY_NS); labrun's okhttp profiles are 3.x.
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

// takeDoomed gives call c's attempt a pooled connection that died, if the library's checks let
// it use one, and reports whether it did. A connection a check finds dead is discarded: the
// attempt goes on with the next one or connects.
func (m *sim) takeDoomed(a *Attempt) bool {
	d, l := m.s.Downstream, m.s.Limits
	if m.stale > 0 {
		switch {
		case l.Rules.Reuse.Check == rules.CheckNonGet && method(d) != "GET":
			m.stale = 0 // isHealthy(true) discards each, findHealthyConnection moves on
			return false
		case l.Rules.Reuse.Check == rules.CheckAfterInactivity && l.ValidateAfterInactivity > 0 && d.IdleFor > l.ValidateAfterInactivity:
			// Deadline.isExpired is strict: idle longer than the period. The stale entry's
			// connection is discarded and the lease connects a new one in its place.
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

// doomedPhases plays the wait of an attempt on a pooled connection that died, from t: the
// request is written, and the read that follows fails at once (the FIN or RST is there).
func (m *sim) doomedPhases(a *Attempt, t time.Duration, c int) (time.Duration, vocab.Outcome) {
	if a.Killed && m.sent[c] < 0 {
		m.sent[c] = t // the server executed it before it ended the connection
	}
	end, out := race(t, vocab.Failed, Forever, "", m.limitOf(c))
	a.Phases = append(a.Phases, Span{vocab.PhaseWait, t, end})
	return end, out
}

// method returns d's method, GET when it is not set. net/http and OkHttp compare it as it is
// ("get" is not GET); HttpClient 5 upper-cases it first (HC5Idempotent).
func method(d Downstream) string {
	if d.Method == "" {
		return "GET"
	}
	return d.Method
}
