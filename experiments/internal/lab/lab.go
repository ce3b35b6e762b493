// Package lab is what every experiment is made of, in package experiments and its
// subpackages: the contract (Info, Options, the optional abilities), a run's start (NewRun), the
// client profiles, the harness, and the judges a row is built from (Judged).
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

// The profiles that experiments outside package experiments run.
const (
	// ProfileHC5 is labrun's client with HttpClient 5's semantics, the default.
	ProfileHC5 = "hc5"
	// ProfileOkHttp is labrun's client with OkHttp 3.13's rules (Debian 12's release).
	ProfileOkHttp = "okhttp"
	ProfileGo     = "go"
)

// Info describes an experiment for the command line.
type Info struct {
	// Name is the command name, "exp-a"; Topic names what it shows, "trickle", and works too.
	Name  string
	Topic string
	Title string
	// Description is a paragraph, for --help.
	Description string
	// Examples are command lines worth trying, each with a comment.
	Examples []string
	// Alone marks an experiment whose rows a neighbour's load moves: labrun all runs it alone.
	Alone bool
}

// Param is one parameter of an experiment, bound to a field; the command line makes a flag of it.
type Param = param.Param

// Described is what every experiment says of itself.
type Described interface {
	Info() Info
	Params() []Param
}

// Experiment is an experiment of a subpackage, which package experiments adapts.
type Experiment interface {
	Described
	Run(ctx context.Context, opt Options) (results.Run, error)
}

// Checker is an experiment whose parameters must make sense together.
type Checker interface {
	// Check reports a combination that makes no sense, naming the flags.
	Check() error
}

// FixedProfiles is an experiment that compares libraries: it runs its own profiles, whatever
// Options.Client says.
type FixedProfiles interface {
	Profiles() []string
}

// Options are the settings every experiment shares.
type Options struct {
	// Tolerance is the largest allowed |measured - expected| of a timed row.
	Tolerance time.Duration
	// Progress, when set, is told each step and the model's time for it (0: none said).
	Progress func(step string, expected time.Duration)
	// Client is the client profile (ProfileHC5 when empty).
	Client string
}

// Profile is the client profile's name.
func (o Options) Profile() string {
	if o.Client == "" {
		return ProfileHC5
	}
	return o.Client
}

// Step tells Progress, when set, the step starting and the model's time for it.
func (o Options) Step(expected time.Duration, format string, args ...any) {
	if o.Progress != nil {
		if expected == model.Forever {
			expected = 0
		}
		o.Progress(fmt.Sprintf(format, args...), expected)
	}
}

// CheckParams reports a parameter out of bounds, or a combination Checker refuses.
func CheckParams(e Described) error {
	if err := param.CheckAll(e.Params()); err != nil {
		return err
	}
	if c, ok := e.(Checker); ok {
		return c.Check()
	}
	return nil
}

// NewRun starts the results of e under the profiles it runs (opt's, or its FixedProfiles); a
// run under one profile names it first in its configuration.
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

func Config(ps []Param) []results.Param {
	out := make([]results.Param, len(ps))
	for i, p := range ps {
		out[i] = results.Param{Name: p.Name, Value: p.Value()}
	}
	return out
}

// LaneSep separates the parts of a lane label; report.WriteSVG draws labels holding it as
// streams in lanes (TestH2Timeline).
const LaneSep = " › "

// ProfileChecker is an experiment with a parameter not every profile can honour.
type ProfileChecker interface {
	CheckProfile(p Profile) error
}

// Check reports what keeps e from running under profile: CheckParams, an unknown profile, or
// ProfileChecker's refusal. FixedProfiles run their own.
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

// AtDocumented reports whether the documented figures apply: HttpClient 5, documented
// parameters.
func AtDocumented(opt Options, ps, defaults []Param) bool {
	return opt.Profile() == ProfileHC5 && param.Same(ps, defaults)
}
