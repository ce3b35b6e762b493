package probe

import (
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Expect is a client the model knows: a profile's rules and limits, and the route's pool.
// The gate (--expect) and the fit both describe a client this way.
type Expect struct {
	// Label says which client it is: "okhttp with read-timeout 1s".
	Label string
	// Pool is the route's connection limit, 0 for none.
	Pool int

	limits model.Limits // the client's limits and rules
}

// expectation is what the model says of one scenario under an Expect, in the server's and
// the protocol's terms. A nil pointer is a figure the model does not give.
type expectation struct {
	skip    string        // why the model says nothing: the row is not judged
	outcome vocab.Outcome // OK (every call got a 2xx), Failed, or Hang (still running at the cap)
	left    *time.Duration
	// fromConnect says that left runs from the TCP connect, not from the request (or the
	// ClientHello): a handshake limit that is a deadline from the connect, as the JDK's.
	fromConnect bool
	// leftAtEnd: the first connection stays until the call ends (an abandoned dial goes on):
	// the whole call is the row's time.
	leftAtEnd  bool
	executions *int
	conns      *int
	span       *time.Duration // kindBurst: first arrival to last answer; kindUnreachable: the call
	// spanMax is span with a retry layer's random waits at their longest, nil without them.
	spanMax *time.Duration
	// total and totalMax are the whole call's time with random waits at their shortest and
	// longest; for a status the waits alone. Nil when the model gives none.
	total, totalMax *time.Duration
}

// clock returns m with its time on x's clock: for a stalled handshake whose expected limit
// runs from the connect (fromConnect), the time from the TCP accept.
func (x expectation) clock(m measures) measures {
	if x.fromConnect && m.leftConnect != nil {
		m.left = m.leftConnect
	}
	return m
}

// predict asks the model what the client of e does in sc.
func (e Expect) predict(sc Scenario) expectation {
	l := e.limits
	horizon := sc.horizon() // past it, the model's call is expected to be cut by the cap
	switch sc.kind {
	case kindTLS, kindLookup:
		x := predictPreFirst(sc, l, horizon)
		if l.Rules.Retry.On && sc.pre.Fault != "" && x.skip == "" {
			// A retry layer's attempts past the cap open no connection the server sees.
			if p, err := model.PredictPreFirst(sc.pre, l); err == nil {
				conns := 0
				for _, a := range p.Attempts {
					if a.NewConnection && a.Start <= horizon {
						conns++
					}
				}
				x.conns = count(conns)
				if p.TotalMax != model.Forever {
					x.total, x.totalMax = &p.Total, &p.TotalMax
				}
				if x.outcome != vocab.Hang && p.TotalMax > horizon && x.skip == "" {
					x.skip = aroundCap
				}
			}
		}
		return x
	case kindFresh, kindCut:
		// The server executes every request and ends its connection (Downstream.KillNew), or
		// cuts its body (Downstream.Cut): what follows is the library's re-send and its retry
		// layer's.
		d := sc.down
		d.Method = sc.Method
		x := expectCall(d, l, horizon, false)
		if !l.Rules.Retry.On {
			// A library's own re-send goes at once: the time is then the client's own work,
			// which the model does not play; a retry layer's back-off is what it tells.
			x.total, x.totalMax = nil, nil
		}
		return x
	case kindStatus:
		// The library's follow-ups, each attempt of its retry layer's (model.FollowUpsLayered).
		res := model.FollowUpsLayered(l, model.FollowRules{RetryOnConnectionFailure: l.Rules.Resend.On},
			model.FollowCall{Method: sc.Method, Answers: []model.Answer{sc.response}})
		x := expectation{outcome: vocab.Failed, total: &res.Waits, totalMax: &res.WaitsMax}
		if res.Outcome == vocab.OK && res.Status/100 == 2 {
			x.outcome = vocab.OK
		}
		sent := 0
		for _, t := range res.Tries {
			if t.Start > horizon {
				x.outcome = vocab.Hang // the cap ends the call in a wait
				break
			}
			sent += t.Sent
		}
		x.executions = count(sent)
		if res.WaitsMax > horizon && res.Waits <= horizon {
			x.skip = aroundCap
		}
		return x
	case kindPooled:
		preds, _ := model.Sequence(1, 0, []model.Call{{Downstream: model.Downstream{Method: sc.Method}, Limits: l}, {Downstream: sc.down, Limits: l}})
		x := expectation{outcome: vocab.OK, executions: count(preds[1].Executions), conns: count(preds[0].Connects + preds[1].Connects)}
		switch {
		case preds[0].Total+sc.Pause+preds[1].Total > horizon:
			x.outcome = vocab.Hang
		case preds[0].Outcome != vocab.OK || preds[1].Outcome != vocab.OK:
			x.outcome = vocab.Failed
		}
		return x
	case kindBurst:
		pool := e.Pool
		if pool <= 0 {
			pool = sc.Concurrency
		}
		preds := model.Simulate(model.Scenario{Calls: sc.Concurrency, Pool: pool, Downstream: sc.down, Limits: l})
		x := expectation{outcome: vocab.OK}
		var execs, conns int
		var last, lastMax time.Duration
		for _, p := range preds {
			execs += p.Executions
			conns += p.Connects
			last, lastMax = max(last, p.Total), max(lastMax, p.TotalMax)
			if p.Outcome != vocab.OK {
				x.outcome = vocab.Failed
			}
		}
		if last > horizon {
			x.outcome = vocab.Hang
		} else {
			// The server counts from the first request's arrival.
			x.span, x.spanMax = band(last-model.ConnectTime, lastMax-model.ConnectTime, horizon, &x)
		}
		x.executions, x.conns = count(execs), count(conns)
		return x
	case kindUnreachable:
		p := model.Predict(sc.down, l, true, 0)
		if p.Total > horizon {
			return expectation{outcome: vocab.Hang, executions: count(0)}
		}
		x := expectation{outcome: vocab.Failed, executions: count(0)}
		x.span, x.spanMax = band(p.Total, p.TotalMax, horizon, &x)
		return x
	}
	// The call's method is the scenario's (the reservation's POST): a retry layer retries by it.
	d := sc.down
	if d.Method == "" {
		d.Method = sc.Method
	}
	return expectCall(d, l, horizon, true)
}

const aroundCap = "the retry layer's random waits end the call around the cap"

// band is a span from lo to hi, the retry layer's random waits at their shortest and longest
// (hi nil when they are not random); a band past horizon says the cap may end the call, which
// x then skips.
func band(lo, hi, horizon time.Duration, x *expectation) (*time.Duration, *time.Duration) {
	if hi <= lo {
		return &lo, nil
	}
	if hi > horizon {
		x.skip = aroundCap
	}
	return &lo, &hi
}

// expectCall is what the model says of one call to d on a new connection, as the server sees
// it before horizon.
func expectCall(d model.Downstream, l model.Limits, horizon time.Duration, timed bool) expectation {
	p := model.Predict(d, l, true, 0)
	x := expectation{outcome: vocab.OK}
	if p.Outcome != vocab.OK {
		x.outcome = vocab.Failed
	}
	if p.Total > horizon {
		x.outcome = vocab.Hang
	}
	// What the server can count before the cap: the attempts sent by then.
	var execs, conns int
	for i, a := range p.Attempts {
		sent, ok := sendTime(a)
		if !ok || sent > horizon {
			continue
		}
		if a.Executed() {
			execs++
		}
		if a.NewConnection {
			conns++
		}
		if timed && i == 0 && a.Outcome != vocab.OK && a.End <= horizon {
			left := a.End - sent
			x.left = &left
		}
	}
	x.executions, x.conns = count(execs), count(conns)
	if p.TotalMax != model.Forever {
		x.total, x.totalMax = &p.Total, &p.TotalMax
	}
	if x.outcome != vocab.Hang && p.TotalMax > horizon {
		x.skip = aroundCap
	}
	return x
}

// sendTime is when the attempt's request left the client: the start of its wait for the
// head. An attempt that never got there was not sent.
func sendTime(a model.Attempt) (time.Duration, bool) {
	if !a.Sent {
		return 0, false
	}
	for _, s := range a.Phases {
		if s.Phase == vocab.PhaseWait {
			return s.Start, true
		}
	}
	return 0, false
}

func count(n int) *int { return &n }

// describe is the label of a client: the profile's name and the limits that differ from the
// preset's.
func describe(name string, l, preset model.Limits, pool, presetPool int) string {
	var parts []string
	add := func(flag string, v, def time.Duration) {
		if v != def {
			parts = append(parts, fmt.Sprintf("%s %v", flag, v))
		}
	}
	add("connect-timeout", l.ConnectTimeout, preset.ConnectTimeout)
	add("read-timeout", l.ReadTimeout, preset.ReadTimeout)
	add("deadline", l.Deadline, preset.Deadline)
	add("attempt-timeout", l.AttemptTimeout, preset.AttemptTimeout)
	if l.Retries != preset.Retries {
		parts = append(parts, fmt.Sprintf("retries %d", l.Retries))
	}
	add("backoff", l.Backoff, preset.Backoff)
	add("backoff-max", l.BackoffMax, preset.BackoffMax)
	lr, pr := l.Rules.Retry, preset.Rules.Retry
	if lr.Backoff.Mult != pr.Backoff.Mult {
		parts = append(parts, fmt.Sprintf("backoff-mult %d", lr.Backoff.Mult))
	}
	if lr.Backoff.JitterDown != pr.Backoff.JitterDown {
		parts = append(parts, fmt.Sprintf("jitter %d", lr.Backoff.JitterDown))
	}
	add("noise", lr.Backoff.Noise, pr.Backoff.Noise)
	if lr.Statuses != pr.Statuses {
		parts = append(parts, "retry-statuses "+lr.Statuses.String())
	}
	if lr.RetryAfter != pr.RetryAfter {
		parts = append(parts, "retry-after-as "+retryAfterWord(lr.RetryAfter))
	}
	if lr.Methods != pr.Methods {
		parts = append(parts, "retry-methods "+predict.RetryMethodsWord(lr.Methods))
	}
	if l.Rules.Resend.On != preset.Rules.Resend.On {
		parts = append(parts, "hc5-retries "+hc5RetriesWord(l.Rules.Resend.On))
	}
	if pool != presetPool {
		parts = append(parts, fmt.Sprintf("pool %d", pool))
	}
	if len(parts) == 0 {
		return name + " at its defaults"
	}
	return name + " with " + strings.Join(parts, ", ")
}

// retryAfterWord is --retry-after-as's word for a Retry-After rule.
func retryAfterWord(r rules.RetryAfter) string {
	switch {
	case !r.Read:
		return "ignore"
	case r.ZeroAbsent:
		return "zero-absent"
	}
	return "exact"
}

// hc5RetriesWord is --hc5-retries' word for HttpClient 5's automatic retries on or off.
func hc5RetriesWord(on bool) string {
	if !on {
		return "none"
	}
	return string(vocab.HC5RetriesDefault)
}
