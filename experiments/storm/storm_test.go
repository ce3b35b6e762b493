package storm

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/report"
)

// TestStorm runs exp-n at its documented parameters: every row must pass. The short tier
// runs the sequences alone.
func TestStorm(t *testing.T) {
	s := New()
	if testing.Short() {
		rows, err := s.sequences(context.Background(), lab.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			r.Judge(250 * time.Millisecond)
			if !r.Pass {
				t.Errorf("%s: %s", r.Name, r.Reason)
			}
		}
		return
	}
	start := time.Now()
	run, err := s.Run(context.Background(), lab.Options{Tolerance: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Rows {
		t.Logf("%-100s pass=%v %s exp=%v..%v got=%v %s", r.Name, r.Pass, r.Reason, deref(r.ExpectedExecutions), deref(r.ExpectedExecutionsMax), deref(r.ServerExecutions), r.Server)
	}
	if !run.Pass {
		t.Fatal("exp-n did not pass")
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

func deref(p *int) any {
	if p == nil {
		return "-"
	}
	return *p
}
