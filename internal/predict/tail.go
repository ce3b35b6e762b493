package predict

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/labrun/labrun/internal/dist"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/results"
)

// TailQuestion is labrun predict's tail question, asked with --delay-dist or --fail-rate:
// a downstream whose delay follows DelayDist and which fails FailRate of the requests as
// Fail says (labrun serve's keys of the same names), under the call's --read-timeout,
// --deadline, --retries and --backoff, and a hedge after Hedge. Requests is the seeded
// sample: the numbers 1 to Requests of --seed that fail, or that the timeout ends.
type TailQuestion struct {
	DelayDist string
	FailRate  string
	Fail      string
	Requests  int
	Hedge     time.Duration
}

// TailFlags are the tail question's own flags, and the call's flags it reads besides --seed.
var (
	TailFlags     = []string{"delay-dist", "fail-rate", "fail", "requests", "hedge"}
	tailCallFlags = []string{"read-timeout", "deadline", "retries", "backoff"}
)

// On says whether the tail question is asked.
func (q TailQuestion) On() bool { return q.DelayDist != "" || q.FailRate != "" }

// TailParams lists the tail question's parameters.
func (p *Predictor) TailParams() []param.Param {
	q := &p.Tail
	return []param.Param{
		{Name: "delay-dist", Usage: "the tail question: the server's delays (" + dist.Grammar + ")", String: &q.DelayDist},
		{Name: "fail-rate", Usage: "the tail question: the share of requests the server fails (0 to 1)", String: &q.FailRate},
		{Name: "fail", Usage: "how they fail: 503 (default), close, reset or stall", String: &q.Fail},
		{Name: "requests", Usage: "list the request numbers 1 to N of --seed that fail or time out", Int: &q.Requests, Min: 0, Max: 100000},
		{Name: "hedge", Usage: "a hedge's delay: a second request if the first has not answered", Duration: &q.Hedge, MaxDuration: dist.Max},
	}
}

// tail returns the model's question, checked; seed is --seed.
func (p *Predictor) tail() (model.TailQuestion, error) {
	q := p.Tail
	m := model.TailQuestion{Timeout: p.ReadTimeout, Retries: p.Retries, Backoff: p.Backoff, Deadline: p.Deadline, Hedge: q.Hedge}
	if err := param.CheckAll(p.TailParams()); err != nil {
		return m, err
	}
	if q.DelayDist != "" {
		d, err := dist.Parse(q.DelayDist)
		if err != nil {
			return m, fmt.Errorf("--delay-dist: %w", err)
		}
		m.Dist = d
	}
	if q.FailRate != "" {
		r, err := dist.ParseRate(q.FailRate)
		if err != nil {
			return m, fmt.Errorf("--fail-rate %w", err)
		}
		m.FailRate = r
	}
	switch q.Fail {
	case "", "close", "reset":
	case "stall":
		m.FailHolds = true
	default:
		var code int
		if _, err := fmt.Sscanf(q.Fail, "%d", &code); err != nil || code < 400 || code > 599 || fmt.Sprint(code) != q.Fail {
			return m, fmt.Errorf("--fail: unknown mode %q, want a status from 400 to 599, close, reset or stall", q.Fail)
		}
	}
	if q.Fail != "" && q.FailRate == "" {
		return m, fmt.Errorf("--fail needs --fail-rate: it says how the failing share fails")
	}
	if q.Hedge > 0 && q.DelayDist == "" {
		return m, fmt.Errorf("--hedge needs --delay-dist: a hedge answers a slow request")
	}
	return m, nil
}

// CheckTail reports a tail question that makes no sense, naming the flags; isSet says which
// flags were given.
func (p *Predictor) CheckTail(isSet func(string) bool) error {
	for _, pp := range p.Params() {
		if isSet(pp.Name) && !slices.Contains(tailCallFlags, pp.Name) {
			return fmt.Errorf("--%s is a single call's: the tail question (--delay-dist, --fail-rate) takes --read-timeout, --deadline, --retries and --backoff", pp.Name)
		}
	}
	_, err := p.tail()
	return err
}

// PredictTail answers the tail question (after CheckTail) for seed's sample.
func (p *Predictor) PredictTail(seed uint64) (results.TailPrediction, error) {
	m, err := p.tail()
	if err != nil {
		return results.TailPrediction{}, err
	}
	a := m.Answer()
	seedParam := int(seed)
	out := results.TailPrediction{
		Scenario: scenario(append(p.TailParams(), param.Param{Name: "seed", Int: &seedParam}, param.Param{Name: "read-timeout", Duration: &p.ReadTimeout},
			param.Param{Name: "deadline", Duration: &p.Deadline}, param.Param{Name: "retries", Int: &p.Retries}, param.Param{Name: "backoff", Duration: &p.Backoff})),
		TimedOut: round6(a.TimedOut), Failed: round6(a.Failed), DeadlineEnded: round6(a.DeadlineEnded), Executions: round6(a.Executions),
		P50Ms: modelMs(a.P50), P99Ms: modelMs(a.P99), Seed: seed, Requests: p.Tail.Requests,
	}
	if p.Tail.DelayDist != "" {
		out.Dist = m.Dist.String()
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
			out.Quantiles = append(out.Quantiles, results.TailQuantile{P: q, Ms: *results.Ms(m.Dist.Quantile(q))})
		}
	}
	if m.Hedge > 0 {
		out.Hedge = &results.TailHedge{AfterMs: *results.Ms(m.Hedge), P99Ms: modelMs(a.HedgeP99), Executions: round6(a.HedgeExecutions)}
	}
	if p.Tail.Requests > 0 {
		if m.FailRate > 0 {
			out.Failing = dist.Failing(seed, m.FailRate, p.Tail.Requests)
		}
		if limit := min(positive(p.ReadTimeout), positive(p.Deadline)); p.Tail.DelayDist != "" && limit < model.Forever {
			out.Slow = []int{}
			for n := 1; n <= p.Tail.Requests; n++ {
				if m.Dist.Draw(seed, uint64(n)) > limit {
					out.Slow = append(out.Slow, n)
				}
			}
		}
	}
	return out, nil
}

// round6 rounds a share to 6 decimals, what a report can show.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// positive is d, or Forever for 0 (no limit).
func positive(d time.Duration) time.Duration {
	if d <= 0 {
		return model.Forever
	}
	return d
}
