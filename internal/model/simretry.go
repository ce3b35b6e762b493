package model

import (
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// wait is the pause before business retry n (from 1), at its longest with m.high.
func (m *sim) wait(n int) time.Duration {
	l := m.s.Limits
	lo, hi := l.Rules.Retry.Backoff.Wait(n, l.Backoff, l.BackoffMax)
	if m.high {
		return hi
	}
	return lo
}

func quotaOf(l Limits) *rules.RetryQuota {
	if l.Rules.Storm == nil || !l.Rules.Retry.On {
		return nil
	}
	return l.Rules.Storm.Quota
}

// quotaTake takes the cost of call c's retry after a from the quota: false when it has too few.
func (m *sim) quotaTake(c int, a Attempt) bool {
	q := quotaOf(m.s.Limits)
	if q == nil {
		return true
	}
	cost := q.Cost(a.Outcome == vocab.ReadTimeout || a.Outcome == vocab.ConnectTimeout || a.Outcome == vocab.Deadline)
	if m.quota < cost {
		return false
	}
	m.quota -= cost
	m.quotaPaid[c] = cost
	return true
}

// quotaBack refunds call c's success: its retry's cost, or the increment of a first attempt's.
func (m *sim) quotaBack(c int) {
	q := quotaOf(m.s.Limits)
	if q == nil {
		return
	}
	back := q.NoRetryIncrement
	if m.retried[c] > 0 {
		back = m.quotaPaid[c]
	}
	m.quota = min(m.quota+back, q.Tokens)
}

// layerFailure is attempt a to d as a retry layer sees it.
func layerFailure(a Attempt, d Downstream) rules.LayerFailure {
	f := rules.LayerFailure{Sent: a.Sent, Method: method(d), InBody: inBody(a)}
	switch {
	case a.Outcome != vocab.Failed:
	case f.InBody:
		f.EOF = d.Cut == KillClose
	case a.Stale:
		f.EOF = true // the server closed the idle connection
	case a.Killed:
		f.EOF = d.KillAfterRead == KillClose
	}
	switch a.Outcome {
	case vocab.Deadline:
		f.Class = rules.ClassAttemptTimeout
	case vocab.ReadTimeout:
		f.Class = rules.ClassSocketTimeout
	case vocab.ConnectTimeout:
		f.Class = rules.ClassConnectTimeout
	case vocab.KernelTimeout:
		f.Class = rules.ClassIO
		if !a.Sent {
			f.Class = rules.ClassConnect
		}
	case vocab.Failed:
		f.Class = rules.ClassIO
	case vocab.DNSError:
		f.Class = rules.ClassUnknownHost
	case vocab.TLSError:
		f.Class = rules.ClassTLS
	default:
		f.Class = rules.ClassFatal
	}
	return f
}
