package storm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// callRecord is what one call of the storm saw.
type callRecord struct {
	good, first bool
	timedOut    map[int]bool // attempts that timed out
}

// storm runs one policy's storm on a downstream of its own and judges it against the model.
func (s *Storm) storm(ctx context.Context, v variant) ([]results.Row, []results.Call, error) {
	m := s.model(v.p)
	pred, err := m.Predict()
	if err != nil {
		return nil, nil, err
	}
	d, err := newDownstream(s.Capacity, s.Service, nil)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 4096, MaxIdleConns: 4096, IdleConnTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	n := m.Calls()
	recs := make([]callRecord, n)
	gt := v.gate()
	t0 := time.Now().Add(20 * time.Millisecond)
	d.pause(t0.Add(s.Before), t0.Add(s.Before+s.Pause))
	done := make(chan struct{}, n)
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			recs[i] = s.call(ctx, hc, d.URL, gt, i, t0, m.CallAt(i))
		}()
	}
	for range n {
		<-done
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	execs := d.executions()
	// The model takes the service time this machine gave, backlogged requests' cost from
	// one end to the next: a loaded machine's late wake-ups lower the capacity, and a
	// storm near its tipping point feels it.
	if cost := meanCost(execs); cost > m.Service {
		m.Service = cost.Round(100 * time.Microsecond)
		if pred, err = m.Predict(); err != nil {
			return nil, nil, err
		}
	}
	return s.judge(v, m, pred, recs, d.received(), execs, t0), nil, nil
}

// meanCost is the mean cost of the backlogged requests, 0 without any.
func meanCost(execs []execution) time.Duration {
	var sum time.Duration
	n := 0
	for _, e := range execs {
		if e.cost > 0 {
			sum += e.cost
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// call makes call i at its time: its attempts as the gate allows.
func (s *Storm) call(ctx context.Context, hc *http.Client, url string, gt gate, i int, t0 time.Time, at time.Duration) callRecord {
	rec := callRecord{timedOut: map[int]bool{}}
	if !clock.SleepUntil(ctx, t0.Add(at)) {
		return rec
	}
	cg := gt.call(i, time.Since(t0))
	for k := 0; ; k++ {
		o := cg.attempt(func() outcome { return s.attempt(ctx, hc, url, i, k) })
		if o == timedOut {
			rec.timedOut[k] = true
		}
		if o == answered {
			cg.succeeded(k)
			rec.good, rec.first = true, k == 0
			return rec
		}
		wait, again := cg.retry(k, o, time.Since(t0))
		if !again || clock.Sleep(ctx, wait) != nil {
			return rec
		}
	}
}

// attempt sends attempt k of call i with the attempt's timeout.
func (s *Storm) attempt(ctx context.Context, hc *http.Client, url string, i, k int) outcome {
	actx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, fmt.Sprintf("%s/?call=%d&attempt=%d", url, i, k), nil)
	if err != nil {
		return failedAnswer
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return timedOut
		}
		return failedAnswer
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return failedAnswer
	}
	return answered
}

// band is the range a count is judged in: the model's value, give or take a tenth and 3,
// for the instants a loaded machine moves (an answer a few ms past its timeout, a wake-up
// late).
func band(want, border int) (lo, hi int) {
	slack := max(3, want/10) + border
	return max(want-slack, 0), want + slack
}

// borderSlack is how far from a phase's border a request may land on a loaded machine.
const borderSlack = 20 * time.Millisecond

// nearBorders counts the model's requests sent within borderSlack of the pause's start or
// end: a late timer moves them to the other phase.
func nearBorders(m model.Storm, p model.StormPrediction) int {
	n := 0
	for _, a := range p.Attempts {
		for _, b := range []time.Duration{m.PauseAt, m.PauseAt + m.Pause} {
			if !a.Shed && a.Sent > b-borderSlack && a.Sent < b+borderSlack && a.Attempt > 0 {
				n++
			}
		}
	}
	return n
}

// countRow judges a count within its band.
func countRow(name string, want, border int, got int, saw string) results.Row {
	lo, hi := band(want, border)
	why := fmt.Sprintf("the model's %d, give or take a tenth and 3: a timeout and an answer a few ms apart change sides with the machine's timing", want)
	if border > 0 {
		why += fmt.Sprintf(", and the %d requests it sends within %v of a phase's border", border, borderSlack)
	}
	return lab.Judged(name, lab.Executions(results.Count(lo), results.Count(got)),
		lab.ExecutionsUpTo(results.Count(hi), why),
		lab.Saw(saw))
}

// judge turns a storm's measurements into rows beside the model's.
func (s *Storm) judge(v variant, m model.Storm, pred model.StormPrediction, recs []callRecord, received, execs []execution, t0 time.Time) []results.Row {
	name := v.p.Name
	var got [3]model.StormPhase
	for i, r := range recs {
		ph := m.PhaseOf(m.CallAt(i))
		got[ph].Calls++
		if r.good {
			got[ph].Good++
		}
	}
	observed := m.Window + m.Timeout
	wantWasted, gotWasted := 0, 0
	for _, a := range pred.Attempts {
		if !a.Shed && !a.InTime && a.End <= observed {
			wantWasted++
		}
	}
	for _, e := range received {
		got[m.PhaseOf(e.received.Sub(t0))].Requests++
	}
	for _, e := range execs {
		if e.call < len(recs) && recs[e.call].timedOut[e.attempt] && e.end.Sub(t0) <= observed {
			gotWasted++
		}
	}
	var rows []results.Row
	for _, ph := range []struct {
		i    int
		what string
	}{{model.DuringPause, "during the pause"}, {model.AfterPause, "after the pause"}} {
		want := pred.Phases[ph.i]
		r := countRow(fmt.Sprintf("%s: requests received %s (%.2f per call)", name, ph.what, want.Amplification()),
			want.Requests, nearBorders(m, pred), got[ph.i].Requests, fmt.Sprintf("%d calls made, %d requests received", got[ph.i].Calls, got[ph.i].Requests))
		r.ExpectedCalls, r.Calls = want.Calls, got[ph.i].Calls
		rows = append(rows, r)
	}
	after := pred.Phases[model.AfterPause]
	rows = append(rows,
		countRow(fmt.Sprintf("%s: calls answered in time after the pause (of %d)", name, after.Calls), after.Good, 0, got[model.AfterPause].Good, "calls answered within their limit"),
		countRow(fmt.Sprintf("%s: work done for callers that had left, by %v", name, observed), wantWasted, 0, gotWasted, "executions whose attempt had timed out"),
		s.recoveryRow(name, m, pred, recs))
	if m.Service != s.Service {
		for i := range rows {
			rows[i].RangeReason = strings.TrimPrefix(rows[i].RangeReason+"; ", "; ") + fmt.Sprintf("the model at the %v per request this machine gave (%v stated)", m.Service, s.Service)
		}
	}
	tip, err := m.TipOver()
	if err == nil {
		text := "never, up to the capacity"
		if tip > 0 {
			text = fmt.Sprintf("%.0f calls/s (%.0f%% of the capacity)", tip, tip*100*m.Service.Seconds()/float64(m.Capacity))
		}
		rows = append(rows, lab.Judged(fmt.Sprintf("%s: the load at which it no longer recovers: %s", name, text),
			lab.Unmeasured("the model's figure, found by bisection over loads; measuring it would take a storm per load")))
	}
	return rows
}

// recoveryRow judges whether, and when, every call's first attempt is answered in time again
// until the end of the window.
func (s *Storm) recoveryRow(name string, m model.Storm, pred model.StormPrediction, recs []callRecord) results.Row {
	from := len(recs)
	for from > 0 && recs[from-1].first {
		from--
	}
	pauseEnd := m.PauseAt + m.Pause
	gotOutcome, wantOutcome := vocab.ReadTimeout, vocab.ReadTimeout
	if from < len(recs) {
		gotOutcome = vocab.OK
	}
	if pred.Recovered {
		wantOutcome = vocab.OK
	}
	if !pred.Recovered {
		return lab.Judged(fmt.Sprintf("%s: the last calls of the window: still timing out, for good", name), lab.Ended(wantOutcome, gotOutcome),
			lab.Saw(fmt.Sprintf("%d of %d calls answered at their first attempt at the end", len(recs)-from, len(recs))))
	}
	gotAfter := max(m.CallAt(min(from, len(recs)-1))-pauseEnd, 0)
	// A call made a few ms later or earlier than the model's moves the first answered one by
	// a call or two; the margin is a fifth of the pause's queue's drain.
	margin := max(200*time.Millisecond, pred.RecoveredAfter/3)
	return lab.Judged(fmt.Sprintf("%s: recovered, every call answered at once from then on", name),
		lab.Ended(wantOutcome, gotOutcome), lab.LastedD(pred.RecoveredAfter, gotAfter), lab.Within(margin),
		lab.Saw(fmt.Sprintf("from call %d of %d, after the pause's end", from, len(recs))))
}
