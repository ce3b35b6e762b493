// Package lab is what every experiment of labrun is made of, in package experiments and in
// its subpackages (experiments/http2): the contract's types (Info, Options, the optional
// abilities), the start of a run's results (NewRun), and the judges a row is built from
// (Judged and the pairs it takes). Package experiments names Info and Options for its callers.
package lab

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/results"
)

// The names of the client profiles that experiments outside package experiments run
// (experiments.Profiles is the table).
const (
	// ProfileHC5 is labrun's client with Apache HttpClient 5's semantics (the default).
	ProfileHC5 = "hc5"
	// ProfileOkHttp is labrun's client with OkHttp 3.13's defaults and rules (the version
	// Debian 12 ships, which the profile is held to).
	ProfileOkHttp = "okhttp"
	// ProfileGo is Go's own net/http client.
	ProfileGo = "go"
)

// Info describes an experiment for the command line.
type Info struct {
	// Name is the command name, for example "exp-a".
	Name string
	// Topic names the experiment by what it shows, for example "trickle": the command line
	// takes it for Name.
	Topic string
	// Title says in a few words what the experiment shows.
	Title string
	// Description explains the experiment in a paragraph, for --help.
	Description string
	// Examples are command lines worth trying, each with a comment.
	Examples []string
	// Alone marks an experiment whose rows a neighbour's load moves (hundreds of calls whose
	// hand-offs add up, or a machine constant measured for the rows, which must see the
	// same machine as they do): labrun all runs it on its own, after the others.
	Alone bool
}

// Param is one parameter of an experiment, bound to a field of the value: its flag name,
// usage, bounds and value. The command line makes a flag of each.
type Param = param.Param

// Described is what every experiment says of itself: its name and its parameters.
type Described interface {
	Info() Info
	Params() []Param
}

// Experiment is an experiment of a subpackage of experiments, which package experiments
// adapts to its own Experiment (whose Run takes experiments.Options, the same settings).
type Experiment interface {
	Described
	Run(ctx context.Context, opt Options) (results.Run, error)
}

// Checker is an experiment whose parameters must also make sense together.
type Checker interface {
	// Check reports a combination of parameters that makes no sense, naming the flags. It
	// runs after every parameter passed its own bounds.
	Check() error
}

// FixedProfiles is an experiment that compares client libraries by design: it runs the
// profiles it names, whatever Options.Client says, and takes no --client of its own.
type FixedProfiles interface {
	// Profiles names the profiles the experiment runs, in the order its rows use them.
	Profiles() []string
}

// Options are the settings shared by every experiment.
type Options struct {
	// Tolerance is the largest allowed |measured - expected| for timed rows.
	Tolerance time.Duration
	// Progress, when set, is told what the experiment starts doing, in a few words, and how
	// long the model expects that step to take (0 when it does not say).
	Progress func(step string, expected time.Duration)
	// Client is the client profile (ProfileHC5 when empty). An experiment with FixedProfiles
	// ignores it.
	Client string
}

// Profile returns the client profile's name, ProfileHC5 when none is set.
func (o Options) Profile() string {
	if o.Client == "" {
		return ProfileHC5
	}
	return o.Client
}

// Step tells Progress, when set, the step the experiment starts, in a few words, and how long
// the model expects it to take.
func (o Options) Step(expected time.Duration, format string, args ...any) {
	if o.Progress != nil {
		if expected == model.Forever {
			expected = 0
		}
		o.Progress(fmt.Sprintf(format, args...), expected)
	}
}

// CheckParams reports a parameter of e out of its bounds, or parameters that make no sense
// together (Checker), naming the flags.
func CheckParams(e Described) error {
	if err := param.CheckAll(e.Params()); err != nil {
		return err
	}
	if c, ok := e.(Checker); ok {
		return c.Check()
	}
	return nil
}

// NewRun starts the results of experiment e under the profiles it runs: opt's, or the
// experiment's own when it has FixedProfiles. A run under one profile names it in the run and
// as the first entry of its configuration; a run that compares several lists them in the run,
// and its rows say which is which.
func NewRun(e Described, opt Options) results.Run {
	profiles := []string{opt.Profile()}
	if f, ok := e.(FixedProfiles); ok {
		profiles = f.Profiles()
	}
	info := e.Info()
	run := results.Run{Experiment: info.Name, Title: info.Title, Client: strings.Join(profiles, ", "), Config: Config(e.Params())}
	if len(profiles) == 1 {
		run.Config = append([]results.Param{{Name: "client", Value: profiles[0]}}, run.Config...)
	}
	return run
}

// Config lists the parameters with their values, for a results.Run.
func Config(ps []Param) []results.Param {
	out := make([]results.Param, len(ps))
	for i, p := range ps {
		out[i] = results.Param{Name: p.Name, Value: p.Value()}
	}
	return out
}

// LaneSep separates the parts of a lane label; report.WriteSVG draws the calls whose labels
// hold it as streams in lanes. TestH2Timeline checks that the two agree.
const LaneSep = " › "

// ProfileChecker is an experiment with a parameter that not every client profile can honour.
type ProfileChecker interface {
	// CheckProfile reports a parameter p cannot honour, naming the flags.
	CheckProfile(p Profile) error
}

// Check reports what makes e unable to run under the client profile called profile: a
// parameter out of its bounds, parameters that make no sense together (Checker), an unknown
// profile, or a parameter the profile cannot honour (ProfileChecker). An experiment with
// FixedProfiles runs its own profiles, whatever profile says.
func Check(e Described, profile string) error {
	if err := CheckParams(e); err != nil {
		return err
	}
	if _, fixed := e.(FixedProfiles); fixed {
		return nil
	}
	p, err := LookupProfile(profile)
	if err != nil {
		return err
	}
	if pc, ok := e.(ProfileChecker); ok {
		return pc.CheckProfile(p)
	}
	return nil
}

// AtDocumented reports whether the documented figures apply: HttpClient 5 with the
// documented parameters.
func AtDocumented(opt Options, ps, defaults []Param) bool {
	return opt.Profile() == ProfileHC5 && param.Same(ps, defaults)
}
