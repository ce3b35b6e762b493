package model

import (
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// The model's predictions with a kernel's give-up times in place of the documented ones (exp-i,
// labrun predict --syn-retries and --tcp-retries2), and each library's connect to a host that
// is down (downConnect).

// Predict is Predict with this kernel's give-up times in place of the documented ones: a
// connect to a host that is down gives up after k.SYNGiveUp(synRetries) rather than
// SYNGiveUp, a request on a silently dropped connection after k.DataGiveUp(retries2) rather
// than DataGiveUp (SYNRetries and DataRetries are the documented counts).
//
// Everything else follows Predict's rules, which it calls: the client's limits race the
// kernel, ties going as in Predict (the deadline wins at its instant; a connect or read
// timeout only when strictly earlier). With several addresses (Downstream.Routes > 1) a host
// that is down keeps the documented SYNGiveUp per address: the per-library rules for trying
// them are Predict's.
func (k Kernel) Predict(d Downstream, l Limits, cold bool, queue time.Duration, synRetries, retries2 int) Prediction {
	return predictGiveUp(d, l, cold, queue, k.SYNGiveUp(synRetries), k.DataGiveUp(retries2))
}

// predictGiveUp is Predict with the kernel giving up a connect to a host that is down after
// syn and a request on a dropped connection after data. With SYNGiveUp and DataGiveUp it is
// Predict (a test checks): it replays only the attempts that meet the kernel, and hands the
// attempts after a dropped connection's to Predict.
func predictGiveUp(d Downstream, l Limits, cold bool, queue time.Duration, syn, data time.Duration) (p Prediction) {
	defer func() { p.TotalMax = max(p.TotalMax, p.Total) }() // the kernel's replay has no band of its own
	p = Predict(d, l, cold, queue)
	first := p.Attempts[0]
	if len(first.Phases) < 2 { // it never left the lease: no kernel timer ran
		return p
	}
	deadline := limitAt(0, l.Deadline)
	switch {
	case d.HostDown && max(d.Routes, 1) == 1:
		return hostDownChain(first, l, syn, deadline)
	case d.Dropped && first.Dropped:
		return droppedChain(p, d, l, data, deadline)
	}
	return p
}

// kernelRace says how a phase that only the kernel ends (from t, after giveUp) ends against the
// phase's limit (limitOut at limitAt, Forever when unset) and the deadline: Predict's tie rules.
func kernelRace(t, giveUp, limitAt time.Duration, limitOut vocab.Outcome, deadline time.Duration) (time.Duration, vocab.Outcome) {
	natural := t + giveUp
	switch {
	case deadline <= natural && deadline <= limitAt:
		return deadline, vocab.Deadline
	case limitAt < natural:
		return limitAt, limitOut
	}
	return natural, vocab.KernelTimeout
}

// hostDownChain replays a call to a host that is down at one address, from its first attempt's
// lease: every attempt connects, and the kernel, the connect timeout or the deadline ends it;
// a failed attempt is retried after the backoff while retries and time remain.
func hostDownChain(first Attempt, l Limits, syn, deadline time.Duration) Prediction {
	var p Prediction
	start, t := first.Start, first.Phases[0].End // the first lease may wait for the pool
	for {
		end, out := kernelRace(t, syn, limitAt(t, l.ConnectTimeout), vocab.ConnectTimeout, deadline)
		a := Attempt{Start: start, End: end, Outcome: out, NewConnection: true,
			Phases: []Span{{vocab.PhaseLease, start, t}, {vocab.PhaseConnect, t, end}}}
		p.Attempts, p.Connects = append(p.Attempts, a), p.Connects+1
		p.Outcome, p.Total = out, end
		if out == vocab.Deadline || len(p.Attempts) > l.Retries {
			return p
		}
		next := end + l.Backoff
		if next >= deadline {
			p.Outcome, p.Total = vocab.Deadline, deadline
			return p
		}
		start, t = next, next // the failed attempt closed its connection: the lease is free
	}
}

// droppedChain replays the first attempt of p, on a dropped pooled connection, with the kernel
// giving up after data, and lets Predict play the retries that follow on new connections.
func droppedChain(p Prediction, d Downstream, l Limits, data, deadline time.Duration) Prediction {
	first := p.Attempts[0]
	t := first.Phases[len(first.Phases)-1].Start // the wait on the dead connection
	end, out := kernelRace(t, data, limitAt(t, l.ReadTimeout), vocab.ReadTimeout, deadline)
	if end == first.End && out == first.Outcome {
		return p
	}
	a := first
	a.End, a.Outcome = end, out
	a.Phases = append(append([]Span(nil), first.Phases[:len(first.Phases)-1]...), Span{vocab.PhaseWait, t, end})
	q := Prediction{Outcome: out, Total: end, Attempts: []Attempt{a}} // reused: no connect
	if out == vocab.Deadline || l.Retries == 0 {
		return q
	}
	next := end + l.Backoff
	if next >= deadline {
		q.Outcome, q.Total = vocab.Deadline, deadline
		return q
	}
	// The retry finds the pool empty (the dead connection was closed) and connects anew, as a
	// call of its own with one retry less and what remains of the deadline.
	rest := l
	rest.Retries--
	if l.Deadline > 0 {
		rest.Deadline = l.Deadline - next
	}
	healthy := d
	healthy.Dropped = false
	r := Predict(healthy, rest, true, 0)
	for _, ra := range r.Attempts {
		ra.Start, ra.End = ra.Start+next, shift(ra.End, next)
		for i := range ra.Phases {
			ra.Phases[i] = Span{ra.Phases[i].Phase, ra.Phases[i].Start + next, shift(ra.Phases[i].End, next)}
		}
		q.Attempts = append(q.Attempts, ra)
	}
	q.Outcome, q.Total = r.Outcome, shift(r.Total, next)
	q.Executions, q.Connects = r.Executions, r.Connects
	return q
}

// limitAt is when a limit set at t fires: t+limit, or Forever when it is not set.
func limitAt(t, limit time.Duration) time.Duration {
	if limit <= 0 {
		return Forever
	}
	return t + limit
}

// shift moves a time by d, leaving Forever as it is.
func shift(t, d time.Duration) time.Duration {
	if t == Forever {
		return t
	}
	return t + d
}

// HTTP2PingGiveUp is when Go's HTTP/2 Transport closes a connection whose peer stopped
// answering, counted from the last frame it read, with http.HTTP2Config's SendPingTimeout
// sendPing and PingTimeout ping (x/net/http2's ReadIdleTimeout and PingTimeout). In net/http's
// h2_bundle.go, clientConnReadLoop.run re-arms a timer of SendPingTimeout after every frame
// it reads; when it fires, healthCheck sends a PING and waits PingTimeout (15 s when zero:
// http2setDefault) for the answer; without one, closeForLostPing closes the connection and
// every call on it fails ("http2: client connection lost"). With no SendPingTimeout there is
// no health check: Forever. These are Go timers, not the kernel's: they fire on time.
func HTTP2PingGiveUp(sendPing, ping time.Duration) time.Duration {
	if sendPing <= 0 {
		return Forever
	}
	if ping <= 0 {
		ping = HTTP2DefaultPingTimeout
	}
	return sendPing + ping
}

// HTTP2DefaultPingTimeout is net/http's PingTimeout when HTTP2Config leaves it zero.
const HTTP2DefaultPingTimeout = 15 * time.Second

// PeerGone is how a pooled connection's peer went away.
type PeerGone int

// The ways a peer goes away.
const (
	// PeerClosed: the server closed the connection, and its FIN arrived.
	PeerClosed PeerGone = iota
	// PeerReset: a RST arrived.
	PeerReset
	// PeerVanished: nothing arrived, as from a powered-off host or a firewall or NAT that
	// dropped the connection.
	PeerVanished
)

// StaleCheckPasses reports whether HttpClient 5's stale check (validateAfterInactivity: one
// read that does not wait) finds a connection whose peer went away as gone still healthy: it
// sees a FIN or a RST that arrived, never a silent drop (BHttpConnectionBase.isStale), so it passes
// exactly the connection it was meant to catch.
func StaleCheckPasses(gone PeerGone) bool { return gone == PeerVanished }

// downConnect says how a connect from t to a host that is down ends: when the kernel would give
// up, when the connect limit fires, and the kernel's outcome. HttpClient 5 tries every address
// with the full connect timeout; net/http shares one dial timeout among them (each address
// gets an equal part of what is left, at least 2 s, so a short timeout goes to the first
// address alone); an OkHttp attempt tries one route, the next attempt the next.
func (m *sim) downConnect(c int, t time.Duration) (natural, limit time.Duration, kernel vocab.Outcome) {
	l := m.s.Limits
	routes := max(m.s.Downstream.Routes, 1)
	switch l.Rules.Connect.Addresses {
	case rules.FirstAddress, rules.RoutePerAttempt:
		// One address: NetworkClient.doConnect and PlainHttpConnection connect to an
		// InetSocketAddress (InetAddress.getByName, the first address); an OkHttp attempt
		// dials one route, the next attempt the next.
		if l.Rules.Connect.ReconnectOnce {
			// Connected twice: PlainHttpConnection.canRetryConnect connects again once after a
			// ConnectException (the kernel's ETIMEDOUT) while its connect timer has time left,
			// and MultiExchange's retry of the ConnectException keeps the first connect's
			// timer (connectTimerStart).
			return t + 2*SYNGiveUp, after(m.connectTimerStart(c, t), l.ConnectTimeout), vocab.KernelTimeout
		}
		return t + SYNGiveUp, after(m.connectTimerStart(c, t), l.ConnectTimeout), vocab.KernelTimeout
	case rules.SharedBudget:
		return t + time.Duration(routes)*SYNGiveUp, after(t, l.ConnectTimeout), vocab.KernelTimeout
	default:
		each, out := SYNGiveUp, vocab.KernelTimeout
		if ct := l.ConnectTimeout; ct > 0 && ct < SYNGiveUp {
			each, out = ct, vocab.ConnectTimeout
		}
		// The connect limit fires on the last address; the phase ends when all are tried.
		end := t + time.Duration(routes)*each
		if out == vocab.ConnectTimeout {
			return end, end, out
		}
		return end, Forever, out
	}
}

// connectTimerStart is when the connect timeout of call c's connect starting at t started:
// t, but for a library whose retry of a ConnectException keeps the first connect's timer
// (rules.Connect.TimerKeptOnRetry; the JDK's MultiExchange.getExceptionalCF: "retry, but
// don't reset the connectTimeout").
func (m *sim) connectTimerStart(c int, t time.Duration) time.Duration {
	as := m.preds[c].Attempts
	if n := len(as); n > 0 && m.s.Limits.Rules.Connect.TimerKeptOnRetry && as[n-1].Outcome == vocab.KernelTimeout && !as[n-1].Sent {
		return as[n-1].Start
	}
	return t
}
