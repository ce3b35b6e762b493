package http2

import (
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
)

func TestFitBurst(t *testing.T) {
	us := time.Microsecond
	line := make([]time.Duration, 100)
	for k := range line {
		line[k] = 2*time.Millisecond + time.Duration(k+1)*20*us // R + k x c, k from 1
	}
	for _, c := range []struct {
		name   string
		took   []time.Duration
		r, per time.Duration
	}{
		{"a burst on the model's line", line, 2 * time.Millisecond, 20 * us},
		{"all alike", []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}, 5 * time.Millisecond, 0},
		// Steep at the end: the line through them starts below 0, which no set-up does.
		{"no negative set-up", []time.Duration{0, 0, 0, 10 * time.Millisecond}, 0, 3 * time.Millisecond},
		{"one call", []time.Duration{time.Millisecond}, 0, 0},
	} {
		r, per := lab.FitBurst(c.took)
		if d := r - c.r; d < -us || d > us || per-c.per < -us/10 || per-c.per > us/10 {
			t.Errorf("%s: set-up %v, %v per stream; want %v, %v", c.name, r, per, c.r, c.per)
		}
	}
}

// TestCalibrationNote: the rows fed by the calibration say so, and warn when it is beyond what
// a healthy client shows.
func TestCalibrationNote(t *testing.T) {
	for _, c := range []struct {
		cal  h2Calibration
		warn bool
	}{
		{h2Calibration{setUp: 2 * time.Millisecond, perStream: 20 * time.Microsecond}, false},
		{h2Calibration{setUp: calMaxSetUp, perStream: calMaxPerStream}, false},
		{h2Calibration{setUp: 30 * time.Millisecond, perStream: 20 * time.Microsecond}, true},
		{h2Calibration{setUp: 2 * time.Millisecond, perStream: 300 * time.Microsecond}, true},
	} {
		n := c.cal.note()
		if !strings.Contains(n, "as calibrated") {
			t.Errorf("%+v: note %q does not say the model is calibrated", c.cal, n)
		}
		if got := strings.Contains(n, "beyond what a healthy client shows"); got != c.warn {
			t.Errorf("%+v: warns %v, want %v (%q)", c.cal, got, c.warn, n)
		}
	}
}
