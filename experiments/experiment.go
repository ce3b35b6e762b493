// Package experiments runs labrun's experiments: each starts a fake server on loopback, runs a
// configured client against it, and returns a results.Run whose expected values all come from
// the timing model. Experiments never print; progress goes through Options.Progress.
//
// The files: experiment.go (this one) declares what an experiment is, lists them all (All)
// and checks one before it runs; profile.go names the client profiles (--client), whose table,
// with the harness (servers, calls, warm-up, the server's log), the timelines and the judges
// rows are built from, is in experiments/internal/lab; cases.go measures a table of rows that
// are one call each (callCase). Every other file is one experiment; exp-h, exp-i and exp-l are
// packages of their own (experiments/http2, experiments/vanish, experiments/cascade), listed by
// All through an adapter each.
package experiments

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/experiments/cascade"
	"github.com/labrun/labrun/experiments/http2"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/experiments/vanish"
	"github.com/labrun/labrun/results"
)

// Info describes an experiment for the command line: its name, its topic, its title, its
// description, examples and whether labrun all runs it alone (go doc
// github.com/labrun/labrun/experiments/internal/lab Info lists the fields).
type Info = lab.Info

// Param is one parameter of an experiment, bound to a field of the value: its flag name,
// usage, bounds and value. The command line makes a flag of each.
type Param = lab.Param

// Experiment is one runnable experiment. Its parameters are fields of the value, exposed by
// Params, with the documented values as defaults. What only some experiments need is an
// optional interface below (Checker, ProfileChecker, FixedProfiles); Check consults them all.
type Experiment interface {
	// Info names and describes the experiment.
	Info() Info
	// Params lists the experiment's parameters, bound to its fields.
	Params() []Param
	// Run runs the experiment. It returns an error only when it could not run (parameters
	// that do not pass their checks, a server that did not start, a cancelled ctx); failed
	// checks are failing rows.
	Run(ctx context.Context, opt Options) (results.Run, error)
}

// Checker is an experiment whose parameters must also make sense together: its Check reports
// a combination that makes no sense, naming the flags, after every parameter passed its own
// bounds.
type Checker = lab.Checker

// ProfileChecker is an experiment with a parameter that not every client profile can honour:
// its CheckProfile(p Profile) reports a parameter p cannot honour, naming the flags.
type ProfileChecker = lab.ProfileChecker

// FixedProfiles is an experiment that compares client libraries by design: it runs the
// profiles its Profiles names, in the order its rows use them, whatever Options.Client says,
// and takes no --client of its own.
type FixedProfiles = lab.FixedProfiles

// All returns every experiment with its documented defaults, in order.
func All() []Experiment {
	return []Experiment{NewTrickle(), NewPool(), NewRetry(), NewFollowUps(), NewRoutes(), NewGoTraps(), NewPooled(), http2Experiment{http2.New()}, vanishExperiment{vanish.New()}, NewOkHttp32(), NewPreFirst(), cascadeExperiment{cascade.New()}, NewGRPC(), NewInventory()}
}

// http2Experiment is exp-h, of package experiments/http2, as an Experiment: its Info, Params,
// Check and Profiles are its own, and its Run takes the same settings as lab.Options.
type http2Experiment struct{ *http2.H2 }

// Run implements Experiment.
func (e http2Experiment) Run(ctx context.Context, opt Options) (results.Run, error) {
	return e.H2.Run(ctx, lab.Options(opt))
}

// vanishExperiment is exp-i, of package experiments/vanish, as an Experiment.
type vanishExperiment struct{ *vanish.Vanish }

// Run implements Experiment.
func (e vanishExperiment) Run(ctx context.Context, opt Options) (results.Run, error) {
	return e.Vanish.Run(ctx, lab.Options(opt))
}

// cascadeExperiment is exp-l, of package experiments/cascade, as an Experiment.
type cascadeExperiment struct{ *cascade.Cascade }

// Run implements Experiment.
func (e cascadeExperiment) Run(ctx context.Context, opt Options) (results.Run, error) {
	return e.Cascade.Run(ctx, lab.Options(opt))
}

// Options are the settings shared by every experiment: the tolerance of timed rows, where
// progress goes, and the client profile (go doc
// github.com/labrun/labrun/experiments/internal/lab Options lists the fields). The
// experiments of the subpackages take the same settings as lab.Options.
type Options lab.Options

// DefaultTolerance is the default for Options.Tolerance: above the idle machine's own error
// (timed rows within 3 ms, docs/ci.md), below a 30 ms regression of one dial; a row that a
// loaded machine makes later is told apart by the noise measured meanwhile (inconclusive, not
// failed), so a wider margin would only hide regressions.
const DefaultTolerance = 20 * time.Millisecond

// profile returns the client profile's name, ProfileHC5 when none is set.
func (o Options) profile() string { return lab.Options(o).Profile() }

// progress tells Progress, when set, the step the experiment starts and how long the model
// expects it to take.
func (o Options) progress(expected time.Duration, format string, args ...any) {
	lab.Options(o).Step(expected, format, args...)
}

// Check reports what makes e unable to run as the command line asks, naming the flag: a
// parameter out of its bounds, parameters that make no sense together (Checker), a parameter
// the client profile cannot honour (ProfileChecker), an unknown profile, or a --client given
// to an experiment that compares profiles by design (FixedProfiles), even the default: it
// would be ignored, and a flag that changes nothing is a mistake worth a line. client is
// --client as the user gave it, "" when they did not. The
// command line calls Check for a single experiment only: labrun all passes one --client to
// every experiment, and those with FixedProfiles run their own.
func Check(e Experiment, client string) error {
	if f, ok := e.(FixedProfiles); ok && client != "" {
		return fmt.Errorf("--client: %s %s by design; it takes no --client", e.Info().Name, compares(f.Profiles()))
	}
	return check(e, or(client, ProfileHC5))
}

// check is what Run checks first: every part of Check but the explicit --client, which Run
// cannot tell from the default.
func check(e Experiment, profile string) error { return lab.Check(e, profile) }

// compares says what an experiment with fixed profiles does: "runs go", "compares okhttp and
// go", "compares okhttp, go and hc5".
func compares(profiles []string) string {
	if len(profiles) == 1 {
		return "runs " + profiles[0]
	}
	last := len(profiles) - 1
	return "compares " + strings.Join(profiles[:last], ", ") + " and " + profiles[last]
}
