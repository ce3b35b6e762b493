package model

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// check plays the library's health-check read in the lease.
func (m *sim) check(a *Attempt, t, since time.Duration) time.Duration {
	if c := m.healthRead(t - since); c > 0 {
		t += c
		a.Phases[0].End = t
		a.Checked = true
	}
	return t
}

// phases plays connect, wait and body from t.
func (m *sim) phases(a *Attempt, t time.Duration, c int) (time.Duration, vocab.Outcome) {
	d, l := m.s.Downstream, m.s.Limits
	if a.NewConnection {
		natural, kernel := t+ConnectTime, vocab.Outcome("")
		limit, limitOut := after(m.connectTimerStart(c, t), l.connectTimer()), vocab.ConnectTimeout
		if d.HostDown {
			natural, limit, kernel = m.downConnect(c, t)
		}
		if rt := m.headLimit(a, t); rt < limit {
			limit, limitOut = rt, vocab.ReadTimeout // the JDK's timeout() runs from the send
		}
		end, out := race(natural, kernel, limit, limitOut, m.limitOf(c))
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
		end, out := race(t+DataGiveUp, vocab.KernelTimeout, after(t, m.readTimeout()), vocab.ReadTimeout, m.limitOf(c))
		a.Phases = append(a.Phases, Span{vocab.PhaseWait, t, end})
		return end, out
	}
	head := Forever
	switch {
	case d.HonoursBudget && m.limitOf(c) != Forever && m.limitOf(c)-t < d.Delay:
		a.Rejected = true
		head = t
	case d.Stall:
	case d.Idempotent && m.sent[c] >= 0:
		head = max(t, m.sent[c]+d.Delay)
	default:
		head = t + d.Delay
	}
	if m.sent[c] < 0 && !a.Rejected {
		m.sent[c] = t
	}
	end, out := race(head, "", m.headLimit(a, t), vocab.ReadTimeout, m.limitOf(c))
	a.Phases = append(a.Phases, Span{vocab.PhaseWait, t, end})
	if out != "" {
		return end, out
	}
	if d.Cut != KillNone && !a.Rejected {
		a.Phases = append(a.Phases, Span{vocab.PhaseBody, head, head})
		if d.Cut == KillClose && l.Rules.Body.ShortOnClose && !d.Chunked {
			return head, vocab.OK
		}
		return head, vocab.Failed
	}
	bodyEnd, readFires := head, Forever
	if d.Every > 0 && d.Bytes > 0 && !a.Rejected {
		bodyEnd = head + time.Duration(d.Bytes)*d.Every
		if rt := m.readTimeout(); rt > 0 && d.Every > rt && !l.Rules.Read.HeadOnly {
			readFires = head + rt
		}
	}
	end, out = race(bodyEnd, "", readFires, vocab.ReadTimeout, m.limitOf(c))
	a.Phases = append(a.Phases, Span{vocab.PhaseBody, head, end})
	if out == "" {
		out = vocab.OK
	}
	return end, out
}

// headLimit is when the read timeout fires waiting for the head: from t, or from the attempt's
// start (rules.Read.FromAttemptStart).
func (m *sim) headLimit(a *Attempt, t time.Duration) time.Duration {
	l := m.s.Limits
	l.ReadTimeout = m.readTimeout()
	if l.Rules.Read.FromAttemptStart {
		return after(a.Start, l.ReadTimeout)
	}
	if a.NewConnection && !a.Sent {
		return Forever
	}
	return after(t, l.ReadTimeout)
}

func after(t, limit time.Duration) time.Duration {
	if limit <= 0 {
		return Forever
	}
	return t + limit
}

// race ends a phase at its natural end (natOut; "": done), its limit or the deadline.
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

// connectTimer is l's connect timeout as the library's timer wheel fires it (rules.Tick.Late).
func (l Limits) connectTimer() time.Duration {
	_, hi := l.Rules.Connect.Tick.Late(l.ConnectTimeout)
	return hi
}

// readTimeout is the read timeout as the library's timer wheel fires it (rules.Tick.Late).
func (m *sim) readTimeout() time.Duration {
	_, hi := m.s.Limits.Rules.Read.Tick.Late(m.s.Limits.ReadTimeout)
	return hi
}
