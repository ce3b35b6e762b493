package experiments

import (
	"fmt"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// A row is built from its name and the pairs it judges, never field by field: judged(name,
// lasted(...), ended(...), ...). Each judge sets one pair of the row, the model's (or the
// documentation's) value beside the measured one, so that a row cannot carry an expectation
// without the measurement it is judged against, and the wide schema of results.Row stays in
// this file.

// judge sets one judged pair of a row.
type judge func(*results.Row)

// judged returns the row named name with what js judge, in order (a later judge overrides
// an earlier one's fields).
func judged(name string, js ...judge) results.Row {
	r := results.Row{Name: name}
	for _, j := range js {
		if j != nil {
			j(&r)
		}
	}
	return r
}

// lasted judges a time: the model's (nil when it predicts none: a call that hangs, a group it
// did not predict) and the measured one (nil when nothing was measured).
func lasted(want, got *float64) judge {
	return func(r *results.Row) { r.ExpectedMs, r.MeasuredMs = want, got }
}

// lastedD is lasted of two durations, the model's through expectedMs.
func lastedD(want, got time.Duration) judge { return lasted(expectedMs(want), results.Ms(got)) }

// ended judges the outcome: the model's word (or state) and the measured one.
func ended(want, got vocab.Outcome) judge {
	return func(r *results.Row) { r.ExpectedOutcome, r.Outcome = want, got }
}

// numCalls judges the calls the row stands for.
func numCalls(want, got int) judge {
	return func(r *results.Row) { r.ExpectedCalls, r.Calls = want, got }
}

// executions judges how often the server executed the request; a want of nil judges nothing
// the model said.
func executions(want, got *int) judge {
	return func(r *results.Row) { r.ExpectedExecutions, r.ServerExecutions = want, got }
}

// executionsUpTo makes the expected executions the range from their value to max (nil: no
// range), and says why.
func executionsUpTo(max *int, why string) judge {
	return func(r *results.Row) { r.ExpectedExecutionsMax, r.RangeReason = max, why }
}

// connections judges the new connections the client dialled.
func connections(want, got *int) judge {
	return func(r *results.Row) { r.ExpectedNewConnections, r.NewConnections = want, got }
}

// connectionsUpTo makes the expected connections the range from their value to max (nil: no
// range), and says why.
func connectionsUpTo(max *int, why string) judge {
	return func(r *results.Row) { r.ExpectedNewConnectionsMax, r.RangeReason = max, why }
}

// statusIs judges the HTTP status.
func statusIs(want, got *int) judge {
	return func(r *results.Row) { r.ExpectedStatus, r.Status = want, got }
}

// documented sets the documented figure: its text, its time and its executions (nil where it
// has none).
func documentedAs(text string, ms *float64, execs *int) judge {
	return func(r *results.Row) { r.Documented, r.DocumentedMs, r.DocumentedExecutions = text, ms, execs }
}

// because says why a count's expectation is what it is (results.Row.RangeReason).
func because(why string) judge { return func(r *results.Row) { r.RangeReason = why } }

// saw says what the server saw meanwhile.
func saw(note string) judge { return func(r *results.Row) { r.Server = note } }

// skipped marks a row that is not measured here, and why.
func skipped(why string) judge { return func(r *results.Row) { r.Skipped = why } }

// noPool says the row's client had no pooled connection to use.
func noPool() judge { return func(r *results.Row) { r.NoPool = true } }

// called judges one whole call: the model's time and outcome beside the measured ones.
func called(p model.Prediction, res *client.Result) judge {
	return func(r *results.Row) {
		r.ExpectedMs, r.MeasuredMs = expectedMs(p.Total), results.Ms(res.Elapsed)
		r.ExpectedOutcome, r.Outcome = p.Outcome, res.Outcome
		r.ExpectedCalls, r.Calls = 1, 1
	}
}

// stillHung says the measured call still hung when the lab stopped it: no measured time.
func stillHung() judge { return func(r *results.Row) { r.Outcome, r.MeasuredMs = vocab.Hang, nil } }

// attempt judges attempt k of a call: the model's attempt (its end, outcome and whether it
// dialled) beside the measured one; either side is empty where that attempt did not happen.
func attempt(p model.Prediction, res *client.Result, k int) judge {
	return func(r *results.Row) {
		if k < len(p.Attempts) {
			a := p.Attempts[k]
			r.ExpectedMs, r.ExpectedOutcome, r.ExpectedCalls = expectedMs(a.End), a.Outcome, 1
			r.ExpectedNewConnections = results.Count(btoi(a.NewConnection))
		}
		if k < len(res.Attempts) {
			a := res.Attempts[k]
			r.MeasuredMs, r.Outcome, r.Calls = results.Ms(a.End), a.Outcome, 1
			r.NewConnections = results.Count(btoi(a.NewConnection))
		}
	}
}

// batch judges a group of calls the model predicts to end alike (groupCalls): its outcome,
// time and calls beside the measured calls matched to it, their median end and the outcome of
// the first.
func batch(g group, outcomes []vocab.Outcome, ends []time.Duration) judge {
	return func(r *results.Row) {
		r.ExpectedOutcome, r.ExpectedCalls, r.Calls, r.ExpectedMs = g.outcome, g.want, len(g.calls), expectedMs(g.at)
		if len(g.calls) > 0 {
			r.Outcome, r.MeasuredMs = outcomes[g.calls[0]], results.Ms(median(ends, g.calls))
		}
	}
}

// medianEnd judges the calls that ended with outcome o: as many as the model's ends want, at
// the median of want, beside the measured ends got (sorted), their median and range.
func medianEnd(o vocab.Outcome, want, got []time.Duration) judge {
	return func(r *results.Row) {
		r.ExpectedOutcome, r.ExpectedCalls, r.Calls = o, len(want), len(got)
		if len(want) > 0 {
			r.ExpectedMs = expectedMs(want[(len(want)-1)/2])
		}
		if len(got) > 0 {
			r.Outcome, r.MeasuredMs = o, results.Ms(got[(len(got)-1)/2])
			r.Server = fmt.Sprintf("ended %s to %s", fmtMs(got[0]), fmtMs(got[len(got)-1]))
		}
	}
}
