package http2

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/noise"
	"github.com/labrun/labrun/results"
)

// TestH2HerdRows runs exp-h's OkHttp 3.13 burst alone: three sync rows with the model's
// ranges and a reason, and the enqueued row exact, all passing.
func TestH2HerdRows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host, err := newH2Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer host.close()
	var run results.Run
	sentinel := noise.Start()
	defer sentinel.Stop()
	begin := time.Now()
	if err := New().herd(ctx, lab.Options{}, host, &run); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	// A wave the machine held back is the noise's, not the client's (labrun's own judgment).
	allow := func(spanMs float64) float64 {
		return float64(sentinel.Worst(begin, end, time.Duration(spanMs*float64(time.Millisecond)))) / float64(time.Millisecond)
	}
	if len(run.Rows) != 4 {
		t.Fatalf("%d rows, want 4", len(run.Rows))
	}
	const tol = 100 * time.Millisecond
	for i := range run.Rows {
		run.Rows[i].Judge(tol)
	}
	run.Attribute(tol, allow)
	for i, r := range run.Rows {
		switch {
		case !r.Pass && r.Inconclusive != "":
			t.Logf("%s: inconclusive: %s (%s)", r.Name, r.Inconclusive, r.Reason)
		case !r.Pass:
			t.Errorf("%s: %s", r.Name, r.Reason)
		}
		ranged := r.ExpectedNewConnectionsMax != nil || r.ExpectedExecutionsMax != nil
		if ranged != (i < 3) || ranged && r.RangeReason == "" {
			t.Errorf("%s: ranged %v, reason %q; want the sync rows ranged with a reason", r.Name, ranged, r.RangeReason)
		}
	}
	if last := run.Rows[3]; !strings.Contains(last.Name, "5 at a time, 10 waves") || *last.ExpectedMs != 1000 {
		t.Errorf("enqueued row %q expects %v ms, want 5 at a time, 10 waves, 1000 ms", last.Name, *last.ExpectedMs)
	}
}
