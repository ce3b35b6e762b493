// Package runner runs experiments as the command line asks (warm-ups, repeats aggregated on the
// median) into a results.Suite. It prints nothing: progress goes through Config.Progress.
package runner

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/noise"
	"github.com/labrun/labrun/results"
)

// MaxRepeat bounds Config.Repeat and Config.Warmup.
const MaxRepeat = 100

// Config says how to run experiments.
type Config struct {
	// Client is the client profile ("": each experiment's default).
	Client    string
	Tolerance time.Duration
	// Repeat counts measured runs (at least 1), Warmup discarded runs before them.
	Repeat, Warmup int
	Version        string
	// Serial runs the experiments one after another instead of concurrently.
	Serial bool
	// Progress, when set, is told each step an experiment starts and its expected time (0:
	// unknown); an empty step says done. It may be called concurrently.
	Progress func(experiment, step string, expected time.Duration)
	// Finished, when set, is given each experiment's run as it finishes, in the order they
	// finish; it may be called concurrently.
	Finished func(run results.Run)
	// Noise measures the machine's noise; Run starts its own when nil.
	Noise *noise.Sentinel
	// Quiet, when set, replaces the noise gate (tests).
	Quiet func() bool
}

// Check reports a setting out of range, naming its flag.
func (c Config) Check() error {
	switch {
	case c.Tolerance <= 0:
		return fmt.Errorf("--tolerance must be positive, got %v", c.Tolerance)
	case c.Repeat < 1 || c.Repeat > MaxRepeat:
		return fmt.Errorf("--repeat must be between 1 and %d, got %d", MaxRepeat, c.Repeat)
	case c.Warmup < 0 || c.Warmup > MaxRepeat:
		return fmt.Errorf("--warmup must be between 0 and %d, got %d", MaxRepeat, c.Warmup)
	}
	return nil
}

// Run runs exps, concurrently unless cfg.Serial, into a suite in exps' order. An experiment that
// cannot run cancels the others and Run returns its error.
func Run(ctx context.Context, cfg Config, exps []experiments.Experiment) (results.Suite, error) {
	if err := cfg.Check(); err != nil {
		return results.Suite{}, err
	}
	meta := &results.Meta{
		Labrun: cfg.Version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), Start: time.Now().UTC().Truncate(time.Second),
		ToleranceMs: *results.Ms(cfg.Tolerance), Repeat: cfg.Repeat, Warmup: cfg.Warmup,
	}
	if cfg.Noise == nil {
		s := noise.Start()
		defer s.Stop()
		cfg.Noise = s
	}
	runs := make([]results.Run, len(exps))
	// Those a neighbour's load would move (Info.Alone) run last, each alone.
	var shared, alone []int
	for i, e := range exps {
		if e.Info().Alone && len(exps) > 1 {
			alone = append(alone, i)
		} else {
			shared = append(shared, i)
		}
	}
	// Longest first, so short ones fill in beside them.
	slices.SortStableFunc(shared, func(a, b int) int {
		return cmp.Compare(experiments.Takes(name(exps[b])), experiments.Takes(name(exps[a])))
	})
	limit := MaxShared(runtime.NumCPU())
	if cfg.Serial {
		limit = 1
	}
	for _, batch := range []struct {
		idx   []int
		limit int
	}{{shared, limit}, {alone, 1}} {
		g, gctx := errgroup.WithContext(ctx)
		room := newGate(batch.limit, BusyWindow, cfg.Noise, cfg.Quiet)
		for _, i := range batch.idx {
			if !room.Enter(gctx) {
				break
			}
			e := exps[i]
			g.Go(func() error {
				defer room.Leave()
				run, err := Repeat(gctx, cfg, e)
				if cfg.Progress != nil {
					cfg.Progress(name(e), "", 0)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", name(e), err)
				}
				runs[i] = run
				if cfg.Finished != nil {
					cfg.Finished(run)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return results.Suite{}, err
		}
		if err := ctx.Err(); err != nil {
			return results.Suite{}, err
		}
	}
	suite := results.NewSuite(runs)
	suite.Meta = meta
	return suite, nil
}

// Repeat runs e cfg.Warmup + cfg.Repeat times and aggregates the measured runs. With cfg.Noise
// it marks the rows the noise explains inconclusive and records the noise.
func Repeat(ctx context.Context, cfg Config, e experiments.Experiment) (results.Run, error) {
	var runs []results.Run
	var spans []span
	for i := range cfg.Warmup + cfg.Repeat {
		begin := time.Now()
		opt := experiments.Options{Tolerance: cfg.Tolerance, Client: cfg.Client}
		if cfg.Progress != nil {
			label := runLabel(i, cfg.Warmup, cfg.Repeat)
			opt.Progress = func(step string, expected time.Duration) { cfg.Progress(name(e), step+label, expected) }
		}
		run, err := e.Run(ctx, opt)
		if err != nil {
			return results.Run{}, err
		}
		if i >= cfg.Warmup {
			runs = append(runs, run)
			spans = append(spans, span{begin, time.Now()})
		}
	}
	out := runs[0]
	if len(runs) > 1 {
		var err error
		if out, err = results.Aggregate(runs, cfg.Tolerance); err != nil {
			return results.Run{}, err
		}
	}
	if cfg.Noise != nil {
		judge(&out, cfg.Noise, spans, cfg.Tolerance)
	}
	return out, nil
}

// Judge gives run the noise s measured from from to to and marks the rows it explains (a run
// measured outside Repeat).
func Judge(run *results.Run, s *noise.Sentinel, from, to time.Time, tol time.Duration) {
	judge(run, s, []span{{from, to}}, tol)
}

func judge(run *results.Run, s *noise.Sentinel, spans []span, tol time.Duration) {
	run.Noise = measured(s, spans)
	run.Attribute(tol, allowance(s, spans))
}

type span struct{ from, to time.Time }

func measured(s *noise.Sentinel, spans []span) *results.Noise {
	var n results.Noise
	var others, steal, weight float64
	for _, sp := range spans {
		f := s.Over(sp.from, sp.to)
		n.SpanMs += ms(f.Span)
		n.StolenMs += ms(f.Stolen)
		n.MaxLateMs = max(n.MaxLateMs, ms(f.MaxLate))
		if f.OthersCPU >= 0 {
			others += f.OthersCPU * ms(f.Span)
			steal += f.Steal * ms(f.Span)
			weight += ms(f.Span)
		}
	}
	n.SpanMs, n.StolenMs, n.MaxLateMs = *results.Ms(d(n.SpanMs)), *results.Ms(d(n.StolenMs)), *results.Ms(d(n.MaxLateMs))
	if weight > 0 {
		o, st := others/weight, steal/weight
		n.OthersCPU, n.Steal = &o, &st
	}
	return &n
}

// allowance is the median over the runs of the most the machine kept labrun waiting in any
// stretch of spanMs.
func allowance(s *noise.Sentinel, spans []span) results.Allowance {
	return func(spanMs float64) float64 {
		worst := make([]float64, len(spans))
		for i, sp := range spans {
			worst[i] = ms(s.Worst(sp.from, sp.to, d(spanMs)))
		}
		st, err := results.Summarize(worst)
		if err != nil {
			return 0
		}
		return st.MedianMs
	}
}

func ms(v time.Duration) float64 { return float64(v) / float64(time.Millisecond) }
func d(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// runLabel names run i in a progress step (" (run 3/5)"), "" for one run.
func runLabel(i, warmup, repeat int) string {
	switch {
	case i < warmup:
		return fmt.Sprintf(" (warm-up %d/%d)", i+1, warmup)
	case repeat > 1:
		return fmt.Sprintf(" (run %d/%d)", i-warmup+1, repeat)
	}
	return ""
}

func name(e experiments.Experiment) string { return e.Info().Name }
