// Package storm is exp-n: the retry storm that beats a downstream to death, and the bounds
// that stop it. An open-loop caller calls a downstream of fixed capacity on loopback; the
// downstream pauses once; each retry policy's requests, answers in time, wasted work and
// recovery are measured beside model.Storm's, and the real grpc-go and aws-sdk-go-v2 bounds
// are held to their rules on deterministic sequences.
package storm

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/results"
)

// Storm is experiment N, at a tenth of production scale: Rate calls per second against
// Capacity servers of Service each, a Timeout per attempt, a Pause after Before, watched for
// After more.
type Storm struct {
	Rate     int
	Capacity int
	Service  time.Duration
	Timeout  time.Duration
	Before   time.Duration
	Pause    time.Duration
	After    time.Duration
	// Retries is the business retry's count, Budget its bound in percent of the calls.
	Retries int
	Budget  int
	Seed    int
}

// New returns experiment N with its documented parameters.
func New() *Storm {
	return &Storm{Rate: 120, Capacity: 20, Service: 100 * time.Millisecond, Timeout: 300 * time.Millisecond,
		Before: 500 * time.Millisecond, Pause: 500 * time.Millisecond, After: 1500 * time.Millisecond, Retries: 2, Budget: 20, Seed: 1}
}

// Info implements lab.Experiment.
func (*Storm) Info() lab.Info {
	return lab.Info{
		Name: "exp-n", Topic: "storm", Alone: true,
		Title: "the retry storm that beats the downstream to death",
		Description: "An open-loop caller makes 120 calls/s (a tenth of a fleet's 1,200) on a downstream " +
			"of 20 servers of 100 ms each (200/s), in FIFO order, that cannot see a caller leave; each " +
			"attempt times out at 300 ms and the downstream pauses 500 ms. Without retries the queue " +
			"drains and the calls are answered again; 2 immediate retries triple the load past the " +
			"capacity and nothing is answered in time, for good (a metastable failure); back-off with " +
			"jitter only spreads the same retries; a 20% budget, aws-sdk-go-v2's standard retry quota " +
			"and a breaker in front of the retries recover. Then grpc-go's retryThrottling and the " +
			"AWS quota on deterministic sequences, and three layers of 3 attempts: 27 executions.",
		Examples: []string{
			"labrun exp-n",
			"labrun exp-n --rate 70     # below 2 retries' tipping point: they recover",
			"labrun exp-n --budget 10   # a tighter budget",
		},
	}
}

// Profiles implements lab.FixedProfiles: the caller is Go's net/http under each policy.
func (*Storm) Profiles() []string { return []string{lab.ProfileGo} }

// Params implements lab.Experiment.
func (s *Storm) Params() []lab.Param {
	const maxD = 10 * time.Second
	return []lab.Param{
		{Name: "rate", Usage: "calls per second, open loop", Int: &s.Rate, Min: 1, Max: 400},
		{Name: "capacity", Usage: "requests the downstream serves at once", Int: &s.Capacity, Min: 1, Max: 200},
		{Name: "service", Usage: "the downstream's time per request", Duration: &s.Service, MinDuration: time.Millisecond, MaxDuration: maxD},
		{Name: "timeout", Usage: "each attempt's timeout", Duration: &s.Timeout, MinDuration: time.Millisecond, MaxDuration: maxD},
		{Name: "before", Usage: "the calls before the pause", Duration: &s.Before, MaxDuration: maxD},
		{Name: "pause", Usage: "the downstream's pause (the trigger)", Duration: &s.Pause, MaxDuration: maxD},
		{Name: "after", Usage: "the calls after the pause", Duration: &s.After, MinDuration: 100 * time.Millisecond, MaxDuration: maxD},
		{Name: "retries", Usage: "the business retry: retries at once", Int: &s.Retries, Min: 1, Max: 5},
		{Name: "budget", Usage: "the retry budget, in percent of the calls", Int: &s.Budget, Min: 1, Max: 100},
		{Name: "seed", Usage: "the back-off jitter's seed", Int: &s.Seed, Min: 0, Max: 1 << 30},
	}
}

// Check implements lab.Checker.
func (s *Storm) Check() error {
	if calls := float64(s.Rate) * s.window().Seconds(); calls > 2000 {
		return fmt.Errorf("--rate x (--before + --pause + --after) must stay within 2000 calls, got %.0f", calls)
	}
	if s.Timeout < s.Service {
		return fmt.Errorf("--timeout (%v) must be at least --service (%v): no call would ever be answered", s.Timeout, s.Service)
	}
	return nil
}

func (s *Storm) window() time.Duration { return s.Before + s.Pause + s.After }

// breakerRule is the breaker in front of the retries: 10 failures in a row open it for the
// pause's length; fewer would trip on a loaded machine's stray late answer.
func (s *Storm) breakerRule() rules.BreakerRule {
	return rules.BreakerRule{Trip: 10, Open: s.Pause, HalfOpenMax: 1}
}

// variant is one policy of the storm and the gate that runs it live.
type variant struct {
	p    rules.RetryPolicy
	gate func() gate
}

func (s *Storm) variants() []variant {
	seed := uint64(s.Seed)
	own := func(p rules.RetryPolicy) variant {
		return variant{p, func() gate { return newPolicyGate(p, seed) }}
	}
	aws := rules.AWSStandard()
	return []variant{
		own(rules.NoRetry()),
		own(rules.ImmediateRetry(s.Retries)),
		own(rules.JitteredBackoff(s.Retries, s.Service)),
		// Finagle's floor of 10 retries/s, at a tenth of the scale.
		own(rules.Budget(s.Retries, float64(s.Budget)/100, 1)),
		{aws, func() gate { return newAWSGate(aws, seed) }},
		own(rules.BreakerFirst(s.Retries, s.breakerRule())),
	}
}

// model is the storm of policy p at the experiment's parameters.
func (s *Storm) model(p rules.RetryPolicy) model.Storm {
	return model.Storm{Rate: float64(s.Rate), Capacity: s.Capacity, Service: s.Service, Timeout: s.Timeout,
		PauseAt: s.Before, Pause: s.Pause, Window: s.window(), Policy: p, Seed: uint64(s.Seed)}
}

// Run implements lab.Experiment.
func (s *Storm) Run(ctx context.Context, opt lab.Options) (results.Run, error) {
	if err := lab.Check(s, opt.Profile()); err != nil {
		return results.Run{}, err
	}
	run := lab.NewRun(s, opt)
	run.Axis = "from the first call"
	vs := s.variants()
	rows := make([][]results.Row, len(vs))
	calls := make([][]results.Call, len(vs))
	g, gctx := errgroup.WithContext(ctx)
	// Two storms at once: the run stays within 15 s, and two loads of a few hundred
	// requests a second leave a core to spare.
	g.SetLimit(2)
	for i, v := range vs {
		g.Go(func() error {
			opt.Step(s.window()+3*s.Timeout, "%s · storm %d/%d: %s", s.Info().Name, i+1, len(vs), v.p.Name)
			r, c, err := s.storm(gctx, v)
			rows[i], calls[i] = r, c
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return results.Run{}, err
	}
	for i := range vs {
		run.Rows = append(run.Rows, rows[i]...)
		run.Calls = append(run.Calls, calls[i]...)
	}
	seq, err := s.sequences(ctx, opt)
	if err != nil {
		return results.Run{}, err
	}
	run.Rows = append(run.Rows, seq...)
	run.Finish(opt.Tolerance)
	return run, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
