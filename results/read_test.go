package results

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestReadIsBounded(t *testing.T) {
	_, err := Read(context.Background(), zeros{})
	if err == nil || !strings.Contains(err.Error(), "larger than 64 MiB") {
		t.Errorf("got %v, want the 64 MiB limit named", err)
	}
}

func TestReadStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, zeros{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"empty", "  ", "empty: not a saved run"},
		{"not JSON", "{", "not JSON"},
		{"array", "[1]", "the JSON is an array, want an object"},
		{"number", "42", "the JSON is a number, want an object"},
		{"no field", `{"x": 1}`, `no "experiments" or "experiment" field`},
		{"no rows", `{"experiment": "exp-a"}`, "experiment 1 has no name or no rows"},
		{"negative schema", `{"schema_version": -1, "experiments": [{"experiment": "e", "rows": [{"name": "r"}]}]}`, "schema_version -1 is not a version"},
		{"huge end", `{"experiments": [{"experiment": "e", "rows": [], "calls": [{"label": "c", "attempts": [{"start_ms": 0, "end_ms": 1e308, "phases": []}]}]}]}`,
			`call "c" attempt 1: end_ms is 1e+308`},
		{"huge measured", `{"experiment": "e", "rows": [{"name": "r", "measured_ms": -1e20}]}`, `row "r": measured_ms is -1e+20`},
		{"huge stats", `{"experiment": "e", "rows": [{"name": "r", "stats": {"n": 2, "max_ms": 1e300}}]}`, `row "r": stats is 1e+300`},
		{"huge phase", `{"experiment": "e", "rows": [], "calls": [{"label": "c", "attempts": [{"start_ms": 0, "phases": [{"phase": "wait", "ms": 1e40}]}]}]}`,
			`wait phase is 1e+40`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestDecodeSingleRun(t *testing.T) {
	s, err := Decode([]byte(`{"experiment": "exp-a", "pass": true, "rows": [{"name": "r", "measured_ms": 1e-300}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Experiments) != 1 || s.Experiments[0].Experiment != "exp-a" || !s.Pass {
		t.Errorf("got %+v, want a suite of exp-a that passes", s)
	}
}

// readOne returns a reader that yields data in one read and then EOF.
func readOne(data string) io.Reader { return strings.NewReader(data) }

func TestReadSmall(t *testing.T) {
	s, err := Read(context.Background(), readOne(`{"experiments": []}`))
	if err != nil || len(s.Experiments) != 0 {
		t.Errorf("got %+v, %v; want an empty suite", s, err)
	}
}

// TestRowTolerance: a row's own margin widens the run's, never narrows it.
func TestRowTolerance(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	for _, tt := range []struct {
		own      *float64
		measured float64
		pass     bool
	}{
		{nil, 1150, false},     // the run's 100 ms
		{ms(250), 1150, true},  // the row's 250 ms
		{ms(250), 1300, false}, // beyond it
		{ms(20), 1090, true},   // a narrower margin does not narrow the run's
	} {
		r := Row{ExpectedMs: ms(1000), MeasuredMs: ms(tt.measured), ToleranceMs: tt.own}
		r.Judge(100 * time.Millisecond)
		if r.Pass != tt.pass {
			t.Errorf("own %v, measured %v: pass %v, want %v (%s)", tt.own, tt.measured, r.Pass, tt.pass, r.Reason)
		}
	}
}
