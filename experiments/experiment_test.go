package experiments

import (
	"cmp"
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/labrun/labrun/experiments/http2"
	"github.com/labrun/labrun/experiments/internal/lab"
	measure "github.com/labrun/labrun/experiments/internal/vanish"
	"github.com/labrun/labrun/experiments/vanish"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// TestMain dispatches a namespace child first: exp-i's rows that need network namespaces
// re-execute this test binary (netns.Run), and the child runs its job instead of the tests.
func TestMain(m *testing.M) {
	if code, child := netns.MaybeChild(measure.Jobs(), os.Stdin, os.Stdout, os.Stderr); child {
		os.Exit(code)
	}
	// hedgedhttp (exp-l) runs its copies on a pool of goroutines that each linger 10 s.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/cristalhq/hedgedhttp.runInPool.func1"))
}

const ms = time.Millisecond

// runScaled runs e under hc5 and fails the test unless every row passed and none shows a
// documented figure. The experiments run with shortened parameters: the semantics are the
// same, the suite stays quick.
func runScaled(t *testing.T, e Experiment) results.Run {
	t.Helper()
	run := runScaledWith(t, e, "")
	for _, r := range run.Rows {
		if r.Documented != "" {
			t.Errorf("row %q shows documented %q for non-documented parameters", r.Name, r.Documented)
		}
	}
	return run
}

// testTolerance is the timing margin of the end-to-end tests. They assert semantics: every
// outcome, call count and server execution exactly, and times within a margin that holds on
// a loaded 2-core machine. A broken semantic changes an outcome or a count (a read timeout
// that acts as a deadline turns ok into read-timeout; a pool that does not queue moves
// calls between batches), so the margin hides none. Precision is the gate's business
// (labrun all, DefaultTolerance) and the benchmarks'.
const testTolerance = 250 * time.Millisecond

// runScaledWith runs e under profile ("" for the default) and fails the test unless every
// row passed, logging the rows when one did not.
func runScaledWith(t *testing.T, e Experiment, profile string) results.Run {
	t.Helper()
	run, err := e.Run(context.Background(), Options{Tolerance: testTolerance, Client: profile})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Pass {
		for _, r := range run.Rows {
			t.Logf("%-45s expected %v %s, measured %v %s: %s", r.Name, deref(r.ExpectedMs), r.ExpectedOutcome, deref(r.MeasuredMs), r.Outcome, r.Reason)
		}
		t.Fatalf("%s under %s did not pass", e.Info().Name, cmp.Or(profile, ProfileHC5))
	}
	return run
}

// deref shows a row value: the number, or "-" for none.
func deref(p *float64) any {
	if p == nil {
		return "-"
	}
	return *p
}

// outcomes lists the measured outcomes of run's rows.
func outcomes(run results.Run) []vocab.Outcome {
	var out []vocab.Outcome
	for _, r := range run.Rows {
		out = append(out, r.Outcome)
	}
	return out
}

func TestAll(t *testing.T) {
	var names []string
	for _, e := range All() {
		info := e.Info()
		names = append(names, info.Name)
		if info.Title == "" || info.Description == "" || len(info.Examples) == 0 {
			t.Errorf("%s lacks a title, a description or examples", info.Name)
		}
		if err := Check(e, ""); err != nil {
			t.Errorf("%s: defaults do not pass their own checks: %v", info.Name, err)
		}
	}
	if want := []string{"exp-a", "exp-b", "exp-c", "exp-d", "exp-e", "exp-f", "exp-g", "exp-h", "exp-i", "exp-j", "exp-k", "exp-l", "exp-m", "exp-n", "demo"}; !reflect.DeepEqual(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
	// Every call returns new values: a flag bound to one run's parameters never changes the
	// next run's (no shared state, no package globals).
	first, second := All(), All()
	for i := range first {
		before := lab.Config(second[i].Params())
		for _, p := range first[i].Params() {
			switch {
			case p.Duration != nil:
				*p.Duration += time.Second
			case p.Int != nil:
				*p.Int++
			case p.Bool != nil:
				*p.Bool = !*p.Bool
			case p.String != nil:
				*p.String += "x"
			}
		}
		if after := lab.Config(second[i].Params()); !reflect.DeepEqual(before, after) {
			t.Errorf("%s: All() shares its values between calls", first[i].Info().Name)
		}
	}
}

func TestRunRejectsBadParams(t *testing.T) {
	e := NewPool()
	e.Pool = 0
	_, err := e.Run(context.Background(), Options{Tolerance: DefaultTolerance})
	if err == nil || err.Error() != "--pool must be at least 1, got 0" {
		t.Errorf("got %v, want the --pool error", err)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, e := range All() {
		if _, err := e.Run(ctx, Options{Tolerance: DefaultTolerance}); err == nil {
			t.Errorf("%s: got no error with a cancelled context", e.Info().Name)
		}
	}
}

func TestCheck(t *testing.T) {
	badPool := NewPool()
	badPool.Pool = 0
	overTotal := NewInventory()
	overTotal.Pool = 200
	propagate := NewInventory()
	propagate.PropagateDeadline = true
	tests := []struct {
		name   string
		e      Experiment
		client string
		want   string
	}{
		{"defaults", NewTrickle(), "", ""},
		{"a profile", NewTrickle(), ProfileGo, ""},
		{"an unknown profile", NewTrickle(), "curl", `--client: unknown client "curl" (want ` + strings.Join(ProfileNames(), ", ") + `)`},
		{"a bound", badPool, "", "--pool must be at least 1, got 0"},
		{"a Checker", overTotal, "", "--pool (200) must not exceed --max-total (100)"},
		{"a Checker with no value set", &Routes{}, "", "--connect-timeout must be set: without one the kernel gives up after 127 s per address"},
		{"a ProfileChecker, default profile", propagate, "", ""},
		{"a ProfileChecker", propagate, ProfileOkHttp, "--propagate-deadline needs --client hc5: okhttp sends no budget"},
		{"fixed profiles, no --client", NewFollowUps(), "", ""},
		{"fixed profiles, --client hc5", NewFollowUps(), ProfileHC5, "--client: exp-d compares okhttp, go and hc5 by design; it takes no --client"},
		{"fixed profiles, --client go", NewFollowUps(), ProfileGo, "--client: exp-d compares okhttp, go and hc5 by design; it takes no --client"},
		{"three fixed profiles", NewRoutes(), ProfileOkHttp, "--client: exp-e compares okhttp, go and hc5 by design; it takes no --client"},
		{"one fixed profile", NewGoTraps(), ProfileOkHttp, "--client: exp-f runs go by design; it takes no --client"},
		{"one fixed profile, an unknown --client", NewGoTraps(), "curl", "--client: exp-f runs go by design; it takes no --client"},
		{"a subpackage's experiment, fixed profiles", http2Experiment{http2.New()}, ProfileGo, "--client: exp-h compares okhttp and go by design; it takes no --client"},
		{"exp-i's package, fixed profiles", vanishExperiment{vanish.New()}, ProfileGo, "--client: exp-i compares hc5, okhttp and go by design; it takes no --client"},
		{"a subpackage's experiment, its Checker", http2Experiment{&http2.H2{Pushes: 10, PeerLimit: 10, AllocationLimit: 5, Latency: 20 * ms, Slow: 20 * ms, GoLimit: 4, GoCalls: 9}}, "",
			"--slow (20ms) must exceed --latency (20ms): the rows need a slow node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := Check(tt.e, tt.client); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRunIgnoresClientWhenFixed: labrun all passes its --client to every experiment; one that
// compares profiles by design runs them whatever it gets.
func TestRunIgnoresClientWhenFixed(t *testing.T) {
	e := NewFollowUps()
	if err := check(e, "curl"); err != nil {
		t.Errorf("got %v, want no error: exp-d does not use Options.Client", err)
	}
}
