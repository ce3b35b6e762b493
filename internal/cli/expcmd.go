package cli

import (
	"strings"
	"unicode"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/param"
	"github.com/urfave/cli/v2"
)

// experimentCommand is the command of one experiment: its parameters as flags, and its help.
func experimentCommand(e experiments.Experiment, tty terminals) *cli.Command {
	// An experiment that compares profiles by design keeps a hidden --client, which it
	// refuses with a message saying why.
	profiles := acceptedProfiles(e)
	client := clientFlag(profiles).(*cli.StringFlag)
	client.Hidden = len(profiles) == 0
	flags := []cli.Flag{client}
	for _, p := range e.Params() {
		flags = append(flags, paramFlag(p))
	}
	flags = append(flags, sharedFlags()...)
	info := e.Info()
	return &cli.Command{
		Name:    info.Name,
		Aliases: aliases(info.Topic),
		Usage:   info.Title,
		Description: summary(info.Description, helpSummary) + " The whole story: docs/experiments.md, section " +
			info.Name + ".\n\n" + examples(info),
		Flags:              flags,
		CustomHelpTemplate: runHelpTemplate,
		OnUsageError:       onUsageError,
		Action: func(c *cli.Context) error {
			s, err := common(c, tty)
			if err != nil {
				return err
			}
			given := "" // --client as given, "" for the default
			if c.IsSet("client") {
				given = s.run.Client
			}
			if err := experiments.Check(e, given); err != nil {
				return usageError{err}
			}
			return runExperiments(c, s, []experiments.Experiment{e}, true)
		},
	}
}

// helpSummary is about the most of an experiment's description its help shows: a few
// lines, the rest being in docs/experiments.md.
const helpSummary = 320

// summary returns the first sentences of text, up to about n characters: at least one
// sentence, and whole sentences only.
func summary(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	end := 0
	for i := 0; i+2 < len(text); i++ {
		if text[i] != '.' || text[i+1] != ' ' || !unicode.IsUpper(rune(text[i+2])) {
			continue
		}
		if end > 0 && i+1 > n {
			break
		}
		end = i + 1
	}
	if end == 0 || len(text) <= n {
		return text
	}
	return text[:end]
}

func examples(info experiments.Info) string {
	return "Examples:\n   " + strings.Join(info.Examples, "\n   ")
}

// paramFlag turns an experiment parameter into a flag bound to it.
func paramFlag(p param.Param) cli.Flag {
	switch {
	case p.Duration != nil:
		return &cli.DurationFlag{Name: p.Name, Usage: p.Usage, Value: *p.Duration, Destination: p.Duration}
	case p.Int != nil:
		return &cli.IntFlag{Name: p.Name, Usage: p.Usage, Value: *p.Int, Destination: p.Int}
	case p.String != nil:
		return &cli.StringFlag{Name: p.Name, Usage: p.Usage, Value: *p.String, Destination: p.String}
	default:
		// A switch that is off by default says so in no words: "(default: false)" would
		// take a line of help for each.
		return &cli.BoolFlag{Name: p.Name, Usage: p.Usage, Value: *p.Bool, Destination: p.Bool, DisableDefaultText: !*p.Bool}
	}
}

func allCommand(exps []experiments.Experiment, tty terminals) *cli.Command {
	return &cli.Command{
		Name:  "all",
		Usage: "run every experiment with its documented parameters",
		Description: "Runs every experiment, all at once unless --serial (each has its own servers), " +
			"prints one table each in order and exits 1 if any row of any experiment is out " +
			"of tolerance: the CI regression gate.\n\n" +
			"Examples:\n   labrun all\n   labrun all --repeat 5 --warmup 1 --out report/\n" +
			"   labrun all --format json > run.json\n\n" +
			"The experiments that compare client profiles by design (exp-d to exp-j) run their own and ignore --client.",
		Flags: append([]cli.Flag{clientFlag(experiments.ProfileNames()), &cli.BoolFlag{Name: "serial", DisableDefaultText: true,
			Usage: "run the experiments one after another (by default they run at once, each with its own servers)"}},
			sharedFlags()...),
		CustomHelpTemplate: runHelpTemplate,
		OnUsageError:       onUsageError,
		Action: func(c *cli.Context) error {
			s, err := common(c, tty)
			if err != nil {
				return err
			}
			s.run.Serial = c.Bool("serial")
			return runExperiments(c, s, exps, false)
		},
	}
}
