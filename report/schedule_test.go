package report

import (
	"testing"
	"time"
)

func TestScheduleEnd(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := time.Second
	for _, tt := range []struct {
		name    string
		busy    []time.Duration // from t0
		lanes   int
		waiting []time.Duration
		want    time.Duration
	}{
		{"nothing", nil, 2, nil, 0},
		{"one lane in turn", []time.Duration{3 * s}, 1, []time.Duration{2 * s, s}, 6 * s},
		{"two lanes", []time.Duration{3 * s}, 2, []time.Duration{2 * s, 2 * s}, 4 * s},
		{"a busy time past counts as now", []time.Duration{-s}, 1, []time.Duration{2 * s}, 2 * s},
		{"more busy than lanes", []time.Duration{s, 5 * s, 2 * s}, 2, []time.Duration{3 * s}, 5 * s},
	} {
		var busy []time.Time
		for _, d := range tt.busy {
			busy = append(busy, t0.Add(d))
		}
		if got := ScheduleEnd(t0, busy, tt.lanes, tt.waiting).Sub(t0); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestScheduleEndNeverGrows: pieces that start when the schedule said, each taking its time,
// never make the time left grow; it falls by the time passed, or more when one ends early.
func TestScheduleEndNeverGrows(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	caps := []time.Duration{13 * time.Second, 12 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	const lanes = 3
	var running []time.Time // ends
	now := t0
	prev, prevAt := time.Duration(-1), now
	for i := range caps {
		// The next starts when a lane frees (at once while one is free).
		if len(running) == lanes {
			first := 0
			for j := range running {
				if running[j].Before(running[first]) {
					first = j
				}
			}
			now = running[first]
			running = append(running[:first], running[first+1:]...)
		}
		running = append(running, now.Add(caps[i]))
		left := ScheduleEnd(now, running, lanes, caps[i+1:]).Sub(now)
		if prev >= 0 && left > prev-now.Sub(prevAt) {
			t.Errorf("piece %d at %v: %v left, more than %v then less %v since", i, now.Sub(t0), left, prev, now.Sub(prevAt))
		}
		prev, prevAt = left, now
	}
}
