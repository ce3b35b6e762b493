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
	"github.com/labrun/labrun/internal/rules"
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
	stated := pred // at the stated service time: the rows' names, which must not move
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
	preds, err := spread(m, pred)
	if err != nil {
		return nil, nil, err
	}
	received := d.received()
	return s.judge(v, m, stated, preds, recs, received, execs, t0), timeline(v.p.Name, recs, received, execs, t0, m.Window+m.Timeout), nil
}

// timeline draws every request the downstream received as a stream of one lane, stacked: the
// lane's height is the requests queued and served at each instant, its waits the queue, its
// bodies the servers' work, red where the caller had left. A storm that stays is a lane that
// stays full after the pause.
func timeline(name string, recs []callRecord, received, execs []execution, t0 time.Time, observed time.Duration) []results.Call {
	type key struct{ call, attempt int }
	done := map[key]execution{}
	for _, e := range execs {
		done[key{e.call, e.attempt}] = e
	}
	lane := name + lab.LaneSep + "requests at the downstream (stacked: queued, then served)"
	calls := make([]results.Call, 0, len(received))
	for _, r := range received {
		if r.call < 0 || r.call >= len(recs) {
			continue
		}
		start := r.received.Sub(t0)
		o := vocab.OK
		if recs[r.call].timedOut[r.attempt] {
			o = vocab.ReadTimeout
		}
		a := results.Attempt{StartMs: *results.Ms(start), Outcome: o, Executed: true}
		e, ok := done[key{r.call, r.attempt}]
		wait, body := observed-start, time.Duration(0)
		if ok {
			wait, body = e.start.Sub(r.received), e.end.Sub(e.start)
		}
		a.Phases = []results.PhaseSpan{{Phase: vocab.PhaseWait, Ms: results.Ms(max(wait, 0))}}
		if ok {
			a.Phases = append(a.Phases, results.PhaseSpan{Phase: vocab.PhaseBody, Ms: results.Ms(body)})
		}
		end := a.StartMs
		for _, p := range a.Phases {
			end += *p.Ms
		}
		a.EndMs = &end
		calls = append(calls, results.Call{Label: lane, Attempts: []results.Attempt{a}})
	}
	return calls
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

// serviceSpread is how much slower or faster than it gave the machine may serve a request
// for a while: the counts are judged over the model at the service time times each.
var serviceSpread = []float64{0.98, 1.05, 1.1}

// spread is the model at the service times serviceSpread gives around m's, m's own first.
func spread(m model.Storm, pred model.StormPrediction) ([]model.StormPrediction, error) {
	preds := []model.StormPrediction{pred}
	for _, f := range serviceSpread {
		t := m
		t.Service = time.Duration(float64(m.Service) * f)
		p, err := t.Predict()
		if err != nil {
			return nil, err
		}
		preds = append(preds, p)
	}
	return preds, nil
}

// countRow judges a count within its band: the model's values over the service spread, give
// or take a tenth and 3.
func countRow(name string, preds []model.StormPrediction, count func(model.StormPrediction) int, got int, saw string) results.Row {
	want := count(preds[0])
	lo, hi := want, want
	for _, p := range preds[1:] {
		lo, hi = min(lo, count(p)), max(hi, count(p))
	}
	slack := max(3, want/10)
	lo, hi = max(lo-slack, 0), hi+slack
	why := fmt.Sprintf("the model's %d; %d to %d at a service time %g to %g times it; give or take a tenth and 3: a timeout and an answer a few ms apart change sides with the machine's timing",
		want, lo+slack, hi-slack, serviceSpread[0], serviceSpread[len(serviceSpread)-1])
	return lab.Judged(name, lab.Executions(results.Count(lo), results.Count(got)),
		lab.ExecutionsUpTo(results.Count(hi), why), lab.Saw(saw))
}

// judge turns a storm's measurements into rows beside the model's.
func (s *Storm) judge(v variant, m model.Storm, stated model.StormPrediction, preds []model.StormPrediction, recs []callRecord, received, execs []execution, t0 time.Time) []results.Row {
	name, pred := v.p.Name, preds[0]
	var got [3]model.StormPhase
	for i, r := range recs {
		ph := m.PhaseOf(m.CallAt(i))
		got[ph].Calls++
		if r.good {
			got[ph].Good++
		}
	}
	observed := m.Window + m.Timeout
	wasted := func(p model.StormPrediction) int {
		n := 0
		for _, a := range p.Attempts {
			if !a.Shed && !a.InTime && a.End <= observed {
				n++
			}
		}
		return n
	}
	gotWasted := 0
	for _, e := range received {
		if e.call >= 0 && e.call < len(recs) {
			got[m.PhaseOf(m.CallAt(e.call))].Requests++
		}
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
		r := countRow(fmt.Sprintf("%s: requests received for the calls made %s (%.2f per call)", name, ph.what, stated.Phases[ph.i].Amplification()),
			preds, func(p model.StormPrediction) int { return p.Phases[ph.i].Requests }, got[ph.i].Requests, fmt.Sprintf("%d calls made, %d requests received", got[ph.i].Calls, got[ph.i].Requests))
		r.ExpectedCalls, r.Calls = want.Calls, got[ph.i].Calls
		rows = append(rows, r)
	}
	after := pred.Phases[model.AfterPause]
	rows = append(rows,
		countRow(fmt.Sprintf("%s: calls answered in time after the pause (of %d)", name, after.Calls), preds, func(p model.StormPrediction) int { return p.Phases[model.AfterPause].Good }, got[model.AfterPause].Good, "calls answered within their limit"),
		countRow(fmt.Sprintf("%s: work done for callers that had left, by %v", name, observed), preds, wasted, gotWasted, "executions whose attempt had timed out"),
		s.recoveryRow(name, m, stated, preds, recs))
	if stated.Drained {
		rows = append(rows, s.drainRow(v.p, m, preds, received, execs, t0))
	}
	if m.Service != s.Service {
		for i := range rows {
			rows[i].RangeReason = strings.TrimPrefix(rows[i].RangeReason+"; ", "; ") + fmt.Sprintf("the model at the %v per request this machine gave (%v stated)", m.Service, s.Service)
		}
	}
	tip, err := s.model(v.p).TipOver()
	if err == nil {
		text := "never, up to the capacity"
		if tip > 0 {
			text = fmt.Sprintf("%.0f calls/s (%.0f%% of the capacity)", tip, tip*100*s.Service.Seconds()/float64(s.Capacity))
		}
		rows = append(rows, lab.Judged(fmt.Sprintf("%s: the load at which it no longer recovers: %s", name, text),
			lab.Unmeasured("the model's figure, found by bisection over loads; measuring it would take a storm per load")))
	}
	return rows
}

// drainRow judges when the queue the pause left is gone: the first request received after the
// pause that a server took at once (within a tenth of the service time: a loaded machine's
// hand-off is not a queue).
func (s *Storm) drainRow(p rules.RetryPolicy, m model.Storm, preds []model.StormPrediction, received, execs []execution, t0 time.Time) results.Row {
	pauseEnd := m.PauseAt + m.Pause
	type key struct{ call, attempt int }
	started := map[key]execution{}
	for _, e := range execs {
		started[key{e.call, e.attempt}] = e
	}
	var got *float64
	first := time.Duration(-1)
	for _, r := range received {
		at := r.received.Sub(t0)
		e, ok := started[key{r.call, r.attempt}]
		if ok && at >= pauseEnd && e.start.Sub(e.received) < m.Service/10 && (first < 0 || at < first) {
			first = at
		}
	}
	if first >= 0 {
		got = results.Ms(first - pauseEnd)
	}
	pred := spreadCase(preds, got != nil, func(p model.StormPrediction) bool { return p.Drained })
	var margin time.Duration
	for _, q := range preds {
		if !q.Drained {
			q.DrainedAfter = m.Window + m.Timeout - pauseEnd
		}
		margin = max(margin, q.DrainedAfter-pred.DrainedAfter, pred.DrainedAfter-q.DrainedAfter)
	}
	// Without retries the queue is the pause's calls, drained at the capacity less the load.
	left := float64(s.Rate) * s.Pause.Seconds()
	drain := time.Duration(left / (float64(s.Capacity)/s.Service.Seconds() - float64(s.Rate)) * float64(time.Second))
	what, name := "", p.Name
	if drain > 0 && p.TotalAttempts() == 1 {
		what = fmt.Sprintf(" (queue / (capacity - load): %v)", drain.Round(time.Millisecond))
	}
	wantOutcome, gotOutcome := outcomeOf(pred.Drained), outcomeOf(got != nil)
	timed := lab.Lasted(nil, nil)
	if pred.Drained {
		timed = lab.Lasted(lab.ExpectedMs(pred.DrainedAfter), got)
	}
	return lab.Judged(fmt.Sprintf("%s: the pause's queue gone, a request served at once%s", name, what),
		lab.Ended(wantOutcome, gotOutcome), timed, lab.Within(margin+250*time.Millisecond),
		lab.Saw("the first request received after the pause that a server took at once (read-timeout: none)"))
}

// recoveryRow judges whether, and when, every call's first attempt is answered in time again
// until the end of the window.
func (s *Storm) recoveryRow(name string, m model.Storm, stated model.StormPrediction, preds []model.StormPrediction, recs []callRecord) results.Row {
	first := make([]bool, len(recs))
	for i, r := range recs {
		first[i] = r.first
	}
	late := len(recs) / 50
	from, ok := model.RecoveredFrom(first, late)
	pauseEnd := m.PauseAt + m.Pause
	pred := spreadCase(preds, ok, func(p model.StormPrediction) bool { return p.Recovered })
	wantOutcome, gotOutcome := outcomeOf(pred.Recovered), outcomeOf(ok)
	saw := lab.Saw(fmt.Sprintf("from call %d of %d, after the pause's end (%d of them answered at their first attempt at the end)", from, len(recs), len(recs)-from))
	label := fmt.Sprintf("%s: recovered, every call answered at its first attempt from then on (measured: but for %d late)", name, late)
	if !stated.Recovered {
		label = fmt.Sprintf("%s: the last calls of the window: still timing out, for good", name)
	}
	if !pred.Recovered {
		return lab.Judged(label, lab.Ended(wantOutcome, gotOutcome), saw)
	}
	// The margin is the model's own spread over the service times, and 250 ms: a call made a
	// few ms late moves the first one answered by a call or two.
	var margin time.Duration
	for _, p := range preds {
		if !p.Recovered {
			p.RecoveredAfter = m.Window - pauseEnd
		}
		margin = max(margin, p.RecoveredAfter-pred.RecoveredAfter, pred.RecoveredAfter-p.RecoveredAfter)
	}
	gotAfter := max(m.CallAt(min(from, len(recs)-1))-pauseEnd, 0)
	return lab.Judged(label, lab.Ended(wantOutcome, gotOutcome), lab.LastedD(pred.RecoveredAfter, gotAfter),
		lab.Within(margin+250*time.Millisecond), saw)
}

// spreadCase is the first model of the spread (the run's own first) whose case (recovered,
// drained: has) is the measured one, got; the run's own when none is.
func spreadCase(preds []model.StormPrediction, got bool, has func(model.StormPrediction) bool) model.StormPrediction {
	for _, p := range preds {
		if has(p) == got {
			return p
		}
	}
	return preds[0]
}

// outcomeOf is the word of a case: ok when it came, read-timeout when calls still time out.
func outcomeOf(came bool) vocab.Outcome {
	if came {
		return vocab.OK
	}
	return vocab.ReadTimeout
}
