package storm

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/report"
)

// TestStormSequences runs exp-n's deterministic rows: grpc-go's throttling, the AWS quota and
// the layers, counted exactly against the model.
func TestStormSequences(t *testing.T) {
	rows, err := New().sequences(context.Background(), lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		r.Judge(0)
		if !r.Pass {
			t.Errorf("%s: %s", r.Name, r.Reason)
		}
	}
}

// TestStorm runs exp-n at its documented parameters: every row must pass, within 15 s, and
// the immediate retries' storm must stay. LABRUN_STORM_SVG names a file for its timeline.
func TestStorm(t *testing.T) {
	testenv.Slow(t, "exp-n end to end")
	testenv.Timing(t)
	start := time.Now()
	run, err := New().Run(context.Background(), lab.Options{Tolerance: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Rows {
		if !r.Pass {
			t.Errorf("%s: %s", r.Name, r.Reason)
		}
	}
	if out := os.Getenv("LABRUN_STORM_SVG"); out != "" {
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := report.WriteSVG(f, run); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %v, want at most 15 s", took)
	}
	var forGood bool
	for _, r := range run.Rows {
		forGood = forGood || strings.Contains(r.Name, "immediate retries: the last calls of the window: still timing out")
	}
	if !forGood {
		t.Error("no row shows the immediate retries' storm staying")
	}
}
