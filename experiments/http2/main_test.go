package http2

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/jvm"
	"github.com/labrun/labrun/results"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ms = time.Millisecond

// testTolerance is the timing margin of the end-to-end tests, as in package experiments:
// they assert semantics (every outcome and count exactly) and times within a margin that holds
// on a loaded 2-core machine.
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

// runJava runs a one-file Java program with OkHttp 3 on its classpath and returns its output.
func runJava(t *testing.T, rt jvm.Runtime, source string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := rt.Run(ctx, jvm.Program{Source: source, Libs: []jvm.Library{jvm.OkHttp3}}, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
