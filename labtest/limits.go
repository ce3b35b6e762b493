package labtest

import (
	"cmp"
	"github.com/labrun/labrun/results"
	"slices"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Limits declare your client's configuration in net/http's terms (zero: not set), for
// Row.Expected only: labtest cannot read them off your client.
type Limits struct {
	// ConnectTimeout is net.Dialer.Timeout.
	ConnectTimeout time.Duration
	// HeaderTimeout is Transport.ResponseHeaderTimeout: the head only, never the body.
	HeaderTimeout time.Duration
	// AttemptTimeout is http.Client.Timeout, body included, afresh for each Do.
	AttemptTimeout time.Duration
	// Deadline is a context deadline over the whole call, retries included.
	Deadline time.Duration
	// Retries counts the repeats of a failed attempt by your code; Backoff is the pause before each.
	Retries int
	Backoff time.Duration
	// Pool is Transport.MaxConnsPerHost, for RunConcurrent (0: no limit).
	Pool int
}

// expect chains the model's attempts, each under AttemptTimeout, cut by what Deadline leaves.
func (l Limits) expect(s Scenario) Expectation {
	if !s.modelled {
		return Expectation{Outcome: "", Elapsed: model.Forever}
	}
	var e Expectation
	var t time.Duration
	for attempt := 0; attempt <= l.Retries; attempt++ {
		lim := model.Limits{Rules: rules.GoNet(), ConnectTimeout: l.ConnectTimeout, ReadTimeout: l.HeaderTimeout, Deadline: l.AttemptTimeout}
		last := false
		if l.Deadline > 0 {
			left := l.Deadline - t
			if lim.Deadline == 0 || left <= lim.Deadline {
				lim.Deadline, last = left, true
			}
		}
		p := model.Predict(s.downstream, lim, attempt > 0 && e.Outcome != results.OK, 0)
		e.Attempts++
		e.Executions += p.Executions
		if s.downstream.Idempotent {
			e.Executions = min(e.Executions, 1) // the server executes a repeat once at most
		}
		e.Outcome = p.Outcome
		if p.Total == model.Forever {
			e.Elapsed = model.Forever
			return e
		}
		t = addSat(t, p.Total)
		e.Elapsed = t
		if p.Outcome == vocab.OK || (last && p.Outcome == vocab.Deadline) || attempt == l.Retries || t == Forever {
			return e
		}
		if l.Deadline > 0 && addSat(t, l.Backoff) >= l.Deadline {
			e.Elapsed = l.Deadline
			return e
		}
		t = addSat(t, l.Backoff)
	}
	return e
}

// expectConcurrent predicts n calls through l.Pool connections, in the order they end.
func (l Limits) expectConcurrent(s Scenario, n int) []Expectation {
	if !s.modelled {
		return nil
	}
	pool := l.Pool
	if pool == 0 {
		pool = n
	}
	lim := model.Limits{Rules: rules.GoNet(), ConnectTimeout: l.ConnectTimeout, ReadTimeout: l.HeaderTimeout, Deadline: l.AttemptTimeout}
	preds := model.Simulate(model.Scenario{Calls: n, Pool: pool, Downstream: s.downstream, Limits: lim})
	out := make([]Expectation, len(preds))
	for i, p := range preds {
		out[i] = Expectation{Outcome: p.Outcome, Elapsed: p.Total, Attempts: len(p.Attempts), Executions: p.Executions}
	}
	slices.SortStableFunc(out, func(a, b Expectation) int { return cmp.Compare(a.Elapsed, b.Elapsed) })
	return out
}
