package probe

import (
	"testing"
	"time"
)

// TestNeedsBaseline: a wall-time baseline is run apart only when a time the server cannot
// see has no report line and no instant answer ran.
func TestNeedsBaseline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(name string, wall time.Duration, reports ...Report) observation {
		return observation{sc: scenarioNamed(t, name), exec: Exec{Started: t0, Ended: t0.Add(wall), Reports: reports}}
	}
	reported := Report{Call: 1, Ms: 2001, HasMs: true}
	tests := []struct {
		name string
		obs  []observation
		want bool
	}{
		{"slow lookup alone, no report", []observation{run("slow-lookup", 2100*time.Millisecond)}, true},
		{"unreachable alone, no report", []observation{run("unreachable", 1100*time.Millisecond)}, true},
		{"slow lookup with its report", []observation{run("slow-lookup", 2100*time.Millisecond, reported)}, false},
		{"with an instant answer", []observation{run("instant", 100*time.Millisecond), run("slow-lookup", 2100*time.Millisecond)}, false},
		{"nothing the server cannot see", []observation{run("silent", time.Second)}, false},
	}
	for _, tt := range tests {
		if got := needsBaseline(tt.obs); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestBaselineApproximates: a slow lookup without report lines is timed by its wall time less
// the baseline measured apart, and says it is approximate; without any baseline it has no
// time.
func TestBaselineApproximates(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := observation{sc: scenarioNamed(t, "slow-lookup"), exec: Exec{Started: t0, Ended: t0.Add(2150 * time.Millisecond)}}
	if m := measureAll([]observation{o})[0]; m.left != nil {
		t.Errorf("without a baseline: got a time %v", *m.left)
	}
	o.baseline = 140 * time.Millisecond
	m := measureAll([]observation{o})[0]
	if m.left == nil || *m.left != 2010*time.Millisecond || !m.approx {
		t.Fatalf("got %+v, want an approximate 2010 ms", m)
	}
	if got := preFirstMeaning(o, m, ms, false); got != "got its answer after about 2010 ms (its wall time less the instant answer's: approximate), no connection" {
		t.Errorf("got %q", got)
	}
}
