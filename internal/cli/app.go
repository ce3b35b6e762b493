package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/internal/runner"
	"github.com/labrun/labrun/report"
)

// Exit codes.
const (
	exitPass         = 0
	exitFail         = 1 // a row that disagrees with the model, or a run that could not complete
	exitUsage        = 2
	exitInconclusive = 3 // no row failed, but the machine's noise explains a row's miss
	exitInterrupted  = 130
)

// usageError is bad input: a flag, a value, an argument. It exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errChecksFailed marks a run whose rows did not all pass; its report is already printed.
var errChecksFailed = errors.New("checks failed")

// errInconclusive marks a run in which no row failed but some were inconclusive: late by no
// more than the machine's measured noise explains. Its report is already printed.
var errInconclusive = errors.New("inconclusive")

// Main is the whole program: it parses args, runs what they ask and returns the exit code.
// A namespace child (exp-i's measurements of vanishing peers) is this same binary started in
// a new user and network namespace: Main runs its job and returns before anything else.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if code, child := netns.MaybeChild(namespaceJobs(), stdin, stdout, stderr); child {
		return code
	}
	return run(args, stdout, stderr)
}

// run parses args, runs what they ask and returns the exit code.
// SIGINT and SIGTERM cancel the run, which closes its servers and exits 130.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr, detectTerminals(stdout, stderr), experiments.All())
}

// terminals says which outputs are terminals: colour goes only to a terminal's stdout, the
// live status line only to a terminal's stderr, cut to the terminal's width.
type terminals struct {
	stdout, stderr bool
	// outWidth and errWidth are stdout's and stderr's columns, 0 when unknown or not a
	// terminal: tables fit stdout's, the status line stderr's.
	outWidth, errWidth int
}

// runContext is run with the context, the experiments and the terminals given, for tests.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer, tty terminals, exps []experiments.Experiment) int {
	app := newApp(stdout, stderr, tty, exps)
	if name, ok := wantsShortHelp(app, args[min(1, len(args)):]); ok {
		if name == "" {
			writeShortAppHelp(stdout, app, exps, tty.outWidth)
		} else {
			writeShortHelp(stdout, app.Command(name), tty.outWidth)
		}
		return exitPass
	}
	err := checkFlags(app, args[min(1, len(args)):])
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	switch {
	case err == nil:
		return exitPass
	case ctx.Err() != nil, errors.Is(err, errServeCut):
		fmt.Fprintln(stderr, "labrun: interrupted")
		return exitInterrupted
	case errors.Is(err, errChecksFailed):
		return exitFail
	case errors.Is(err, errInconclusive):
		return exitInconclusive
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "labrun: %v\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "labrun: %v\n", err)
		return exitFail
	}
}

func newApp(stdout, stderr io.Writer, tty terminals, exps []experiments.Experiment) *cli.App {
	useHelpPrinter()
	app := &cli.App{
		Name:  "labrun",
		Usage: "measure which HTTP client timeout fires, when, and what the server did meanwhile",
		Description: "Each experiment starts a fake server on 127.0.0.1, runs a configured client " +
			"against it and prints documented, expected (from labrun's timing model) and " +
			"measured values with a verdict. The exit code is 0 when every row is within " +
			"tolerance, 1 when one is not, 3 when none failed but the machine's measured noise " +
			"explains a miss (inconclusive), 2 on bad usage, 130 when interrupted.",
		UsageText: "labrun all                       # every experiment, one table each\n" +
			"labrun exp-a --read-timeout 2s   # one experiment, one parameter changed\n" +
			"labrun exp-b --pool 20 --format json\n" +
			"labrun list",
		Version: version(),
		// A repeatable flag's value is one value: a --fault rule's delay table has commas.
		DisableSliceFlagSeparator: true,
		Writer:                    stdout,
		ErrWriter:                 stderr,
		HideHelpCommand:           true,
		ExitErrHandler:            func(*cli.Context, error) {}, // run decides the exit code
		OnUsageError:              onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().First() == "help" {
				switch name := c.Args().Get(1); {
				case c.NArg() == 1:
					writeShortAppHelp(stdout, c.App, exps, tty.outWidth)
					return nil
				case c.NArg() == 2 && name == "--all":
					return cli.ShowAppHelp(c)
				case c.App.Command(name) != nil && c.NArg() == 2:
					return cli.ShowCommandHelp(c, name)
				default:
					return usagef("help takes one command, got %q%s", strings.Join(c.Args().Slice()[1:], " "), didYouMean(name, commandNames(c.App), ""))
				}
			}
			if c.Args().Present() {
				if hint := commandHint(c.Args().First()); hint != "" {
					return usagef("unknown command %q: %s", c.Args().First(), hint)
				}
				return usagef("unknown command %q%s (see labrun --help)", c.Args().First(), didYouMean(c.Args().First(), commandNames(c.App), ""))
			}
			writeShortAppHelp(stdout, c.App, exps, tty.outWidth)
			return nil
		},
	}
	params := map[string][]param.Param{}
	clients := map[string][]string{"all": experiments.ProfileNames()}
	for _, e := range exps {
		app.Commands = append(app.Commands, experimentCommand(e, tty))
		params[e.Info().Name] = e.Params()
		clients[e.Info().Name] = acceptedProfiles(e)
	}
	pred := &predict.Predictor{}
	params["predict"] = pred.Params()
	params["probe"] = probeParams(&predict.Predictor{})
	app.Commands = append(app.Commands, allCommand(exps, tty), predictCommand(pred, tty), defaultsCommand(tty), serveCommand(tty),
		reportCommand(tty), listCommand(exps), completionCommand())
	app.Commands = append(app.Commands, probeCommand(tty))
	app.Commands = append(app.Commands, completeCommand(newChoices(app.Commands, params, clients)))
	for _, c := range app.Commands {
		// No command has subcommands, so none needs urfave/cli's "help" subcommand, which is
		// one package variable shared by every app: Command.setup would write its fields.
		c.HideHelpCommand = true
	}
	return app
}

// sharedFlags are the flags every running command takes.
func sharedFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "tolerance", Value: experiments.DefaultTolerance,
			Usage: "largest |measured - expected| a timed row may have"},
		&cli.IntFlag{Name: "repeat", Value: 1,
			Usage: "runs of each experiment; rows show the median and spread, the verdict uses the median"},
		&cli.IntFlag{Name: "warmup", Value: 0, Usage: "runs to discard before the measured ones"},
		&cli.StringFlag{Name: "format", Value: string(report.FormatTable),
			Usage: "output format: " + formatList()},
		&cli.StringFlag{Name: "out", Usage: "also write run.json, REPORT.md, junit.xml and SVG timelines into this directory"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no live status line on stderr", DisableDefaultText: true},
		&cli.BoolFlag{Name: "no-color", Usage: "no colour, even on a terminal (so does NO_COLOR)", DisableDefaultText: true},
		wideFlag(),
	}
}

// wideFlag is --wide: every column of every table, however wide the terminal.
func wideFlag() cli.Flag {
	return &cli.BoolFlag{Name: "wide", Usage: "every column of the tables, even wider than the terminal", DisableDefaultText: true}
}

// tableWidth is the width tables are fitted to: the terminal's, or 0 (every column) with
// --wide.
func tableWidth(c *cli.Context, tty terminals) int {
	if c.Bool("wide") {
		return 0
	}
	return tty.outWidth
}

// clientFlag is --client with the profiles a command accepts.
func clientFlag(profiles []string) cli.Flag {
	return &cli.StringFlag{Name: "client", Value: experiments.ProfileHC5,
		Usage: "client profile: " + strings.Join(profiles, ", ") + " (docs/experiments.md, Client profiles)"}
}

// acceptedProfiles lists the profiles e runs with --client; none for an experiment that
// compares profiles by design.
func acceptedProfiles(e experiments.Experiment) []string {
	if _, fixed := e.(experiments.FixedProfiles); fixed {
		return nil
	}
	var out []string
	for _, name := range experiments.ProfileNames() {
		if experiments.Check(e, name) == nil {
			out = append(out, name)
		}
	}
	return out
}

// parseFormat reads --format; runs says whether the command prints experiment runs, which
// alone have a JUnit form.
func parseFormat(c *cli.Context, runs bool) (report.Format, error) {
	f, err := report.ParseFormat(c.String("format"))
	if err == nil {
		err = report.CheckFor(f, runs)
	}
	if err != nil && strings.EqualFold(c.String("format"), "svg") {
		if flagNamed(c.Command.Flags, "out") != nil {
			return "", usagef("--format: svg is not an output format: --out DIR writes the SVG timelines (with run.json, REPORT.md and junit.xml)")
		}
		return "", usagef("--format: svg is not an output format: a run's --out DIR writes the SVG timelines (labrun exp-a --out DIR)")
	}
	if err != nil {
		return "", usagef("--format: %v", err)
	}
	return f, nil
}

// commandHint answers a command labrun does not have but that a user reaches for, or "".
func commandHint(name string) string {
	if name == "version" {
		return "the version is labrun --version"
	}
	return ""
}

func formatList() string {
	var names []string
	for _, f := range report.Formats() {
		if f == report.FormatMarkdown {
			names = append(names, "markdown (md)")
		} else {
			names = append(names, string(f))
		}
	}
	return strings.Join(names, ", ")
}

// common reads and checks the common flags. It prepares the --out directory too, so that a
// run that cannot write its files fails before it starts, not minutes later.
func common(c *cli.Context, tty terminals) (settings, error) {
	if c.Args().Present() {
		return settings{}, usagef("%s takes no arguments, got %q", c.Command.Name, c.Args().First())
	}
	client := c.String("client")
	if !c.IsSet("client") {
		client = experiments.ProfileHC5 // the default, and what runs where --client is hidden
	}
	if _, err := experiments.LookupProfile(client); err != nil {
		return settings{}, usageError{err}
	}
	return runSettings(c, tty, client)
}

// runSettings reads the flags every running command shares (format, tolerance, repeat,
// warm-up, --out, the status line) for runs under client ("" where no profile applies, as in
// labrun probe).
func runSettings(c *cli.Context, tty terminals, client string) (settings, error) {
	f, err := parseFormat(c, true)
	if err != nil {
		return settings{}, err
	}
	s := settings{
		run: runner.Config{
			Client:    client,
			Tolerance: c.Duration("tolerance"),
			Repeat:    c.Int("repeat"),
			Warmup:    c.Int("warmup"),
			Version:   c.App.Version,
		},
		render: report.Options{
			Format: f,
			Color:  colorFor(c, tty),
			Width:  tableWidth(c, tty),
		},
		live:  tty.stderr && !c.Bool("quiet"),
		width: tty.errWidth,
	}
	if err := s.run.Check(); err != nil {
		return settings{}, usageError{err}
	}
	if c.IsSet("out") {
		if s.out, err = prepareOut(c.String("out")); err != nil {
			return settings{}, err
		}
	}
	return s, nil
}

// colorFor says whether the table form is coloured: only on a terminal's stdout, and never
// with --no-color or NO_COLOR.
func colorFor(c *cli.Context, tty terminals) bool {
	return tty.stdout && !c.Bool("no-color") && os.Getenv("NO_COLOR") == ""
}

// prepareOut checks an --out directory before anything runs: bad usage (exit 2) when it
// cannot be created or written.
func prepareOut(dir string) (*report.OutDir, error) {
	if dir == "" {
		return nil, usagef("--out needs a directory")
	}
	out, err := report.PrepareOut(dir)
	if err != nil {
		return nil, usagef("--out: %s", escaped(err.Error()))
	}
	return out, nil
}

// onUsageError is urfave/cli's hook for a command line it could not parse: a usage error,
// exit 2. checkFlags has already said what is wrong with any flag labrun knows of; what
// reaches here is passed on as urfave/cli words it.
func onUsageError(_ *cli.Context, err error, _ bool) error { return usageError{err} }

// aliases are the names an experiment's command also answers to: its topic, when it has one.
func aliases(topic string) []string {
	if topic == "" {
		return nil
	}
	return []string{topic}
}
