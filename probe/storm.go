package probe

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The storm scenario: the command calls open loop at LABRUN_RATE (docs/probe.md) a
// downstream of stormCapacity servers of stormService each, in FIFO order (upstream.FIFO),
// which pauses for stormPause stormBefore after the first request. The row is the client's
// requests per call, judged against model.Storm with the expected client's retry policy.
const (
	stormRate     = 20
	stormCapacity = 4
	stormService  = 100 * time.Millisecond
	stormBefore   = time.Second
	stormPause    = time.Second
	stormAfter    = 2 * time.Second
	stormWindow   = stormBefore + stormPause + stormAfter
	stormCalls    = stormRate * int(stormWindow/time.Second)
	stormOld      = 3
)

// stormServiceSpread is how much slower or faster than stated the machine may serve a
// request for a while: the counts are judged over the model at each (exp-n's spread).
var stormServiceSpread = []float64{0.98, 1.05, 1.1}

func stormScenario() Scenario {
	return Scenario{Name: "storm", Method: "GET", Calls: stormCalls, Concurrency: 1, Cap: 15 * time.Second, kind: kindStorm,
		rate: stormRate, path: "/storm?scenario=storm",
		Title: fmt.Sprintf("%d calls/s open loop on %d servers of %v in FIFO order, paused %v after %v", stormRate, stormCapacity,
			stormService, stormPause, stormBefore)}
}

// stormSeen is what the FIFO saw: every request received and every one executed.
type stormSeen struct{ received, executed []upstream.Execution }

// observeStorm runs cmd at sc's rate against a fresh FIFO that pauses stormBefore after the
// first request.
func observeStorm(ctx context.Context, cmd Command, sc Scenario) (observation, error) {
	obs := observation{sc: sc}
	d, err := upstream.NewFIFO(stormCapacity, stormService, upstream.FIFOOptions{Record: true})
	if err != nil {
		return obs, err
	}
	defer d.Close()
	// The command is stopped once stormOld requests came without call=: it makes its calls in
	// sequence, as a probe written before LABRUN_RATE does.
	run, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var first time.Time
	old := false
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-run.Done():
				return
			case <-tick.C:
			}
			r := d.Received()
			if len(r) > 0 && first.IsZero() {
				first = r[0].Received
				at := first.Add(stormBefore)
				d.Pause(at, at.Add(stormPause))
			}
			if len(r) >= stormOld && !slices.ContainsFunc(r, func(e upstream.Execution) bool { return e.Call != "" }) {
				old = true
				stopRun()
				return
			}
		}
	}()
	call := Call{URL: d.URL + sc.path, Method: sc.Method, Calls: sc.Calls, Concurrency: sc.Concurrency, Rate: sc.rate}
	obs.exec, err = cmd.run(run, call, sc.Cap)
	stopRun()
	<-watched
	if old && ctx.Err() == nil {
		obs.skipped = "the command does not call at " + EnvRate + " (no call= in its requests' query): its probe predates the storm's protocol (docs/probe.md)"
		return obs, nil
	}
	if err != nil {
		return obs, err
	}
	obs.storm = &stormSeen{received: d.Received(), executed: d.Executions()}
	return obs, nil
}

// stormPolicy is the expected client's retry policy in a storm, and its timeout per attempt
// (the cap's length when it has none).
func stormPolicy(l model.Limits, horizon time.Duration) (rules.RetryPolicy, time.Duration) {
	timeout := horizon
	for _, t := range []time.Duration{l.AttemptTimeout, l.ReadTimeout, l.Deadline} {
		if t > 0 {
			timeout = min(timeout, t)
		}
	}
	r := l.Rules
	class := rules.ClassSocketTimeout
	if timeout == l.AttemptTimeout {
		class = rules.ClassAttemptTimeout
	}
	switch {
	case timeout == l.Deadline && timeout < min(orForever(l.AttemptTimeout), orForever(l.ReadTimeout)):
		return rules.NoRetry(), timeout // the deadline ends the call, retries and all
	case r.Storm != nil:
		p := *r.Storm
		if l.Retries > 0 && r.Retry.On {
			p.Attempts = l.Retries + 1
		}
		return p, timeout
	case r.Retry.On && l.Retries > 0 && r.Retry.Retries(rules.LayerFailure{Class: class, Sent: true, Method: "GET"}):
		b := r.Retry.Backoff
		p := rules.ImmediateRetry(l.Retries)
		p.Backoff = rules.StormBackoff{Base: l.Backoff, Cap: l.BackoffMax, Multiplier: float64(max(b.Mult, 1))}
		switch {
		case l.Backoff == 0:
			p.Backoff = rules.StormBackoff{}
		case b.JitterDown == 100 && b.Noise == 0 && !b.FirstImmediate && !b.AtLeastBase:
			p.Backoff.Jitter = rules.FullJitter
		case b.JitterDown != 0 || b.Noise != 0 || b.FirstImmediate || b.AtLeastBase:
			p.Backoff.Layer = &b
		}
		p.Name = fmt.Sprintf("%d retries, waits %s", l.Retries, stormWaits(p.Backoff, l.Retries))
		return p, timeout
	case r.Resend.Again(rules.Failure{Class: class, Sent: true, Method: "GET"}, 0):
		return rules.ImmediateRetry(r.Resend.Max), timeout
	}
	return rules.NoRetry(), timeout
}

// stormWaits names the waits of n retries, a range where they spread.
func stormWaits(b rules.StormBackoff, n int) string {
	if b.Layer == nil {
		return fmt.Sprintf("%v doubling to %v", b.Base, b.Cap)
	}
	var w []string
	for k := 1; k <= min(n, 4); k++ {
		lo, hi := b.Layer.Wait(k, b.Base, b.Cap)
		if lo == hi {
			w = append(w, lo.String())
		} else {
			w = append(w, lo.String()+" to "+hi.String())
		}
	}
	if n > 4 {
		w = append(w, "...")
	}
	return strings.Join(w, ", ")
}

func orForever(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Duration(math.MaxInt64)
	}
	return d
}

// stormRow judges o against the storm of e's retry policy: the requests received for the
// calls of the window, within the model's band, and whether the first attempts are answered
// in time again by the window's end.
func stormRow(o observation, e Expect) results.Row {
	sc := o.sc
	r := results.Row{Name: sc.Name + ": " + sc.Title, NoPool: true, ExpectedCalls: sc.Calls}
	switch {
	case o.skipped != "":
		r.Skipped = o.skipped
		return r
	case o.storm == nil:
		r.Skipped = "no downstream's record of the storm"
		return r
	}
	p, timeout := stormPolicy(e.limits, sc.horizon())
	m := model.Storm{Rate: float64(sc.rate), Capacity: stormCapacity, Service: stormService, Timeout: timeout,
		PauseAt: stormBefore, Pause: stormPause, Window: stormWindow, Policy: p, Seed: 1}
	var preds []model.StormPrediction
	runs := []model.Storm{m}
	for _, f := range stormServiceSpread {
		t := m
		t.Service = time.Duration(float64(m.Service) * f)
		runs = append(runs, t)
	}
	if p.Backoff.Layer != nil && p.Backoff.Band() {
		// A layer's spread of waits: each service time at the shortest and the longest.
		for _, t := range runs {
			for _, pin := range []rules.Pin{rules.Shortest, rules.Longest} {
				t.Policy.Backoff.Pin = pin
				runs = append(runs, t)
			}
		}
	}
	for _, t := range runs {
		pred, err := t.Predict()
		if err != nil {
			r.Skipped = "the model: " + err.Error()
			return r
		}
		preds = append(preds, pred)
	}
	got, first := stormMeasured(o, m)
	requests := 0
	for _, ph := range got {
		requests += ph.Requests
	}
	r.Calls = callsSeen(o)
	if r.Calls < sc.Calls {
		r.Skipped = fmt.Sprintf("not judged: the command made %s where %s=%d and %s=%g ask for %d, open loop", plural(r.Calls, "call"), EnvCalls, sc.Calls, EnvRate, sc.rate, sc.Calls)
	}
	want := preds[0].Phases[0].Requests + preds[0].Phases[1].Requests + preds[0].Phases[2].Requests
	lo, hi := want, want
	for _, q := range preds[1:] {
		n := q.Phases[0].Requests + q.Phases[1].Requests + q.Phases[2].Requests
		lo, hi = min(lo, n), max(hi, n)
	}
	slack := max(3, want/10)
	r.ExpectedExecutions, r.ExpectedExecutionsMax = results.Count(max(lo-slack, 0)), results.Count(hi+slack)
	r.ServerExecutions = results.Count(requests)
	waits := ""
	if len(runs) > len(stormServiceSpread)+1 {
		waits = ", every wait at its shortest or longest"
	}
	r.RangeReason = fmt.Sprintf("requests received: the model's %d, %d to %d at a service time %g to %g times %v%s, give or take a tenth and 3",
		want, lo, hi, stormServiceSpread[0], stormServiceSpread[len(stormServiceSpread)-1], stormService, waits)
	from, ok := model.RecoveredFrom(first, len(first)/50)
	// The case measured, when a service time of the spread gives it.
	recovered := preds[0].Recovered
	if slices.ContainsFunc(preds, func(q model.StormPrediction) bool { return q.Recovered == ok }) {
		recovered = ok
	}
	r.ExpectedOutcome, r.Outcome = stormOutcome(recovered), stormOutcome(ok)
	s := preds[0]
	r.Server = fmt.Sprintf("%s, a %v timeout per attempt: requests per call before, during and after the pause %s (the model: %s); %s",
		p.Name, timeout, amplifications(got), amplifications(s.Phases), recoveredText(ok, from, len(first)))
	return r
}

// stormMeasured counts what the FIFO saw by the phase each call was made in (call n at
// (n-1)/rate), and says per call whether its first request was answered before its caller
// left.
func stormMeasured(o observation, m model.Storm) ([3]model.StormPhase, []bool) {
	var got [3]model.StormPhase
	first := make([]bool, o.sc.Calls)
	seen := make([]bool, o.sc.Calls)
	for i := range o.sc.Calls {
		got[m.PhaseOf(m.CallAt(i))].Calls++
	}
	done := map[string][]upstream.Execution{}
	for _, e := range o.storm.executed {
		done[e.Call] = append(done[e.Call], e)
	}
	for _, e := range o.storm.received {
		n, err := strconv.Atoi(e.Call)
		if err != nil || n < 1 || n > o.sc.Calls {
			continue
		}
		got[m.PhaseOf(m.CallAt(n-1))].Requests++
		if seen[n-1] {
			continue
		}
		seen[n-1] = true
		for _, x := range done[e.Call] {
			if x.Received.Equal(e.Received) && !x.Left {
				first[n-1] = true
				got[m.PhaseOf(m.CallAt(n-1))].Good++
			}
		}
	}
	return got, first
}

// stormText says whether the storm's first attempts were answered in time again, in words
// that do not move from run to run (the row has the counts).
func stormText(o observation) string {
	if o.storm == nil || len(o.storm.received) == 0 {
		return "no request arrived: the command did not call $" + EnvURL
	}
	_, first := stormMeasured(o, model.Storm{Rate: o.sc.rate, PauseAt: stormBefore, Pause: stormPause})
	if _, ok := model.RecoveredFrom(first, len(first)/50); ok {
		return fmt.Sprintf("%d calls at %g/s; recovered: the calls answered at their first attempt again", len(first), o.sc.rate)
	}
	return fmt.Sprintf("%d calls at %g/s; not recovered: the window's last calls still time out", len(first), o.sc.rate)
}

// callsSeen is how many of the calls asked for sent a request.
func callsSeen(o observation) int {
	seen := map[string]bool{}
	for _, e := range o.storm.received {
		if n, err := strconv.Atoi(e.Call); err == nil && n >= 1 && n <= o.sc.Calls {
			seen[e.Call] = true
		}
	}
	return len(seen)
}

func stormOutcome(recovered bool) vocab.Outcome {
	if recovered {
		return vocab.OK
	}
	return vocab.ReadTimeout
}

func amplifications(ph [3]model.StormPhase) string {
	return fmt.Sprintf("%.2f, %.2f, %.2f", ph[0].Amplification(), ph[1].Amplification(), ph[2].Amplification())
}

func recoveredText(ok bool, from, n int) string {
	if !ok {
		return "not recovered: the window's last calls still time out"
	}
	return fmt.Sprintf("recovered: every call from call %d of %d answered at its first attempt", from+1, n)
}
