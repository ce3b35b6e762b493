package predict

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/results"
)

// StormQuestion is labrun predict --storm: open-loop calls at Rate per second against
// Capacity servers of Service each, a Timeout per attempt, a Pause at PauseAt, watched for
// Window, under the retry policy called Policy (rules.StormPolicyNames) with the call's
// retries (--retries, where the policy takes them) and a budget of Budget percent. It is
// answered by model.Storm.
type StormQuestion struct {
	On       bool
	Rate     int
	Capacity int
	Service  time.Duration
	Timeout  time.Duration
	Pause    time.Duration
	PauseAt  time.Duration
	Window   time.Duration
	Policy   string
	Budget   int
	Floor    int
	Seed     int
}

// NewStormQuestion returns the question at production scale: 1,200 calls/s against 200
// servers of 100 ms, 300 ms per attempt, a 500 ms pause after 1 s, watched 10 s, no retry.
func NewStormQuestion() StormQuestion {
	return StormQuestion{Rate: 1200, Capacity: 200, Service: 100 * time.Millisecond, Timeout: 300 * time.Millisecond,
		Pause: 500 * time.Millisecond, PauseAt: time.Second, Window: 10 * time.Second, Policy: "none", Budget: 20, Floor: 10, Seed: 1}
}

// StormFlags are the flags of StormQuestion, by name.
var StormFlags = []string{"storm", "rate", "capacity", "service", "timeout", "pause", "pause-at", "window", "policy", "budget", "budget-floor", "seed"}

// params lists the question's parameters.
func (q *StormQuestion) params() []param.Param {
	const maxD = time.Minute
	return []param.Param{
		{Name: "storm", Usage: "a retry storm's question (see above)", Bool: &q.On},
		{Name: "rate", Usage: "calls per second, open loop", Int: &q.Rate, Min: 1, Max: 100000},
		{Name: "capacity", Usage: "requests served at once", Int: &q.Capacity, Min: 1, Max: 100000},
		{Name: "service", Usage: "time per request", Duration: &q.Service, MinDuration: time.Millisecond, MaxDuration: maxD},
		{Name: "timeout", Usage: "each attempt's timeout", Duration: &q.Timeout, MinDuration: time.Millisecond, MaxDuration: maxD},
		{Name: "pause", Usage: "the downstream's pause", Duration: &q.Pause, MaxDuration: maxD},
		{Name: "pause-at", Usage: "when the pause starts", Duration: &q.PauseAt, MaxDuration: maxD},
		{Name: "window", Usage: "how long calls are made", Duration: &q.Window, MinDuration: 100 * time.Millisecond, MaxDuration: maxD},
		{Name: "policy", Usage: "the retry policy: " + strings.Join(rules.StormPolicyNames(), ", "), String: &q.Policy, Choices: rules.StormPolicyNames()},
		{Name: "budget", Usage: "retries in percent of the calls", Int: &q.Budget, Min: 1, Max: 100},
		{Name: "budget-floor", Usage: "retries a second the budget allows whatever the calls", Int: &q.Floor, Min: 0, Max: 100000},
		{Name: "seed", Usage: "the seed: a storm's back-off jitter, the tail's request numbers", Int: &q.Seed, Min: 0, Max: 1 << 30},
	}
}

// StormParams lists the storm question's parameters.
func (p *Predictor) StormParams() []param.Param { return p.Storm.params() }

// model is the storm the question asks about, with retries retries a call.
func (q StormQuestion) model(retries int) (model.Storm, error) {
	pol, err := rules.StormPolicy(q.Policy, retries, float64(q.Budget)/100, float64(q.Floor), q.Pause)
	if err != nil {
		return model.Storm{}, err
	}
	m := model.Storm{Rate: float64(q.Rate), Capacity: q.Capacity, Service: q.Service, Timeout: q.Timeout,
		PauseAt: q.PauseAt, Pause: q.Pause, Window: q.Window, Policy: pol, Seed: uint64(q.Seed)}
	if q.PauseAt+q.Pause > q.Window {
		return model.Storm{}, errors.New("--pause-at plus --pause must end within --window")
	}
	if err := m.Check(); err != nil {
		return model.Storm{}, fmt.Errorf("--storm: %w", err)
	}
	// The tip-over search runs the storm at loads up to the capacity.
	if n := float64(q.Capacity) / q.Service.Seconds() * q.Window.Seconds() * float64(pol.TotalAttempts()); n > model.MaxStormRequests {
		return model.Storm{}, fmt.Errorf("--capacity / --service x --window x attempts must stay within %d requests, got %.0f", model.MaxStormRequests, n)
	}
	return m, nil
}

// CheckStorm reports a storm question that makes no sense, naming the flags.
func (p *Predictor) CheckStorm() error {
	if err := param.CheckAll(p.Storm.params()); err != nil {
		return err
	}
	_, err := p.Storm.model(p.Retries)
	return err
}

// PredictStorm answers the storm question (after CheckStorm).
func (p *Predictor) PredictStorm() (results.StormPrediction, error) {
	m, err := p.Storm.model(p.Retries)
	if err != nil {
		return results.StormPrediction{}, err
	}
	pred, err := m.Predict()
	if err != nil {
		return results.StormPrediction{}, err
	}
	tip, err := m.TipOver()
	if err != nil {
		return results.StormPrediction{}, err
	}
	out := results.StormPrediction{Scenario: scenario(append(p.Storm.params(), param.Param{Name: "retries", Int: &p.Retries})),
		Policy: m.Policy.Name, Source: m.Policy.Source, Retries: pred.Retries, Denied: pred.Denied, Wasted: pred.Wasted,
		PeakQueue: pred.PeakQueue, TipOverRate: tip}
	for i, name := range []string{"before the pause", "during the pause", "after the pause"} {
		ph := pred.Phases[i]
		out.Phases = append(out.Phases, results.StormPhase{Phase: name, Calls: ph.Calls, Requests: ph.Requests,
			Amplification: math.Round(ph.Amplification()*1000) / 1000, Good: ph.Good, Wasted: ph.Wasted})
	}
	if pred.Recovered {
		out.RecoveredAfterMs = modelMs(pred.RecoveredAfter)
	}
	if pred.Drained {
		out.DrainedAfterMs = modelMs(pred.DrainedAfter)
	}
	for _, pt := range pred.Timeline {
		out.Timeline = append(out.Timeline, results.StormPoint{AtMs: *modelMs(pt.At), Offered: pt.Offered, Goodput: pt.Goodput, Queue: pt.Queue})
	}
	return out, nil
}
