package lab

import (
	"fmt"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// A row is its name and the pairs it judges, Judged(name, Lasted(...), Ended(...), ...): each
// Judge sets an expected value beside the measured one, so a row never carries one without the
// other, and results.Row's wide schema stays in this file.

type Judge func(*results.Row)

// Judged returns the row named name with what js judge, in order.
func Judged(name string, js ...Judge) results.Row {
	r := results.Row{Name: name}
	for _, j := range js {
		if j != nil {
			j(&r)
		}
	}
	return r
}

// Lasted judges a time: the model's (nil: none predicted) and the measured one (nil: none).
func Lasted(want, got *float64) Judge {
	return func(r *results.Row) { r.ExpectedMs, r.MeasuredMs = want, got }
}

func LastedD(want, got time.Duration) Judge { return Lasted(ExpectedMs(want), results.Ms(got)) }

// Ended judges the outcome, or a state.
func Ended(want, got vocab.Outcome) Judge {
	return func(r *results.Row) { r.ExpectedOutcome, r.Outcome = want, got }
}

func Calls(want, got int) Judge {
	return func(r *results.Row) { r.ExpectedCalls, r.Calls = want, got }
}

// Executions judges the server's executions; a nil want judges nothing.
func Executions(want, got *int) Judge {
	return func(r *results.Row) { r.ExpectedExecutions, r.ServerExecutions = want, got }
}

// ExecutionsUpTo makes the expected executions a range up to max, and says why.
func ExecutionsUpTo(max *int, why string) Judge {
	return func(r *results.Row) { r.ExpectedExecutionsMax, r.RangeReason = max, why }
}

// Connections judges the new connections the client dialled.
func Connections(want, got *int) Judge {
	return func(r *results.Row) { r.ExpectedNewConnections, r.NewConnections = want, got }
}

// ConnectionsUpTo makes the expected connections a range up to max, and says why.
func ConnectionsUpTo(max *int, why string) Judge {
	return func(r *results.Row) { r.ExpectedNewConnectionsMax, r.RangeReason = max, why }
}

func Status(want, got *int) Judge {
	return func(r *results.Row) { r.ExpectedStatus, r.Status = want, got }
}

// Documented sets the documented figure: its text, time and executions (nil: none).
func Documented(text string, ms *float64, execs *int) Judge {
	return func(r *results.Row) { r.Documented, r.DocumentedMs, r.DocumentedExecutions = text, ms, execs }
}

// Within judges the row's time within margin, a range the model gives, instead of the
// run's tolerance.
func Within(margin time.Duration) Judge {
	return func(r *results.Row) { r.ToleranceMs = results.Ms(margin) }
}

// Band judges the row's time within a band the model gives, lo to hi, instead of any
// tolerance; why says how the band was drawn.
func Band(lo, hi time.Duration, why string) Judge {
	return func(r *results.Row) {
		r.ExpectedMinMs, r.ExpectedMaxMs, r.RangeReason = results.Ms(lo), results.Ms(hi), why
	}
}

func Because(why string) Judge { return func(r *results.Row) { r.RangeReason = why } }

// Saw says what the server saw.
func Saw(note string) Judge { return func(r *results.Row) { r.Server = note } }

func Skipped(why string) Judge { return func(r *results.Row) { r.Skipped = why } }

// Unmeasured marks a row that could not be measured here: skipped, its measured side empty,
// its expected side kept.
func Unmeasured(why string) Judge {
	return func(r *results.Row) {
		r.Skipped = why
		r.MeasuredMs, r.Outcome, r.Calls, r.Server = nil, "", 0, ""
		r.ServerExecutions, r.NewConnections, r.Status = nil, nil, nil
	}
}

// Called judges one whole call: the model's time and outcome beside the measured ones.
func Called(p model.Prediction, res *client.Result) Judge {
	return func(r *results.Row) {
		r.ExpectedMs, r.MeasuredMs = ExpectedMs(p.Total), results.Ms(res.Elapsed)
		r.ExpectedOutcome, r.Outcome = p.Outcome, res.Outcome
		r.ExpectedCalls, r.Calls = 1, 1
	}
}

// StillHung says the call still hung when the lab stopped it.
func StillHung() Judge { return func(r *results.Row) { r.Outcome, r.MeasuredMs = vocab.Hang, nil } }

// Attempt judges attempt k of a call, the model's beside the measured one; a side is empty
// where that attempt did not happen.
func Attempt(p model.Prediction, res *client.Result, k int) Judge {
	return func(r *results.Row) {
		if k < len(p.Attempts) {
			a := p.Attempts[k]
			r.ExpectedMs, r.ExpectedOutcome, r.ExpectedCalls = ExpectedMs(a.End), a.Outcome, 1
			r.ExpectedNewConnections = results.Count(Btoi(a.NewConnection))
		}
		if k < len(res.Attempts) {
			a := res.Attempts[k]
			r.MeasuredMs, r.Outcome, r.Calls = results.Ms(a.End), a.Outcome, 1
			r.NewConnections = results.Count(Btoi(a.NewConnection))
		}
	}
}

// MedianEnd judges the calls that ended with o: how many, and their median and range beside
// the model's.
func MedianEnd(o vocab.Outcome, want, got []time.Duration) Judge {
	return func(r *results.Row) {
		r.ExpectedOutcome, r.ExpectedCalls, r.Calls = o, len(want), len(got)
		if len(want) > 0 {
			r.ExpectedMs = ExpectedMs(want[(len(want)-1)/2])
		}
		if len(got) > 0 {
			r.Outcome, r.MeasuredMs = o, results.Ms(got[(len(got)-1)/2])
			r.Server = fmt.Sprintf("ended %s to %s", FmtMs(got[0]), FmtMs(got[len(got)-1]))
		}
	}
}

// ExpectedMs is a model time as a row value; a hang has none.
func ExpectedMs(d time.Duration) *float64 {
	if d == model.Forever || d < 0 {
		return nil
	}
	return results.Ms(d)
}

// FmtMs writes whole milliseconds, for the server column.
func FmtMs(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// Btoi is 1 for true.
func Btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ServerNote says what the server saw of one request, in times from its arrival.
func ServerNote(r fakesrv.Request) string {
	if r.Finished.IsZero() {
		return "still busy"
	}
	end := FmtMs(r.Finished.Sub(r.Arrived))
	body := ""
	if r.Behaviour.Bytes > 0 && r.Behaviour.Order == "" {
		body = fmt.Sprintf(", sent %d/%d B", r.BytesSent, r.Behaviour.Bytes)
	}
	switch {
	case r.ClientGone && r.HeadSent.IsZero():
		return "client left at " + end + ", before the head"
	case r.ClientGone:
		return "client left at " + end + body
	case r.HeadSent.IsZero():
		return "closed at " + end + " without an answer"
	default:
		return "head at " + FmtMs(r.HeadSent.Sub(r.Arrived)) + body + ", done at " + end
	}
}

// ReservationNote adds what a reservation did to ServerNote.
func ReservationNote(r fakesrv.Request) string {
	switch {
	case r.Duplicate:
		return "; duplicate, not reserved"
	case r.Reserved:
		return "; reserved"
	}
	return ""
}

// FitBurst fits R + k x c to a burst's sorted times by least squares: the set-up R and the
// cost c per stream, neither below 0.
func FitBurst(t []time.Duration) (setUp, perStream time.Duration) {
	n := float64(len(t))
	if n < 2 {
		return 0, 0
	}
	var sx, sy, sxx, sxy float64
	for k, d := range t {
		x, y := float64(k+1), float64(d)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	c := max((n*sxy-sx*sy)/(n*sxx-sx*sx), 0)
	r := max((sy-c*sx)/n, 0)
	return time.Duration(r), time.Duration(c)
}

func MsOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
