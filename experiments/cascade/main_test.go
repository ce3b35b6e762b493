package cascade

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/results"
)

// TestMain checks that no goroutine outlives the tests, but for hedgedhttp's pool of
// goroutines, which linger 10 s each.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/cristalhq/hedgedhttp.runInPool.func1"))
}

const ms = time.Millisecond

// testTolerance is the timing margin of the end-to-end tests, as in package experiments.
const testTolerance = 250 * time.Millisecond

// runScaled runs e under hc5 and fails the test unless every row passed and none shows a
// documented figure.
func runScaled(t *testing.T, e lab.Experiment) results.Run {
	t.Helper()
	run := runScaledWith(t, e, "")
	for _, r := range run.Rows {
		if r.Documented != "" {
			t.Errorf("row %q shows documented %q for non-documented parameters", r.Name, r.Documented)
		}
	}
	return run
}

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
		t.Fatalf("%s under %s did not pass", e.Info().Name, profile)
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
