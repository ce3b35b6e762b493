package vanish

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/labrun/labrun/experiments/internal/lab"
	measure "github.com/labrun/labrun/experiments/internal/vanish"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/results"
)

// TestMain dispatches a namespace child first: the rows that need network namespaces
// re-execute this test binary (netns.Run), and the child runs its job instead of the tests.
func TestMain(m *testing.M) {
	if code, child := netns.MaybeChild(measure.Jobs(), os.Stdin, os.Stdout, os.Stderr); child {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

const ms = time.Millisecond

// testTolerance is the timing margin of the end-to-end tests, as in package experiments.
const testTolerance = 250 * time.Millisecond

// runScaledWith runs e under profile ("" for the default) and fails the test unless every
// row passed, logging the rows when one did not.
func runScaledWith(t *testing.T, e lab.Experiment, profile string) results.Run {
	t.Helper()
	run, err := e.Run(context.Background(), lab.Options{Tolerance: testTolerance, Client: profile})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Pass {
		for _, r := range run.Rows {
			t.Logf("%-45s expected %v %s, measured %v %s: %s", r.Name, deref(r.ExpectedMs), r.ExpectedOutcome, deref(r.MeasuredMs), r.Outcome, r.Reason)
		}
		t.Fatalf("%s did not pass", e.Info().Name)
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
