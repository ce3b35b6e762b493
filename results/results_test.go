package results

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

func f(v float64) *float64 { return &v }

// TestSummarize checks the statistics against values worked out by hand.
func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Stats
	}{
		{"one value", []float64{4000.4}, Stats{N: 1, MedianMs: 4000.4, MinMs: 4000.4, MaxMs: 4000.4}},
		// mean 2, squares 1+0+1 = 2, sample variance 2/2 = 1.
		{"odd count", []float64{3, 1, 2}, Stats{N: 3, MedianMs: 2, MinMs: 1, MaxMs: 3, StddevMs: 1}},
		// median (2+3)/2; mean 2.5, squares 2.25+0.25+0.25+2.25 = 5, variance 5/3, sd 1.29.
		{"even count", []float64{4, 1, 3, 2}, Stats{N: 4, MedianMs: 2.5, MinMs: 1, MaxMs: 4, StddevMs: 1.29}},
		{"equal values", []float64{500.5, 500.5, 500.5}, Stats{N: 3, MedianMs: 500.5, MinMs: 500.5, MaxMs: 500.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := Summarize(tt.in); err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestSummarizeRefuses: no values, or a value that is not a number, is an error, not a panic
// or a NaN median.
func TestSummarizeRefuses(t *testing.T) {
	for _, in := range [][]float64{nil, {}, {1, math.NaN()}, {math.Inf(1)}} {
		if st, err := Summarize(in); err == nil {
			t.Errorf("Summarize(%v) = %+v, want an error", in, st)
		}
	}
}

func TestJudge(t *testing.T) {
	base := func() Row {
		return Row{ExpectedMs: f(300), MeasuredMs: f(301), ExpectedOutcome: "read-timeout", Outcome: "read-timeout", ExpectedCalls: 1, Calls: 1}
	}
	tests := []struct {
		name   string
		change func(r *Row)
		reason string
	}{
		{"pass", func(r *Row) {}, ""},
		{"outcome", func(r *Row) { r.Outcome = "ok" }, "outcome ok, want read-timeout"},
		{"calls", func(r *Row) { r.Calls = 2 }, "2 calls, want 1"},
		{"time", func(r *Row) { r.MeasuredMs = f(450) }, "off by +150.0 ms, tolerance 100 ms"},
		{"edge of tolerance", func(r *Row) { r.MeasuredMs = f(400) }, ""},
		{"no measurement", func(r *Row) { r.MeasuredMs = nil }, "no measured time"},
		{"executions", func(r *Row) { r.ExpectedExecutions, r.ServerExecutions = Count(1), Count(2) }, "server executed 2 times, want 1"},
		{"status", func(r *Row) { r.ExpectedStatus, r.Status = Count(503), Count(200) }, "status 200, want 503"},
		{"connections", func(r *Row) { r.ExpectedNewConnections, r.NewConnections = Count(1), Count(0) }, "0 new connections, want 1"},
		{"first reason wins", func(r *Row) { r.Outcome, r.Calls = "ok", 3 }, "outcome ok, want read-timeout"},
		{"in a band narrower than the tolerance", func(r *Row) { r.ExpectedMinMs, r.ExpectedMaxMs = f(295), f(302) }, ""},
		{"above a band, within the tolerance", func(r *Row) { r.ExpectedMinMs, r.ExpectedMaxMs = f(295), f(300.5) }, "301.0 ms outside the band 295.0 to 300.5 ms"},
		{"below a band", func(r *Row) { r.ExpectedMinMs, r.ExpectedMaxMs = f(301.5), f(450) }, "301.0 ms outside the band 301.5 to 450.0 ms"},
		{"in a band wider than the tolerance", func(r *Row) { r.MeasuredMs, r.ExpectedMinMs, r.ExpectedMaxMs = f(450), f(250), f(460) }, ""},
		{"a band, not a row's tolerance", func(r *Row) { r.ExpectedMinMs, r.ExpectedMaxMs, r.ToleranceMs = f(295), f(300), f(50) }, "301.0 ms outside the band 295.0 to 300.0 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base()
			tt.change(&r)
			r.Judge(100 * ms)
			if r.Pass != (tt.reason == "") || r.Reason != tt.reason {
				t.Errorf("got pass %v, reason %q; want reason %q", r.Pass, r.Reason, tt.reason)
			}
		})
	}
}

func run(name string, measured ...float64) Run {
	r := Run{Experiment: name}
	for i, m := range measured {
		r.Rows = append(r.Rows, Row{Name: string(rune('a' + i)), ExpectedMs: f(500), MeasuredMs: f(m), ExpectedOutcome: "ok", Outcome: "ok", ExpectedCalls: 1, Calls: 1})
	}
	r.Calls = []Call{{Label: name + "-calls"}}
	return r
}

func TestAggregate(t *testing.T) {
	runs := []Run{run("x", 510, 560), run("x", 502, 500), run("x", 506, 600)}
	runs[1].Calls[0].Label = "median run"
	got, err := Aggregate(runs, 100*ms)
	if err != nil {
		t.Fatal(err)
	}
	// Row a: 510, 502, 506 -> median 506, spread 8: a quiet pass.
	a := got.Rows[0]
	if *a.MeasuredMs != 506 || a.Stats.N != 3 || a.Stats.MinMs != 502 || a.Stats.MaxMs != 510 || !a.Pass || a.Warning != "" {
		t.Errorf("row a: got %+v with stats %+v", a, a.Stats)
	}
	// Row b: 560, 500, 600 -> median 560 within 100 ms of 500, but a spread of 100 ms > 50.
	b := got.Rows[1]
	if *b.MeasuredMs != 560 || !b.Pass || !strings.Contains(b.Warning, "spread 100.0 ms") {
		t.Errorf("row b: got measured %v, pass %v, warning %q", *b.MeasuredMs, b.Pass, b.Warning)
	}
	// Sums 1070, 1002, 1106: the median run is the first.
	if got.Calls[0].Label != "x-calls" {
		t.Errorf("got timelines of %q, want those of the median run", got.Calls[0].Label)
	}
	if !got.Pass {
		t.Error("aggregate failed, want pass")
	}
}

// TestAggregateExpected: where the model takes a measured input, the runs' expected times
// differ, and the aggregate expects their median.
func TestAggregateExpected(t *testing.T) {
	runs := []Run{run("x", 500), run("x", 500), run("x", 500)}
	for i, e := range []float64{503, 509, 501} {
		runs[i].Rows[0].ExpectedMs = &e
	}
	got, err := Aggregate(runs, 100*ms)
	if err != nil {
		t.Fatal(err)
	}
	if e := got.Rows[0].ExpectedMs; e == nil || *e != 503 {
		t.Errorf("expected: got %v, want the median 503", e)
	}
	// A configuration value that differs over the runs says so.
	runs[0].Config = []Param{{"fixed", "1"}, {"calibration", "a"}}
	runs[1].Config = []Param{{"fixed", "1"}, {"calibration", "b"}}
	runs[2].Config = []Param{{"fixed", "1"}, {"calibration", "a"}}
	got, err = Aggregate(runs, 100*ms)
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{{"fixed", "1"}, {"calibration", "a (run 1 of 3; it differs in run 2)"}}
	if !slices.Equal(got.Config, want) {
		t.Errorf("config: got %v, want %v", got.Config, want)
	}
}

// TestCountRanges checks a count expected as a range: judged within it, free to differ over
// repeats, and shown by its first value out of range.
func TestCountRanges(t *testing.T) {
	ranged := func(conns int) Row {
		return Row{Name: "herd", ExpectedNewConnections: Count(2), ExpectedNewConnectionsMax: Count(5), NewConnections: Count(conns),
			ExpectedExecutions: Count(1), ExpectedExecutionsMax: Count(2), ServerExecutions: Count(1)}
	}
	for conns, pass := range map[int]bool{1: false, 2: true, 4: true, 5: true, 6: false} {
		r := ranged(conns)
		r.Judge(time.Millisecond)
		if r.Pass != pass {
			t.Errorf("%d connections in 2-5: pass %v (%s), want %v", conns, r.Pass, r.Reason, pass)
		}
		if !pass && r.Reason != fmt.Sprintf("%d new connections, want 2-5", conns) {
			t.Errorf("reason %q", r.Reason)
		}
	}
	agg := func(conns ...int) Row {
		var runs []Run
		for _, c := range conns {
			runs = append(runs, Run{Experiment: "x", Rows: []Row{ranged(c)}})
		}
		got, err := Aggregate(runs, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return got.Rows[0]
	}
	if r := agg(2, 5, 3); !r.Pass || *r.NewConnections != 3 {
		t.Errorf("runs of 2, 5, 3 in 2-5: pass %v (%s), %d connections; want a pass with the median, 3", r.Pass, r.Reason, *r.NewConnections)
	}
	if r := agg(3, 7, 2); r.Pass || r.Reason != "7 new connections, want 2-5" {
		t.Errorf("runs of 3, 7, 2 in 2-5: pass %v, reason %q; want the 7 to fail it", r.Pass, r.Reason)
	}
	// An exact count still makes differing runs unstable.
	exact := []Run{{Experiment: "x", Rows: []Row{{Name: "a", ExpectedNewConnections: Count(1), NewConnections: Count(1)}}},
		{Experiment: "x", Rows: []Row{{Name: "a", ExpectedNewConnections: Count(1), NewConnections: Count(2)}}}}
	if got, err := Aggregate(exact, time.Millisecond); err != nil || got.Rows[0].Pass {
		t.Errorf("exact count differing over runs: %v, pass %v; want a failure", err, got.Rows[0].Pass)
	}
}

func TestAggregateUnstable(t *testing.T) {
	runs := []Run{run("x", 500), run("x", 500)}
	runs[1].Rows[0].Outcome = "deadline"
	got, err := Aggregate(runs, 100*ms)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pass || got.Rows[0].Reason != "unstable over repeats: outcome ok in run 1, deadline in run 2" {
		t.Errorf("got pass %v, reason %q", got.Pass, got.Rows[0].Reason)
	}
	// A row that one run lacks fails; the others are judged as usual.
	shaped, err := Aggregate([]Run{run("x", 500), run("x", 500, 510)}, 100*ms)
	if err != nil || len(shaped.Rows) != 2 || !shaped.Rows[0].Pass || shaped.Rows[1].Pass ||
		shaped.Rows[1].Reason != "unstable over repeats: missing in run 1" {
		t.Errorf("got %v, %+v; want row a passing and row b failing as missing in run 1", err, shaped.Rows)
	}
	if _, err := Aggregate([]Run{run("x", 1), run("y", 1)}, 100*ms); err == nil {
		t.Error("runs of different experiments aggregated, want an error")
	}
	if _, err := Aggregate(nil, 100*ms); err == nil {
		t.Error("no runs aggregated, want an error")
	}
}

func TestNewSuite(t *testing.T) {
	if s := NewSuite(nil); !s.Pass || s.Experiments == nil {
		t.Errorf("got %+v, want a passing suite with an empty list", s)
	}
	s := NewSuite([]Run{{Pass: true}, {Pass: false}})
	if s.Pass {
		t.Error("a suite with a failing run passed")
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ in, want string }{
		{"okhttp: 503, Retry-After: 0", "okhttp-503-retry-after-0"},
		{"same, deadline 1.5s", "same-deadline-1-5s"},
		{"  --- ", "row"},
		{"", "row"},
		{"Ünïcode naïve", "n-code-na-ve"},
		{strings.Repeat("ab ", 40), strings.TrimRight(strings.Repeat("ab-", 22), "-")[:64]},
	}
	for _, tt := range tests {
		if got := Slug(tt.in); got != tt.want {
			t.Errorf("Slug(%q): got %q, want %q", tt.in, got, tt.want)
		}
		if got := Slug(tt.in); len(got) > 64 || strings.HasSuffix(got, "-") || strings.HasPrefix(got, "-") {
			t.Errorf("Slug(%q) = %q: not a slug", tt.in, got)
		}
	}
}

func TestRowIDs(t *testing.T) {
	run := Run{Experiment: "exp-z", Rows: []Row{
		{Name: "batch 1"}, {Name: "Batch 1"}, {Name: "kept", ID: "batch-1-3"}, {Name: "batch 1"}, {Name: "reworded", ID: "old-name"},
	}}
	run.Finish(0)
	var got []string
	for _, r := range run.Rows {
		got = append(got, r.ID)
	}
	if want := "batch-1 batch-1-2 batch-1-3 batch-1-4 old-name"; strings.Join(got, " ") != want {
		t.Errorf("got ids %q, want %q", strings.Join(got, " "), want)
	}
	// A saved run from before ids gets the same ones, and the current schema version.
	old := `{"experiment": "exp-z", "rows": [{"name": "batch 1"}, {"name": "Batch 1"}]}`
	s, err := Decode([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if s.SchemaVersion != SchemaVersion || s.Experiments[0].Rows[0].ID != "batch-1" || s.Experiments[0].Rows[1].ID != "batch-1-2" {
		t.Errorf("decoded an old run as %+v", s)
	}
	if _, err := Decode([]byte(`{"schema_version": 99, "experiments": []}`)); err == nil || !strings.Contains(err.Error(), "schema_version 99 is newer") {
		t.Errorf("a newer schema: got %v", err)
	}
	if s := NewSuite(nil); s.SchemaVersion != SchemaVersion {
		t.Errorf("NewSuite: schema_version %d", s.SchemaVersion)
	}
}
