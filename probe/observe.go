package probe

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/model"
)

// Running the scenarios one after another, with the status line's count, and the wall-time
// baseline that the times the server cannot see are approximated with.

// observeAll runs the command against every scenario of p.
func (p *Probe) observeAll(ctx context.Context, opt experiments.Options) ([]observation, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	scs, _ := p.scenarios()
	var obs []observation
	begin := time.Now()
	for i, sc := range scs {
		if opt.Progress != nil {
			opt.Progress(progressStep(i, len(scs), time.Since(begin), sc), 0)
		}
		o, err := observe(ctx, p.Command, sc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sc.Name, err)
		}
		obs = append(obs, o)
	}
	if needsBaseline(obs) {
		d, err := p.baseline(ctx, opt)
		if err != nil {
			return nil, err
		}
		for i := range obs {
			obs[i].baseline = d
		}
	}
	return obs, nil
}

// needsBaseline reports whether a time the server cannot see (a slow lookup's, an
// unreachable address's) must be approximated from wall times, the command having reported
// none, while no instant answer ran to give the wall time to subtract.
func needsBaseline(obs []observation) bool {
	if instantWall(obs) > 0 {
		return false
	}
	for _, o := range obs {
		if o.skipped != "" || o.exec.Killed {
			continue
		}
		switch {
		case o.sc.kind == kindLookup && o.sc.pre.Fault == model.SlowLookup:
			if _, _, ok := lookupMs(o.exec, 0); !ok {
				return true
			}
		case o.sc.kind == kindUnreachable:
			if !slices.ContainsFunc(o.exec.Reports, func(r Report) bool { return r.HasMs }) {
				return true
			}
		}
	}
	return false
}

// baseline runs the command once on an instant answer (the instant scenario, with its cap)
// and returns its wall time, 0 when the command did not succeed on it.
func (p *Probe) baseline(ctx context.Context, opt experiments.Options) (time.Duration, error) {
	for i, sc := range Scenarios() {
		if sc.Name != instantName {
			continue
		}
		sc.Cap = p.cap(i)
		if opt.Progress != nil {
			opt.Progress("the wall time of an instant answer, for the times the server cannot see", 0)
		}
		o, err := observe(ctx, p.Command, sc)
		if err != nil {
			return 0, fmt.Errorf("%s (the wall-time baseline): %w", sc.Name, err)
		}
		return instantWall([]observation{o}), nil
	}
	return 0, nil
}

// instantName names the scenario whose wall time is the baseline of the approximations.
const instantName = "instant"

// instantWall is the command's wall time on the instant answer among obs, 0 when it did not
// run or did not succeed.
func instantWall(obs []observation) time.Duration {
	for _, o := range obs {
		if o.sc.Name == instantName && !o.exec.Killed && o.exec.ExitCode == 0 && o.skipped == "" {
			return o.exec.Ended.Sub(o.exec.Started)
		}
	}
	return 0
}

// progressStep names scenario i of n for the status line, with the time left when some have
// run: "scenario 12/31 · about 25 s left · silent: a silent server". The time left is the
// mean time of the scenarios run so far (elapsed over i) times those left, this one
// included: the scenarios' times differ (a cap, a lookup in a namespace), so it is an
// estimate that settles as they run.
func progressStep(i, n int, elapsed time.Duration, sc Scenario) string {
	s := fmt.Sprintf("scenario %d/%d", i+1, n)
	if i > 0 {
		left := meanOf(elapsed, i) * time.Duration(n-i)
		s += fmt.Sprintf(" · about %.0f s left", max(1, left.Seconds()))
	}
	return s + " · " + sc.Name + ": " + sc.Title
}

// meanOf is elapsed over n, 0 for n 0.
func meanOf(elapsed time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return elapsed / time.Duration(n)
}

// measureAll measures every observation, the unreachable address against the instant
// answer's wall time.
func measureAll(obs []observation) []measures {
	baseline := instantWall(obs)
	for _, o := range obs {
		if baseline == 0 {
			baseline = o.baseline // measured apart (needsBaseline)
		}
	}
	out := make([]measures, len(obs))
	for i, o := range obs {
		out[i] = o.measure(baseline)
	}
	return out
}
