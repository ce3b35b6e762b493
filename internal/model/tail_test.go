package model

import (
	"math"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/dist"
)

func lognormal(t *testing.T) dist.Dist {
	t.Helper()
	d, err := dist.Parse("lognormal:80ms:0.4")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestTailReadTimeout: a 150 ms read timeout ends 5.8% of the attempts of lognormal:80ms:0.4;
// two retries make 1 + q + q^2 requests per call and leave q^3 of the calls failed.
func TestTailQuestionReadTimeout(t *testing.T) {
	d := lognormal(t)
	a := TailQuestion{Dist: d, Timeout: 150 * ms}.Answer()
	if math.Abs(a.TimedOut-0.058) > 0.001 || a.P50.Round(ms) != 80*ms || a.P99 != 150*ms || a.Executions != 1 {
		t.Errorf("no retry: %+v", a)
	}
	q := a.TimedOut
	r := TailQuestion{Dist: d, Timeout: 150 * ms, Retries: 2}.Answer()
	if math.Abs(r.Executions-(1+q+q*q)) > 1e-9 || math.Abs(r.Failed-q*q*q) > 1e-9 {
		t.Errorf("2 retries: executions %v failed %v, want %v and %v", r.Executions, r.Failed, 1+q+q*q, q*q*q)
	}
	// The p99 call is a retry: 150 ms lost, then an attempt of the distribution.
	if r.P99 <= 150*ms || r.P99 >= 300*ms {
		t.Errorf("2 retries: p99 %v, want between 150 and 300 ms", r.P99)
	}
	if n := (TailQuestion{Dist: d}).Answer(); n.P99.Round(ms) != 203*ms {
		t.Errorf("no timeout: p99 %v, want 203ms", n.P99)
	}
}

// TestTailHedge: hedging at the p95 brings the p99 under the distribution's.
func TestTailQuestionHedging(t *testing.T) {
	d := lognormal(t)
	h := d.Quantile(0.95)
	a := TailQuestion{Dist: d, Hedge: h}.Answer()
	if a.HedgeP99 >= d.Quantile(0.99) || a.HedgeP99 <= h || math.Abs(a.HedgeExecutions-1.05) > 0.001 {
		t.Errorf("hedge at %v: p99 %v, executions %v; want under %v and 1.05", h, a.HedgeP99, a.HedgeExecutions, d.Quantile(0.99))
	}
}

// TestTailDeadlineAndFailures: a deadline ends the calls beyond it; fast failures retried
// cost requests, held ones the timeout.
func TestTailQuestionDeadlineAndFailures(t *testing.T) {
	d := lognormal(t)
	a := TailQuestion{Dist: d, Deadline: 150 * ms}.Answer()
	if math.Abs(a.DeadlineEnded-(1-d.CDF(150*ms))) > 1e-6 || a.P99 != 150*ms {
		t.Errorf("deadline: %+v", a)
	}
	f := TailQuestion{Dist: d, FailRate: 0.1, Retries: 1}.Answer()
	if math.Abs(f.Executions-1.1) > 1e-9 || math.Abs(f.Failed-0.01) > 1e-9 {
		t.Errorf("fast failures: %+v", f)
	}
	h := TailQuestion{Dist: d, FailRate: 0.1, FailHolds: true}.Answer()
	if h.P99 != Forever {
		t.Errorf("held failures without a timeout: p99 %v, want never", h.P99)
	}
	c := TailQuestion{Dist: d, Deadline: 100 * ms, Timeout: 60 * ms, Retries: 3}.Answer()
	if c.Executions >= 1+2*(1-d.CDF(60*ms)) {
		t.Errorf("a deadline of 100 ms leaves room for 2 attempts of 60 ms: executions %v", c.Executions)
	}
}

// TestTailQuestionSharesAddUp: a call is answered, fails on its every attempt, or is ended by
// the deadline, one of the three.
func TestTailQuestionSharesAddUp(t *testing.T) {
	d := lognormal(t)
	for _, q := range []TailQuestion{
		{Dist: d, Deadline: 150 * ms, FailRate: 0.05, FailHolds: true, Timeout: 100 * ms, Retries: 1},
		{Dist: d, Deadline: 400 * ms, FailRate: 0.2, Timeout: 100 * ms, Retries: 3, Backoff: 10 * ms},
	} {
		a := q.Answer()
		fast, slow := q.failures()
		if sum := q.answeredBy(q.Deadline, fast, slow) + a.Failed + a.DeadlineEnded; math.Abs(sum-1) > 1e-9 {
			t.Errorf("%+v: answered + failed + deadline = %v", q, sum)
		}
	}
}

// TestTailQuestionHedgeQuantile: the hedged call's CDF at its p-quantile is p, the p99 is
// Answer's, and a hedge never makes a quantile slower.
func TestTailQuestionHedgeQuantile(t *testing.T) {
	d := lognormal(t)
	q := TailQuestion{Dist: d, Hedge: 100 * ms}
	if got, want := q.HedgeQuantile(0.99), q.Answer().HedgeP99; got != want {
		t.Errorf("HedgeQuantile(0.99) %v, Answer's %v", got, want)
	}
	for _, p := range []float64{0.5, 0.9, 0.99, 0.999} {
		x := q.HedgeQuantile(p)
		if cdf := 1 - (1-d.CDF(x))*(1-d.CDF(x-q.Hedge)); math.Abs(cdf-p) > 1e-4 {
			t.Errorf("p %v: CDF at %v is %v", p, x, cdf)
		}
		if x > q.Quantile(p) {
			t.Errorf("p %v: hedged %v slower than %v", p, x, q.Quantile(p))
		}
	}
}

// TestTailQuestionCostQuantile: no cost is the model's quantile; a fixed cost shifts every
// quantile by itself; costs spread over a range land between their least and greatest shift.
func TestTailQuestionCostQuantile(t *testing.T) {
	q := TailQuestion{Dist: lognormal(t), Hedge: 100 * ms}
	for _, hedged := range []bool{false, true} {
		base := q.Quantile
		if hedged {
			base = q.HedgeQuantile
		}
		for _, p := range []float64{0.5, 0.99} {
			if got, want := q.CostQuantile(p, hedged, nil), base(p); got != want {
				t.Errorf("hedged %v, p %v, no cost: %v, want %v", hedged, p, got, want)
			}
			if got, want := q.CostQuantile(p, hedged, []time.Duration{3 * ms}), base(p)+3*ms; (got - want).Abs() > 2*time.Microsecond {
				t.Errorf("hedged %v, p %v, 3 ms each: %v, want %v", hedged, p, got, want)
			}
			if got := q.CostQuantile(p, hedged, []time.Duration{1 * ms, 2 * ms, 9 * ms}); got <= base(p)+ms || got >= base(p)+9*ms {
				t.Errorf("hedged %v, p %v, 1 to 9 ms: %v, want between %v and %v", hedged, p, got, base(p)+ms, base(p)+9*ms)
			}
		}
	}
}
