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
			`phase "wait" is 1e+40`},
		// What no run of labrun's holds (before, each rendered, exit 0: "±-5", "5-2 exec").
		{"negative calls", oneRow(`"calls": -1`), `row "r": calls is -1, want a count of at least 0`},
		{"negative executions", oneRow(`"server_executions": -3`), `server_executions is -3`},
		{"negative connections", oneRow(`"expected_new_connections": -1`), `expected_new_connections is -1`},
		{"negative status", oneRow(`"status": -5`), `status is -5, want an HTTP status`},
		{"negative tolerance", `{"experiment": "e", "tolerance_ms": -5, "rows": [{"name": "r"}]}`, `"e": tolerance_ms is -5, want at least 0`},
		{"negative row tolerance", oneRow(`"tolerance_ms": -5`), `row "r": tolerance_ms is -5`},
		{"n=-1, min > max", oneRow(`"stats": {"n": -1, "median_ms": 3, "min_ms": 5, "max_ms": 2}`), `stats n is -1, want at least 1`},
		{"min > max", oneRow(`"stats": {"n": 3, "median_ms": 3, "min_ms": 5, "max_ms": 2}`), `stats min 5, median 3, max 2: want them in order`},
		{"negative stddev", oneRow(`"stats": {"n": 3, "median_ms": 3, "min_ms": 2, "max_ms": 5, "stddev_ms": -1}`), `stddev_ms is -1`},
		{"max below expected", oneRow(`"expected_server_executions": 5, "expected_server_executions_max": 2`),
			`expected_server_executions_max 2 is below expected_server_executions 5`},
		{"max alone", oneRow(`"expected_new_connections_max": 2`), `expected_new_connections_max without expected_new_connections`},
		{"band half", oneRow(`"expected_ms": 5, "expected_min_ms": 2`), `expected_min_ms and expected_max_ms come together`},
		{"band without expected", oneRow(`"expected_min_ms": 2, "expected_max_ms": 3`), `without expected_ms`},
		{"band out of order", oneRow(`"expected_ms": 5, "expected_min_ms": 6, "expected_max_ms": 9`), `expected_min_ms 6, expected_ms 5, expected_max_ms 9: want them in order`},
		{"huge band", oneRow(`"expected_ms": 5, "expected_min_ms": 2, "expected_max_ms": 1e300`), `expected_max_ms is 1e+300`},
		{"duplicate ids", `{"experiment": "e", "rows": [{"id": "a", "name": "r"}, {"id": "a", "name": "s"}]}`, `two rows have the id "a"`},
		{"ESC in a phase, negative", `{"experiment": "e", "rows": [], "calls": [{"label": "c", "attempts": [{"start_ms": 0, "phases": [{"phase": "\u001b[2J", "ms": -3}]}]}]}`,
			`phase "\x1b[2J" is -3, want a time of at least 0`},
		{"negative start", `{"experiment": "e", "rows": [], "calls": [{"label": "c", "attempts": [{"start_ms": -1, "phases": []}]}]}`, `start_ms is -1`},
		{"long name cut", `{"experiment": "e", "rows": [{"name": "` + strings.Repeat(`\u001b`, 1000) + `", "tolerance_ms": -1}]}`, `… (1000 bytes): tolerance_ms`},
		{"experiment not a file name", `{"experiment": "../x", "rows": []}`, `experiment name "../x" cannot name a file`},
		{"experiment twice", `{"experiments": [{"experiment": "a", "rows": []}, {"experiment": "a", "rows": []}]}`, `experiment "a" appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
			if err != nil && (strings.ContainsAny(err.Error(), "\x1b\n\r") || len(err.Error()) > 1024) {
				t.Errorf("the error %q is not one escaped line of at most 1 KiB", err)
			}
		})
	}
}

// oneRow is a saved run of one row "r" with fields added to the row.
func oneRow(fields string) string {
	return `{"experiment": "e", "rows": [{"name": "r", ` + fields + `}]}`
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
