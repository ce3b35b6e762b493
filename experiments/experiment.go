// Package experiments runs labrun's experiments: each starts a fake server on loopback, runs a
// configured client against it, and returns a results.Run whose expected values all come from
// the timing model. Experiments never print; progress goes through Options.Progress.
//
// experiment.go declares an experiment and lists them (All); cases.go measures a table of rows
// that are one call each (callCase); every other file is one experiment. exp-h, exp-i and exp-l
// are packages of their own, adapted here; experiments/internal/lab holds the profiles, the
// harness and the judges.
package experiments

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/experiments/cascade"
	"github.com/labrun/labrun/experiments/http2"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/experiments/storm"
	"github.com/labrun/labrun/experiments/vanish"
	"github.com/labrun/labrun/results"
)

// Info describes an experiment for the command line (lab.Info).
type Info = lab.Info

// Param is one parameter of an experiment, bound to a field; the command line makes a flag of
// it.
type Param = lab.Param

// Experiment is one runnable experiment; its parameters are fields of the value, exposed by
// Params with the documented values as defaults. Optional abilities: Checker, ProfileChecker,
// FixedProfiles.
type Experiment interface {
	Info() Info
	Params() []Param
	// Run returns an error only when it could not run (bad parameters, a server that did not
	// start, ctx cancelled); failed checks are failing rows.
	Run(ctx context.Context, opt Options) (results.Run, error)
}

// Checker is an experiment whose parameters must make sense together.
type Checker = lab.Checker

// ProfileChecker is an experiment with a parameter not every profile can honour.
type ProfileChecker = lab.ProfileChecker

// FixedProfiles is an experiment that compares libraries: it runs its own profiles and takes
// no --client.
type FixedProfiles = lab.FixedProfiles

// All returns every experiment with its documented defaults, in order.
func All() []Experiment {
	return []Experiment{NewTrickle(), NewPool(), NewRetry(), NewFollowUps(), NewRoutes(), NewGoTraps(), NewPooled(), http2Experiment{http2.New()}, vanishExperiment{vanish.New()}, NewOkHttp32(), NewPreFirst(), cascadeExperiment{cascade.New()}, NewGRPC(), stormExperiment{storm.New()}, NewInventory()}
}

// http2Experiment is exp-h, of experiments/http2, as an Experiment.
type http2Experiment struct{ *http2.H2 }

func (e http2Experiment) Run(ctx context.Context, opt Options) (results.Run, error) {
	return e.H2.Run(ctx, lab.Options(opt))
}

// vanishExperiment is exp-i, of experiments/vanish, as an Experiment.
type vanishExperiment struct{ *vanish.Vanish }

func (e vanishExperiment) Run(ctx context.Context, opt Options) (results.Run, error) {
	return e.Vanish.Run(ctx, lab.Options(opt))
}

// cascadeExperiment is exp-l, of experiments/cascade, as an Experiment.
type cascadeExperiment struct{ *cascade.Cascade }

func (e cascadeExperiment) Run(ctx context.Context, opt Options) (results.Run, error) {
	return e.Cascade.Run(ctx, lab.Options(opt))
}

// stormExperiment is exp-n, of package experiments/storm, as an Experiment.
type stormExperiment struct{ *storm.Storm }

// Run implements Experiment.
func (e stormExperiment) Run(ctx context.Context, opt Options) (results.Run, error) {
	return e.Storm.Run(ctx, lab.Options(opt))
}

// Options are the settings every experiment shares (lab.Options).
type Options lab.Options

// DefaultTolerance is the default Options.Tolerance: above an idle machine's own error, below
// a 30 ms regression of one dial; the noise measured meanwhile tells a loaded machine's late
// rows apart (inconclusive, docs/ci.md).
const DefaultTolerance = 20 * time.Millisecond

func (o Options) profile() string { return lab.Options(o).Profile() }

// progress tells Progress, when set, the step starting and the model's time for it.
func (o Options) progress(expected time.Duration, format string, args ...any) {
	lab.Options(o).Step(expected, format, args...)
}

// Check reports what keeps e from running as the command line asks, naming the flag: Checker,
// ProfileChecker, an unknown profile, or a --client given to an experiment with
// FixedProfiles, even the default, since a flag that changes nothing is a mistake. client is
// --client as given, "" when not.
func Check(e Experiment, client string) error {
	if f, ok := e.(FixedProfiles); ok && client != "" {
		return fmt.Errorf("--client: %s %s by design; it takes no --client", e.Info().Name, compares(f.Profiles()))
	}
	return check(e, cmp.Or(client, ProfileHC5))
}

// check is what Run checks first: Check but the explicit --client, which Run cannot tell from
// the default.
func check(e Experiment, profile string) error { return lab.Check(e, profile) }

// compares says what an experiment with fixed profiles does: "compares okhttp and go".
func compares(profiles []string) string {
	if len(profiles) == 1 {
		return "runs " + profiles[0]
	}
	last := len(profiles) - 1
	return "compares " + strings.Join(profiles[:last], ", ") + " and " + profiles[last]
}
