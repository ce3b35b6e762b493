package probe

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/noise"
	"github.com/labrun/labrun/internal/runner"
	"github.com/labrun/labrun/report"
)

// observeAll runs the command against every scenario of p, side by side as runner.Gate admits
// them, the longest first; the first error cancels the others.
func (p *Probe) observeAll(ctx context.Context, opt experiments.Options) ([]observation, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	scs, _ := p.scenarios()
	room, done := admission(p.gate)
	defer done()
	order := make([]int, len(scs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(lasting(scs[b]), lasting(scs[a])) })
	obs := make([]observation, len(scs))
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex                   // guards ends
	ends := make([]time.Time, len(scs)) // by order: a started scenario's cap, then its end
	for n, i := range order {
		if !room.Enter(gctx) {
			break
		}
		if opt.Progress != nil {
			now := time.Now()
			mu.Lock()
			ends[n] = now.Add(scs[i].Cap)
			var waiting []time.Duration
			for _, j := range order[n+1:] {
				waiting = append(waiting, scs[j].Cap)
			}
			var busy []time.Time
			for _, end := range ends[:n+1] {
				if end.After(now) {
					busy = append(busy, end)
				}
			}
			left := report.ScheduleEnd(now, busy, room.Limit(), waiting).Sub(now)
			mu.Unlock()
			opt.Progress(progressStep(n, len(scs), left, scs[i]), 0)
		}
		g.Go(func() error {
			defer room.Leave()
			o, err := observe(gctx, p.Command, scs[i])
			mu.Lock()
			ends[n] = time.Now()
			mu.Unlock()
			if err != nil {
				return fmt.Errorf("%s: %w", scs[i].Name, err)
			}
			obs[i] = o
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
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

// admission is g, or a gate of its own whose sentinel done stops.
func admission(g *runner.Gate) (gate *runner.Gate, done func()) {
	if g != nil {
		return g, func() {}
	}
	s := noise.Start()
	return runner.NewScenarioGate(runtime.NumCPU(), s), s.Stop
}

// lasting is how long sc may last: its cap where only the client ends it, else the server's waits.
func lasting(sc Scenario) time.Duration {
	if sc.down.Stall || sc.down.HostDown || sc.pre.Fault == model.HandshakeStall || sc.kind == kindLookup {
		return sc.Cap
	}
	return sc.down.Delay + time.Duration(sc.down.Bytes)*sc.down.Every + sc.Pause + sc.pre.LookupDelay +
		time.Duration(sc.pre.Bytes)*sc.pre.ByteGap + retryAfter(sc.response)
}

// retryAfter is r's Retry-After in seconds, 0 when absent.
func retryAfter(r model.Response) time.Duration {
	n, _ := strconv.Atoi(r.RetryAfter)
	return time.Duration(n) * time.Second
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

// baseline is the command's wall time on the instant scenario, 0 when it did not succeed.
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

// instantWall is the command's wall time on the instant answer among obs, 0 without one.
func instantWall(obs []observation) time.Duration {
	for _, o := range obs {
		if o.sc.Name == instantName && !o.exec.Killed && o.exec.ExitCode == 0 && o.skipped == "" {
			return o.exec.Ended.Sub(o.exec.Started)
		}
	}
	return 0
}

// progressStep names scenario i of n as it starts, with the time left at most: every
// scenario ends by its cap, those not started on the first lane the gate frees (on a busy
// machine the gate may start them later): "scenario 12/31 · at most 25 s left · silent: a
// silent server".
func progressStep(i, n int, left time.Duration, sc Scenario) string {
	return fmt.Sprintf("scenario %d/%d · at most %.0f s left · %s: %s", i+1, n, math.Ceil(left.Seconds()), sc.Name, sc.Title)
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
