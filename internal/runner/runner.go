// Package runner runs experiments the way the command line asks: each one warm-up times, then
// repeat times, its measured runs aggregated into one (median, spread, verdict on the median),
// and all of them gathered into a results.Suite. It prints nothing: progress goes through
// Config.Progress, and rendering is report's job.
package runner

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments"
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
	runs := make([]results.Run, len(exps))
	g, gctx := errgroup.WithContext(ctx)
	if cfg.Serial {
		g.SetLimit(1)
	}
	for i, e := range exps {
		if gctx.Err() != nil {
			break // an earlier experiment failed (or ctx is done): start no more
		}
		g.Go(func() error {
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
	suite := results.NewSuite(runs)
	suite.Meta = meta
	return suite, nil
}

// Repeat runs e cfg.Warmup + cfg.Repeat times and aggregates the measured runs; a single
// measured run is returned as it is.
func Repeat(ctx context.Context, cfg Config, e experiments.Experiment) (results.Run, error) {
	var runs []results.Run
	for i := range cfg.Warmup + cfg.Repeat {
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
		}
	}
	if len(runs) == 1 {
		return runs[0], nil
	}
	return results.Aggregate(runs, cfg.Tolerance)
}

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
