package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/report"
)

// The commands that run no experiment and start no server: predict, defaults and list.

func predictCommand(p *predict.Predictor, tty terminals) *cli.Command {
	flags := []cli.Flag{&cli.StringFlag{Name: "format", Value: string(report.FormatTable),
		Usage: "output format: " + formatList()},
		&cli.BoolFlag{Name: "explain", DisableDefaultText: true, Usage: "the model's whole reasoning, a step a line"}}
	p.Storm = predict.NewStormQuestion()
	for _, pp := range p.Params() {
		flags = append(flags, paramFlag(pp))
	}
	// The storm's and the tail question's own flags stay out of the list, which they would
	// lengthen by half: the description names them, and docs/predict.md has them all.
	for _, pp := range append(p.StormParams(), p.TailParams()...) {
		f := paramFlag(pp)
		switch f := f.(type) {
		case *cli.DurationFlag:
			f.Hidden = true
		case *cli.IntFlag:
			f.Hidden = true
		case *cli.StringFlag:
			f.Hidden = true
		}
		flags = append(flags, f)
	}
	return &cli.Command{
		Name:  "predict",
		Usage: "ask the timing model which limit fires first, when, and how often the server executes",
		Description: "Runs only the timing model, no network: for each attempt, its phases (lease, " +
			"connect, wait for the first byte, body) and the limit that ended it, then the " +
			"total, the outcome and the server's execution count. The limits start unset, or " +
			"from a client's defaults with --defaults (labrun defaults lists them); flags given " +
			"explicitly override them. By default the call finds a pooled connection. The whole " +
			"manual: docs/predict.md. --storm asks about a retry storm instead, --delay-dist or " +
			"--fail-rate about a tail (their flags: docs/predict.md).\n\n" +
			"Examples:\n" +
			"   labrun predict --read-timeout 1s --bytes 10 --every 400ms\n" +
			"   labrun predict --defaults hc5 --host-down\n" +
			"   labrun predict --defaults go --read-timeout 1s --bytes 10 --every 400ms --explain\n" +
			"   labrun predict --storm --rate 1200 --capacity 200 --service 100ms --timeout 300ms --policy retry --retries 2",
		Flags:        flags,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("predict takes no arguments, got %q", c.Args().First())
			}
			f, err := parseFormat(c, false)
			if err != nil {
				return err
			}
			if err := checkStormFlags(c, p); err != nil {
				return err
			}
			if done, err := predictTail(c, p, f, tty); done {
				return err
			}
			if p.Storm.On {
				if err := p.CheckStorm(); err != nil {
					return usageError{err}
				}
				ans, err := p.PredictStorm()
				if err != nil {
					return usageError{err}
				}
				return report.Render(c.App.Writer, report.Options{Format: f, Width: tty.outWidth}, ans)
			}
			if err := p.Check(); err != nil {
				return usageError{err}
			}
			if err := p.Apply(c.IsSet); err != nil {
				return usageError{err}
			}
			pred := p.Predict()
			if err := predict.InRange(pred); err != nil {
				return usageError{err}
			}
			return report.Render(c.App.Writer, report.Options{Format: f, Explain: c.Bool("explain"), Width: tty.outWidth}, pred)
		},
	}
}

// checkStormFlags refuses a storm's flag without --storm, and a call's flag with it (but
// --retries, which both take).
func checkStormFlags(c *cli.Context, p *predict.Predictor) error {
	if !p.Storm.On {
		for _, name := range predict.StormFlags[1:] {
			if c.IsSet(name) && !(name == "seed" && p.Tail.On()) {
				return usagef("--%s is a storm's: it needs --storm", name)
			}
		}
		return nil
	}
	for _, pp := range append(p.Params(), p.TailParams()...) {
		if pp.Name != "retries" && c.IsSet(pp.Name) {
			return usagef("--%s is a single call's: --storm asks about a fleet's calls (--retries is the storm's too)", pp.Name)
		}
	}
	if c.Bool("explain") {
		return usagef("--explain is a single call's: --storm has no step-by-step reasoning")
	}
	return nil
}

func defaultsCommand(tty terminals) *cli.Command {
	return &cli.Command{
		Name:  "defaults",
		Usage: "the timeout and pool defaults of common HTTP clients, with their sources",
		Description: "Each value next to the source it was read from; Go's net/http row is read from " +
			"its source and checked against the linked net/http by labrun's tests. None of them " +
			"is production-ready. docs/predict.md tells how predict --defaults uses them.\n\nExamples:\n   labrun defaults\n   labrun defaults --format markdown",
		Flags: []cli.Flag{&cli.StringFlag{Name: "format", Value: string(report.FormatTable),
			Usage: "output format: " + formatList()}},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("defaults takes no arguments, got %q", c.Args().First())
			}
			f, err := parseFormat(c, false)
			if err != nil {
				return err
			}
			return report.Render(c.App.Writer, report.Options{Format: f, Width: tty.outWidth}, predict.Defaults())
		},
	}
}

func listCommand(exps []experiments.Experiment) *cli.Command {
	return &cli.Command{
		Name:         "list",
		Usage:        "list the experiments, one line each, with about how long each takes",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("list takes no arguments, got %q", c.Args().First())
			}
			// The time is experiments.Takes: one run with the documented parameters, measured
			// on labrun's development machine.
			for _, e := range exps {
				took := "     "
				if d := experiments.Takes(e.Info().Name); d > 0 {
					took = fmt.Sprintf("%4.1fs", d.Seconds())
				}
				fmt.Fprintf(c.App.Writer, "%-7s %-11s %s  %s\n", e.Info().Name, e.Info().Topic, took, e.Info().Title)
			}
			return nil
		},
	}
}

// predictTail answers the tail question when it is asked (done), or refuses its flags
// without it.
func predictTail(c *cli.Context, p *predict.Predictor, f report.Format, tty terminals) (done bool, err error) {
	if !p.Tail.On() {
		for _, name := range predict.TailFlags[2:] {
			if c.IsSet(name) {
				return true, usagef("--%s is the tail question's: it needs --delay-dist or --fail-rate", name)
			}
		}
		return false, nil
	}
	if p.Storm.On {
		return false, nil // checkStormFlags refuses it
	}
	if c.Bool("explain") {
		return true, usagef("--explain is a single call's: the tail question has no step-by-step reasoning")
	}
	if err := p.CheckTail(c.IsSet); err != nil {
		return true, usageError{err}
	}
	ans, err := p.PredictTail(uint64(p.Storm.Seed))
	if err != nil {
		return true, usageError{err}
	}
	return true, report.Render(c.App.Writer, report.Options{Format: f, Width: tty.outWidth}, ans)
}
