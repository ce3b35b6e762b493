package experiments

import (
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The rows of this package are built from lab's judges (lab.Judged); batch is the one judge
// that needs this package's grouping of calls.

// batch judges a group of calls the model predicts to end alike (groupCalls): its outcome,
// time and calls beside the measured calls matched to it, their median end and the outcome of
// the first.
func batch(g group, outcomes []vocab.Outcome, ends []time.Duration) lab.Judge {
	return func(r *results.Row) {
		r.ExpectedOutcome, r.ExpectedCalls, r.Calls, r.ExpectedMs = g.outcome, g.want, len(g.calls), lab.ExpectedMs(g.at)
		if len(g.calls) > 0 {
			r.Outcome, r.MeasuredMs = outcomes[g.calls[0]], results.Ms(median(ends, g.calls))
		}
	}
}
