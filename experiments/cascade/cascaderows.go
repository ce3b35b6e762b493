package cascade

import (
	"fmt"
	"slices"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The rows of exp-l's cascade, the quiz and their production figures.

// cascadeDocs are the documented figures of a cascade variant's count rows.
type cascadeDocs struct{ busy, pending, peak string }

// apply sets the documented figures on the rows of a cascade variant, by their kind.
func (d cascadeDocs) apply(rows []results.Row) {
	for i := range rows {
		var text string
		switch rows[i].Server {
		case cascadeBusy:
			text = d.busy
		case cascadePending:
			text = d.pending
		case cascadePeak:
			text = d.peak
		}
		rows[i].Documented = text
	}
}

// The server notes of the cascade's count rows, which also tell apply which row is which.
const (
	cascadeBusy    = "workers holding a request"
	cascadePending = "requests waiting for a connection"
	cascadePeak    = "the most requests inventory held at once"
)

// workerResult is a call's result as a worker saw it, with when its worker was freed.
type workerResult struct {
	r   *client.Result
	err error
	end time.Duration
}

// cascadeRows turns a cascade variant's model and measurements into rows.
//
// pred is the model at the stated times, every request starting at 0; started the model at the
// requests' measured starts, which the counts at an instant and the peak are judged against
// (they differ only where the machine started requests late, and a count row says so).
func (c *Cascade) cascadeRows(name string, pred, started, production model.CascadePrediction, recs []cascadeRecord, waits, health []time.Duration, peak int) []results.Row {
	// The counts are taken late in the pause: a lease timeout that fires late, or a worker
	// that starts late on a loaded machine, moves a count taken early (at a third of the pause
	// a late lease timeout still holds its worker), while nothing the model predicts happens
	// between the lease timeouts and the pause's end.
	look := c.Pause * 9 / 10
	prod := func(d time.Duration) string { return (d * cascadeScale).String() }
	busy, pending := 0, 0
	for _, r := range recs {
		got := r.leased
		if got < 0 {
			got = r.end
		}
		if r.worker <= look && look < r.end {
			busy++
		}
		if r.worker <= look && look < got {
			pending++
		}
	}
	rows := []results.Row{
		lab.Judged(fmt.Sprintf("%s: workers busy at %v (%s in production)", name, look, prod(look)),
			lab.Calls(started.BusyAt(look), busy), lab.Saw(cascadeBusy), lab.Because(lateStarts(pred.BusyAt(look), started.BusyAt(look)))),
		lab.Judged(fmt.Sprintf("%s: waiting at the pool at %v", name, look),
			lab.Calls(started.PendingAt(look), pending), lab.Saw(cascadePending), lab.Because(lateStarts(pred.PendingAt(look), started.PendingAt(look)))),
	}
	outcomes := map[vocab.Outcome]bool{}
	for _, r := range recs {
		outcomes[r.outcome] = true
	}
	for _, cl := range pred.Calls {
		outcomes[cl.Outcome] = true
	}
	for _, o := range vocab.Outcomes() {
		if !outcomes[o] {
			continue
		}
		want := pred.Ends(o)
		var got []time.Duration
		for _, r := range recs {
			if r.outcome == o {
				got = append(got, r.end)
			}
		}
		slices.Sort(got)
		var label string
		switch o {
		case vocab.OK:
			label = name + ": answered (median end)"
		case vocab.LeaseTimeout:
			label = name + ": no connection in time (median end)"
		default:
			label = fmt.Sprintf("%s: %s (median end)", name, o)
		}
		rows = append(rows, lab.Judged(label, lab.MedianEnd(o, want, got)))
	}
	for j, at := range health {
		rows = append(rows, lab.Judged(fmt.Sprintf("%s: health check at %v waits for a worker (x%d in production: %s)", name, at, cascadeScale, prod(production.Health[j])),
			lab.LastedD(pred.Health[j], waits[j]), lab.Calls(1, 1)))
	}
	var last time.Duration
	for _, r := range recs {
		last = max(last, r.end)
	}
	rows = append(rows,
		lab.Judged(fmt.Sprintf("%s: recovered, the last worker freed (x%d: %s)", name, cascadeScale, prod(production.Recovered)),
			lab.LastedD(pred.Recovered, last), lab.Calls(len(recs), len(recs))),
		lab.Judged(name+": requests on inventory at once, at the peak",
			lab.Calls(started.PeakDownstream, peak), lab.Saw(cascadePeak), lab.Because(lateStarts(pred.PeakDownstream, started.PeakDownstream))),
	)
	return rows
}

// lateStarts says why a count row expects other than the stated times give: "" when the
// requests' measured starts change nothing.
func lateStarts(stated, measured int) string {
	if stated == measured {
		return ""
	}
	return fmt.Sprintf("%d at the stated times, every request starting at once; %d at the requests' measured starts, which this loaded machine spread out", stated, measured)
}
