// Package runner runs experiments the way the command line asks: each one warm-up times, then
// repeat times, its measured runs aggregated into one (median, spread, verdict on the median),
// and all of them gathered into a results.Suite. It prints nothing: progress goes through
// Config.Progress, and rendering is report's job.
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

// MaxRepeat bounds Config.Repeat and Config.Warmup: a gate that runs an experiment a hundred
// times is a typo, and each run of labrun all takes seconds.
const MaxRepeat = 100

// Config says how to run experiments.
type Config struct {
	// Client is the client profile every experiment that takes one runs under ("" = the
	// experiments' default).
	Client string
	// Tolerance is the largest allowed |measured - expected| for timed rows.
	Tolerance time.Duration
	// Repeat is how many measured runs each experiment makes (at least 1); Warmup is how many
	// runs before them are discarded.
	Repeat, Warmup int
	// Version is labrun's version, recorded in the suite's Meta.
	Version string
	// Serial runs the experiments one after another. By default they run concurrently: each
	// has its own servers and clients, so they do not share a pool or a port, and the gate
	// takes about as long as its longest experiment.
	Serial bool
	// Progress, when set, is told each step an experiment starts, with the model's expected
	// time for it (0 when unknown), keyed by the experiment's name. The step names the run
	// among repeats: "... (run 2/5)". An empty step says the experiment is done. It may be
	// called from several goroutines at once.
	Progress func(experiment, step string, expected time.Duration)
	// Noise, when set, is the sentinel that measures the machine's noise while experiments
	// run; Run starts one of its own when it is nil, Repeat measures nothing without one.
	Noise *noise.Sentinel
	// Quiet, when set, says whether another experiment may start beside those running,
	// instead of the noise gate (MaxShared, BusyShare): for tests that need a given overlap.
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

// Run runs exps, concurrently unless cfg.Serial, and returns their suite in the order of exps,
// with Meta describing the run. An experiment that cannot run (a server that did not start, a
// cancelled ctx) cancels the others, and Run returns its error, naming the experiment; rows
// that fail their checks are not errors.
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
	// The experiments that share the machine well run first, together (one at a time with
	// Serial); those whose rows a neighbour's load would move (Info.Alone) run after them,
	// each on its own.
	var shared, alone []int
	for i, e := range exps {
		if e.Info().Alone && len(exps) > 1 {
			alone = append(alone, i)
		} else {
			shared = append(shared, i)
		}
	}
	// The longest start first, so that the short ones fill in beside them and the suite
	// lasts about as long as its longest experiment (experiments.Takes; unknown ones last).
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
		room := newGate(batch.limit, cfg.Noise, cfg.Quiet)
		for _, i := range batch.idx {
			if !room.Enter(gctx) {
				break // an earlier experiment failed (or ctx is done): start no more
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

// Repeat runs e cfg.Warmup + cfg.Repeat times and aggregates the measured runs; a single
// measured run is returned as it is. With cfg.Noise, a row that failed on a time the
// machine's noise explains is marked inconclusive (results.Run.Attribute), and the run
// carries the noise measured while it ran.
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

// Judge gives run the noise s measured from from to to and marks the rows it explains
// inconclusive (results.Run.Attribute), for a run measured outside Repeat (a test's).
func Judge(run *results.Run, s *noise.Sentinel, from, to time.Time, tol time.Duration) {
	judge(run, s, []span{{from, to}}, tol)
}

// judge gives run the noise s measured over spans and marks the rows it explains.
func judge(run *results.Run, s *noise.Sentinel, spans []span, tol time.Duration) {
	run.Noise = measured(s, spans)
	run.Attribute(tol, allowance(s, spans))
}

// span is when one measured run of an experiment ran.
type span struct{ from, to time.Time }

// measured sums the noise over the measured runs.
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

// allowance is what the noise explains of a row spanning spanMs: the median over the measured
// runs of the most the machine kept labrun waiting in any stretch that long during the run
// (one run: its own figure). The median matches the verdict, which a repeated run takes on
// the median.
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

// runLabel names run i of warmup + repeat in a progress step: " (warm-up 1/2)", " (run 3/5)",
// or nothing for a single run.
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
