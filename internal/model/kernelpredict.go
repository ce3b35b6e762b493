package model

import (
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Predict is the package's Predict with this kernel's give-ups (exp-i, predict --syn-retries);
// several addresses keep SYNGiveUp each.
func (k Kernel) Predict(d Downstream, l Limits, cold bool, queue time.Duration, synRetries, retries2 int) Prediction {
	return predictGiveUp(d, l, cold, queue, k.SYNGiveUp(synRetries), k.DataGiveUp(retries2))
}

// predictGiveUp is Predict with the kernel giving up after syn and data.
func predictGiveUp(d Downstream, l Limits, cold bool, queue time.Duration, syn, data time.Duration) (p Prediction) {
	defer func() { p.TotalMax = max(p.TotalMax, p.Total) }()
	p = Predict(d, l, cold, queue)
	first := p.Attempts[0]
	if len(first.Phases) < 2 { // never left the lease
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

// kernelRace races the kernel's give-up, a limit and the deadline by Predict's tie rules.
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

// hostDownChain replays a call to a one-address down host from its first lease.
func hostDownChain(first Attempt, l Limits, syn, deadline time.Duration) Prediction {
	var p Prediction
	start, t := first.Start, first.Phases[0].End
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
		start, t = next, next
	}
}

// droppedChain replays the first attempt on a dropped connection; Predict plays the retries.
func droppedChain(p Prediction, d Downstream, l Limits, data, deadline time.Duration) Prediction {
	first := p.Attempts[0]
	t := first.Phases[len(first.Phases)-1].Start
	end, out := kernelRace(t, data, limitAt(t, l.ReadTimeout), vocab.ReadTimeout, deadline)
	if end == first.End && out == first.Outcome {
		return p
	}
	a := first
	a.End, a.Outcome = end, out
	a.Phases = append(append([]Span(nil), first.Phases[:len(first.Phases)-1]...), Span{vocab.PhaseWait, t, end})
	q := Prediction{Outcome: out, Total: end, Attempts: []Attempt{a}}
	if out == vocab.Deadline || l.Retries == 0 {
		return q
	}
	next := end + l.Backoff
	if next >= deadline {
		q.Outcome, q.Total = vocab.Deadline, deadline
		return q
	}
	// The retry connects anew: a call with one retry less.
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

// limitAt is t+limit, or Forever when unset.
func limitAt(t, limit time.Duration) time.Duration {
	if limit <= 0 {
		return Forever
	}
	return t + limit
}

func shift(t, d time.Duration) time.Duration {
	if t == Forever {
		return t
	}
	return t + d
}

// HTTP2PingGiveUp is when Go's HTTP/2 Transport drops a silent peer, from the last frame read
// (h2_bundle.go); Forever without sendPing, ping 0 is 15 s.
func HTTP2PingGiveUp(sendPing, ping time.Duration) time.Duration {
	if sendPing <= 0 {
		return Forever
	}
	if ping <= 0 {
		ping = HTTP2DefaultPingTimeout
	}
	return sendPing + ping
}

const HTTP2DefaultPingTimeout = 15 * time.Second

// PeerGone is how a pooled connection's peer went away.
type PeerGone int

const (
	// PeerClosed: a FIN arrived.
	PeerClosed PeerGone = iota
	// PeerReset: a RST arrived.
	PeerReset
	// PeerVanished: nothing arrived.
	PeerVanished
)

// StaleCheckPasses reports whether HttpClient 5's stale check misses the peer's going: it sees
// only a FIN or RST (BHttpConnectionBase.isStale).
func StaleCheckPasses(gone PeerGone) bool { return gone == PeerVanished }

// downConnect ends a connect from t to a down host by the library's rules.Connect.
func (m *sim) downConnect(c int, t time.Duration) (natural, limit time.Duration, kernel vocab.Outcome) {
	l := m.s.Limits
	routes := max(m.s.Downstream.Routes, 1)
	switch l.Rules.Connect.Addresses {
	case rules.FirstAddress, rules.RoutePerAttempt:
		if l.Rules.Connect.ReconnectOnce {
			// PlainHttpConnection.canRetryConnect retries once, under the first timer.
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
		end := t + time.Duration(routes)*each
		if out == vocab.ConnectTimeout {
			return end, end, out
		}
		return end, Forever, out
	}
}

// connectTimerStart is when c's connect timer started (rules.Connect.TimerKeptOnRetry).
func (m *sim) connectTimerStart(c int, t time.Duration) time.Duration {
	as := m.preds[c].Attempts
	if n := len(as); n > 0 && m.s.Limits.Rules.Connect.TimerKeptOnRetry && as[n-1].Outcome == vocab.KernelTimeout && !as[n-1].Sent {
		return as[n-1].Start
	}
	return t
}
