package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/results"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// passRun is a run whose rows all pass: a timed row, a timeout row and an executions row
// with no documented value.
func passRun() results.Run {
	run := results.Run{
		Experiment: "exp-a",
		Title:      "trickle vs read timeout",
		Config: []results.Param{
			{Name: "read-timeout", Value: "1s"},
			{Name: "deadline", Value: "5s"},
			{Name: "trickle", Value: "1B/200ms"},
			{Name: "body", Value: "20B"},
		},
		Rows: []results.Row{
			{
				Name:       "trickle 20 B, read-timeout 1s",
				Documented: "4091 ms, ok", DocumentedMs: results.Ms(4091 * time.Millisecond),
				ExpectedMs: results.Ms(4000 * time.Millisecond), MeasuredMs: results.Ms(4000400 * time.Microsecond),
				ExpectedOutcome: "ok", Outcome: "ok",
				ExpectedCalls: 1, Calls: 1,
				Server: "sent 20 B in 4.0 s",
			},
			{
				Name:       "stall, read-timeout 1s",
				Documented: "1000 ms, read-timeout", DocumentedMs: results.Ms(time.Second),
				ExpectedMs: results.Ms(time.Second), MeasuredMs: results.Ms(1003210 * time.Microsecond),
				ExpectedOutcome: "read-timeout", Outcome: "read-timeout",
				ExpectedCalls: 1, Calls: 1,
				Server: "held the response",
			},
			{
				Name:                   "retry after reset",
				ExpectedOutcome:        "ok",
				Outcome:                "ok",
				ExpectedCalls:          1,
				Calls:                  1,
				ExpectedExecutions:     results.Count(2),
				ServerExecutions:       results.Count(2),
				ExpectedNewConnections: results.Count(1),
				NewConnections:         results.Count(1),
				Server:                 "reset -> retried",
			},
		},
	}
	run.Finish(100 * time.Millisecond)
	return run
}

// failRun has one row for each way a row can fail, plus a count-only row with no times and
// a "|" in its server note, and a config value that needs quoting.
func failRun() results.Run {
	run := results.Run{
		Experiment: "exp-b",
		Title:      "deadline vs retries",
		Config: []results.Param{
			{Name: "deadline", Value: "1.5s"},
			{Name: "retries", Value: "2"},
			{Name: "label", Value: "slow server"},
		},
		Rows: []results.Row{
			{
				Name:       "outcome mismatch",
				Documented: "1500 ms, deadline", DocumentedMs: results.Ms(1500 * time.Millisecond),
				ExpectedMs: results.Ms(1500 * time.Millisecond), MeasuredMs: results.Ms(1500400 * time.Microsecond),
				ExpectedOutcome: "deadline", Outcome: "ok",
				ExpectedCalls: 1, Calls: 1,
				Server: "answered in time",
			},
			{
				Name:       "calls mismatch",
				Documented: "2100-2200 ms",
				ExpectedMs: results.Ms(924600 * time.Microsecond), MeasuredMs: results.Ms(930 * time.Millisecond),
				ExpectedOutcome: "ok", Outcome: "ok",
				ExpectedCalls: 5, Calls: 3,
				Server: "3 requests",
			},
			{
				Name:                 "executions mismatch",
				Documented:           "1 exec",
				DocumentedExecutions: results.Count(1),
				ExpectedOutcome:      "error", Outcome: "error",
				ExpectedCalls: 1, Calls: 1,
				ExpectedExecutions: results.Count(1),
				ServerExecutions:   results.Count(2),
				Server:             "executed twice",
			},
			{
				Name:          "pool size",
				ExpectedCalls: 10, Calls: 10,
				Server: "pool full | 2 queued",
			},
			{
				Name:       "off by more than tolerance",
				ExpectedMs: results.Ms(2000 * time.Millisecond), MeasuredMs: results.Ms(2250 * time.Millisecond),
				ExpectedOutcome: "read-timeout", Outcome: "read-timeout",
				ExpectedCalls: 1, Calls: 1,
			},
			{
				Name:            "no measurement",
				ExpectedMs:      results.Ms(time.Second),
				ExpectedOutcome: "connect-timeout", Outcome: "connect-timeout",
				ExpectedCalls: 1, Calls: 1,
				Server: "never accepted",
			},
		},
	}
	run.Finish(100 * time.Millisecond)
	return run
}

// smallRun passes and has no config, so its config line is left out.
func smallRun() results.Run {
	run := results.Run{
		Experiment: "exp-c",
		Title:      "pool lease timeout",
		Rows: []results.Row{{
			Name:       "lease wait",
			ExpectedMs: results.Ms(250 * time.Millisecond), MeasuredMs: results.Ms(251 * time.Millisecond),
			ExpectedOutcome: "lease-timeout", Outcome: "lease-timeout",
			ExpectedCalls: 1, Calls: 1,
		}},
	}
	run.Finish(50 * time.Millisecond)
	return run
}

// testMeta is the Meta of the repeated run and the suite.
func testMeta() *results.Meta {
	return &results.Meta{
		Labrun: "v0.4.0 (3f2c1ab)", GoVersion: "go1.26.0", OS: "linux", Arch: "amd64", CPUs: 8,
		Start:       time.Date(2025, 3, 1, 14, 30, 5, 123456789, time.UTC),
		ToleranceMs: 100, Repeat: 5, Warmup: 1,
	}
}

// repeatRun was measured five times (after a warm-up): a steady row, a noisy row that passes
// with a warning, a status row, a row with a single sample (no spread shown) and a row that
// fails on its median. Its Meta is set, as for a run printed on its own.
func repeatRun() results.Run {
	stats := func(vs ...float64) (*results.Stats, *float64) {
		st, err := results.Summarize(vs)
		if err != nil {
			panic(err)
		}
		return &st, &st.MedianMs
	}
	steady, steadyMs := stats(3999.8, 4000.1, 4000.4, 4000.9, 4001.2)
	noisy, noisyMs := stats(1001, 1002.5, 1003.2, 1040, 1080.7)
	status, statusMs := stats(201.3, 200.9, 201.1, 202, 201.5)
	single, singleMs := stats(1500.4)
	slow, slowMs := stats(2240, 2250, 2251.2, 2260, 2300)
	run := results.Run{
		Experiment: "exp-d",
		Title:      "repeated five times",
		Meta:       testMeta(),
		Config:     []results.Param{{Name: "repeat", Value: "5"}, {Name: "warmup", Value: "1"}},
		Rows: []results.Row{
			{
				Name:       "trickle 20 B, read-timeout 1s",
				Documented: "4091 ms, ok", DocumentedMs: results.Ms(4091 * time.Millisecond),
				ExpectedMs: results.Ms(4000 * time.Millisecond), MeasuredMs: steadyMs, Stats: steady,
				ExpectedOutcome: "ok", Outcome: "ok", ExpectedCalls: 1, Calls: 1,
				Server: "sent 20 B in 4.0 s",
			},
			{
				Name:       "stall, read-timeout 1s",
				ExpectedMs: results.Ms(time.Second), MeasuredMs: noisyMs, Stats: noisy,
				ExpectedOutcome: "read-timeout", Outcome: "read-timeout", ExpectedCalls: 1, Calls: 1,
				Server: "held the response",
			},
			{
				Name:       "refused past the deadline",
				ExpectedMs: results.Ms(200 * time.Millisecond), MeasuredMs: statusMs, Stats: status,
				ExpectedOutcome: "ok", Outcome: "ok", ExpectedCalls: 1, Calls: 1,
				ExpectedStatus: results.Count(503), Status: results.Count(503),
				Server: `said "busy", 503`,
			},
			{
				Name:       "deadline, one sample",
				ExpectedMs: results.Ms(1500 * time.Millisecond), MeasuredMs: singleMs, Stats: single,
				ExpectedOutcome: "deadline", Outcome: "deadline", ExpectedCalls: 1, Calls: 1,
			},
			{
				Name:       "slow on every repeat",
				ExpectedMs: results.Ms(2000 * time.Millisecond), MeasuredMs: slowMs, Stats: slow,
				ExpectedOutcome: "read-timeout", Outcome: "read-timeout", ExpectedCalls: 1, Calls: 1,
			},
		},
	}
	run.Finish(100 * time.Millisecond)
	return run
}

// noisyRun was measured on a loaded machine: one row is later than its tolerance by less
// than the noise explains (inconclusive), one passes. It says how long it took (its Noise).
func noisyRun() results.Run {
	run := results.Run{
		Experiment: "exp-l",
		Title:      "a noisy machine",
		Rows: []results.Row{{
			Name:       "late under load",
			ExpectedMs: results.Ms(time.Second), MeasuredMs: results.Ms(1130 * time.Millisecond),
			ExpectedOutcome: "ok", Outcome: "ok", ExpectedCalls: 1, Calls: 1,
		}, {
			Name:       "in time",
			ExpectedMs: results.Ms(500 * time.Millisecond), MeasuredMs: results.Ms(510 * time.Millisecond),
			ExpectedOutcome: "ok", Outcome: "ok", ExpectedCalls: 1, Calls: 1,
		}},
		Noise: &results.Noise{SpanMs: 12345.6, StolenMs: 812, MaxLateMs: 61},
	}
	run.Finish(100 * time.Millisecond)
	run.Attribute(100*time.Millisecond, func(float64) float64 { return 61 })
	return run
}

// suite has a Meta, as labrun all prints it; its runs have none. Its first run says how long
// it took, as labrun all's runs do; the others do not (a run read back from an older labrun).
func suite() results.Suite {
	pass := passRun()
	pass.Noise = &results.Noise{SpanMs: 4012.5, StolenMs: 3.1, MaxLateMs: 1.2}
	s := results.NewSuite([]results.Run{pass, failRun(), smallRun(), noisyRun()})
	s.Meta = testMeta()
	return s
}

var extensions = map[Format]string{FormatTable: "txt", FormatMarkdown: "md", FormatJSON: "json", FormatCSV: "csv", FormatJUnit: "junit.xml"}

func TestGolden(t *testing.T) {
	cases := []struct {
		name   string
		render func(*bytes.Buffer, Format) error
	}{
		{"run-pass", func(b *bytes.Buffer, f Format) error { return WriteRun(b, f, passRun()) }},
		{"run-fail", func(b *bytes.Buffer, f Format) error { return WriteRun(b, f, failRun()) }},
		{"run-repeat", func(b *bytes.Buffer, f Format) error { return WriteRun(b, f, repeatRun()) }},
		{"suite", func(b *bytes.Buffer, f Format) error { return WriteSuite(b, f, suite()) }},
	}
	for _, c := range cases {
		for _, f := range Formats() {
			name := c.name + "." + extensions[f] + ".golden"
			t.Run(name, func(t *testing.T) {
				var got bytes.Buffer
				if err := c.render(&got, f); err != nil {
					t.Fatalf("render: %v", err)
				}
				checkGolden(t, name, got.String())
			})
		}
	}
}

// TestTableIgnoresEastAsianSetting renders with tablewriter's East Asian width off and on
// (on is what it guesses on a machine with LANG=ja_JP.UTF-8) and expects the same bytes.
func TestTableIgnoresEastAsianSetting(t *testing.T) {
	sameUnderEastAsian(t, func(buf *bytes.Buffer) error { return WriteRun(buf, FormatTable, failRun()) })
}

// sameUnderEastAsian renders with tablewriter's East Asian width off and on and fails the test
// when the bytes differ.
func sameUnderEastAsian(t *testing.T, write func(*bytes.Buffer) error) {
	t.Helper()
	was := twwidth.IsEastAsian()
	t.Cleanup(func() { twwidth.SetEastAsian(was) })
	render := func(eastAsian bool) string {
		t.Helper()
		twwidth.SetEastAsian(eastAsian)
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	off, on := render(false), render(true)
	if on != off {
		t.Errorf("East Asian width changes the table (- off, + on):\n%s", lineDiff(off, on))
	}
}

func TestSuiteJSONRoundTrip(t *testing.T) {
	// The JSON form is a contract: it must decode back into the same suite.
	var buf bytes.Buffer
	want := suite()
	if err := WriteSuite(&buf, FormatJSON, want); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	var got results.Suite
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if err := WriteSuite(&again, FormatJSON, got); err != nil {
		t.Fatal(err)
	}
	if again.String() != buf.String() {
		t.Errorf("JSON does not round-trip:\n%s", lineDiff(buf.String(), again.String()))
	}
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		want    Format
		wantErr string
	}{
		{in: "table", want: FormatTable},
		{in: "json", want: FormatJSON},
		{in: "markdown", want: FormatMarkdown},
		{in: "csv", want: FormatCSV},
		{in: "xml", wantErr: `unknown format "xml" (want table, json, markdown, csv or junit)`},
		{in: "", wantErr: `unknown format "" (want table, json, markdown, csv or junit)`},
		{in: "JSON", wantErr: `unknown format "JSON" (want table, json, markdown, csv or junit)`},
		{in: " table", wantErr: `unknown format " table" (want table, json, markdown, csv or junit)`},
		{in: "md", want: FormatMarkdown},
		{in: "MD", wantErr: `unknown format "MD" (want table, json, markdown, csv or junit)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFormat(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseFormat(%q): got error %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseFormat(%q): got %q, %v, want %q, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	got := Formats()
	want := []Format{FormatTable, FormatJSON, FormatMarkdown, FormatCSV, FormatJUnit}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	got[0] = "changed"
	if Formats()[0] != FormatTable {
		t.Error("Formats returns a shared slice")
	}
}

func TestFormatMs(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{4000, "4000 ms"},
		{0, "0 ms"},
		{924.6, "924.6 ms"},
		{100.5, "100.5 ms"},
		{0.1, "0.1 ms"},
		{1500, "1500 ms"},
	}
	for _, tt := range tests {
		if got := formatMs(tt.in); got != tt.want {
			t.Errorf("formatMs(%v): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// skippedRun is exp-i where namespaces are forbidden: one row measured, two skipped.
func skippedRun() results.Run {
	run := results.Run{Experiment: "exp-i", Title: "a peer that vanishes", Rows: []results.Row{
		{Name: "measured", ExpectedOutcome: "ok", Outcome: "ok", ExpectedCalls: 1, Calls: 1},
		{Name: "kernel timer 1", ExpectedOutcome: "kernel-timeout", ExpectedMs: results.Ms(900 * time.Millisecond), Skipped: "needs network namespaces"},
		{Name: "kernel timer 2", ExpectedOutcome: "kernel-timeout", ExpectedMs: results.Ms(1800 * time.Millisecond), Skipped: "needs network namespaces"},
	}}
	run.Finish(100 * time.Millisecond)
	return run
}

// TestSkippedRowsAreNotPasses: a row that could not be measured is counted as skipped, not as
// a pass, by the footer, the suite's summary and JUnit alike; it does not fail the run.
func TestSkippedRowsAreNotPasses(t *testing.T) {
	run := skippedRun()
	if !run.Pass {
		t.Fatal("skipped rows failed the run")
	}
	want := "1/3 rows pass · 2 skipped · PASS"
	if got := footer(run); !strings.HasSuffix(got, want) {
		t.Errorf("footer %q, want it to end %q", got, want)
	}
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		var buf bytes.Buffer
		if err := Render(&buf, Options{Format: f}, run); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), want) {
			t.Errorf("%s: no %q in\n%s", f, want, buf.String())
		}
	}
	var buf bytes.Buffer
	if err := Render(&buf, Options{Format: FormatJUnit}, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `tests="3" failures="0" errors="0" skipped="2"`) {
		t.Errorf("junit does not count 2 skipped of 3:\n%s", buf.String())
	}
}

func TestSuiteSummary(t *testing.T) {
	pass := passRun()
	fail := failRun()
	fail2 := failRun()
	fail2.Experiment = "exp-d"
	tests := []struct {
		name string
		runs []results.Run
		want string
	}{
		{"all pass", []results.Run{pass, pass, pass}, "all: 3/3 experiments pass"},
		{"one fails", []results.Run{pass, fail, pass}, "all: 2/3 experiments pass, failed: exp-b"},
		{"two fail", []results.Run{fail, pass, fail2}, "all: 1/3 experiments pass, failed: exp-b, exp-d"},
		{"empty", nil, "all: 0/0 experiments pass"},
		{"skipped rows", []results.Run{pass, skippedRun(), fail}, "all: 2/3 experiments pass, failed: exp-b · rows skipped (not measured here): exp-i 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := suiteSummary(results.NewSuite(tt.runs)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCells(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	tests := []struct {
		name string
		row  results.Row
		want []string
	}{
		{
			name: "nothing but a name",
			row:  results.Row{Name: "empty", Pass: true},
			want: []string{"empty", "0", "—", "—", "—", "—", "—", "pass"},
		},
		{
			name: "outcome only",
			row:  results.Row{Name: "r", ExpectedOutcome: "ok", Outcome: "ok", Pass: true},
			want: []string{"r", "0", "—", "ok", "—", "ok", "—", "pass"},
		},
		{
			name: "missing outcome and measurement",
			row: results.Row{Name: "r", ExpectedMs: ms(1500), ExpectedOutcome: "deadline",
				ExpectedExecutions: results.Count(1), Reason: "outcome none, want deadline"},
			want: []string{"r", "0", "—", "1500 ms deadline, 1 exec", "—", "— (want deadline)", "—", "FAIL: outcome none, want deadline"},
		},
		{
			name: "connection counts",
			row: results.Row{Name: "r", ExpectedMs: ms(601), ExpectedOutcome: "read-timeout",
				ExpectedNewConnections: results.Count(0), NewConnections: results.Count(3), Pass: true},
			want: []string{"r", "0", "—", "601 ms read-timeout, pooled conn", "3 new conns", "— (want read-timeout)", "—", "pass"},
		},
		{
			name: "counts expected as ranges",
			row: results.Row{Name: "r", ExpectedExecutions: results.Count(1), ExpectedExecutionsMax: results.Count(3), ServerExecutions: results.Count(2),
				ExpectedNewConnections: results.Count(2), ExpectedNewConnectionsMax: results.Count(5), NewConnections: results.Count(4), Pass: true},
			want: []string{"r", "0", "—", "1-3 exec, 2-5 new conns", "2 exec, 4 new conns", "—", "—", "pass"},
		},
		{
			name: "a band",
			row: results.Row{Name: "r", ExpectedMs: ms(44.5), ExpectedMinMs: ms(38.9), ExpectedMaxMs: ms(54.06), ExpectedOutcome: "ok",
				MeasuredMs: ms(46.2), Outcome: "ok", Pass: true},
			want: []string{"r", "0", "—", "44.5 ms (38.9..54.1) ok", "46.2 ms", "ok", "—", "pass"},
		},
		{
			name: "median of repeats with spread, status and counts",
			row: results.Row{Name: "r", MeasuredMs: ms(4000.4), Status: results.Count(503), ServerExecutions: results.Count(1),
				Stats: &results.Stats{N: 5, MedianMs: 4000.4, MinMs: 3999.8, MaxMs: 4001.2, StddevMs: 0.54}, Pass: true},
			want: []string{"r", "0", "—", "—", "4000.4 ms (n=5, 3999.8..4001.2, sd 0.5), HTTP 503, 1 exec", "—", "—", "pass"},
		},
		{
			name: "a single sample shows no spread",
			row:  results.Row{Name: "r", MeasuredMs: ms(12), Stats: &results.Stats{N: 1, MedianMs: 12, MinMs: 12, MaxMs: 12}, Pass: true},
			want: []string{"r", "0", "—", "—", "12.0 ms", "—", "—", "pass"},
		},
		{
			name: "stats without a measured time show the median",
			row:  results.Row{Name: "r", Stats: &results.Stats{N: 2, MedianMs: 10.25, MinMs: 10, MaxMs: 10.5, StddevMs: 0.35}, Pass: true},
			want: []string{"r", "0", "—", "—", "10.2 ms (n=2, 10.0..10.5, sd 0.3)", "—", "—", "pass"},
		},
		{
			name: "pass with a warning",
			row:  results.Row{Name: "r", Pass: true, Warning: "spread 79.7 ms (1001.0 to 1080.7) exceeds half the tolerance"},
			want: []string{"r", "0", "—", "—", "—", "—", "—", "pass (warning: spread 79.7 ms (1001.0 to 1080.7) exceeds half the tolerance)"},
		},
		{
			name: "failed without reason",
			row:  results.Row{Name: "r", MeasuredMs: ms(12), ServerExecutions: results.Count(0)},
			want: []string{"r", "0", "—", "—", "12.0 ms, 0 exec", "—", "—", "FAIL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (verdicter{}).cells(tt.row); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMetaLine(t *testing.T) {
	full := testMeta()
	noWarmup := testMeta()
	noWarmup.Warmup = 0
	warmups := testMeta()
	warmups.Warmup, warmups.CPUs = 3, 1
	zone := testMeta()
	zone.Start = time.Date(2025, 3, 1, 15, 30, 5, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		m    *results.Meta
		want string
	}{
		{"full", full, "labrun v0.4.0 (3f2c1ab) · go1.26.0 linux/amd64 · 8 CPUs · 2025-03-01T14:30:05Z · tolerance ±100 ms · repeat 5 (+1 warm-up)"},
		{"no warm-up", noWarmup, "labrun v0.4.0 (3f2c1ab) · go1.26.0 linux/amd64 · 8 CPUs · 2025-03-01T14:30:05Z · tolerance ±100 ms · repeat 5"},
		{"warm-ups and one CPU", warmups, "labrun v0.4.0 (3f2c1ab) · go1.26.0 linux/amd64 · 1 CPU · 2025-03-01T14:30:05Z · tolerance ±100 ms · repeat 5 (+3 warm-ups)"},
		{"start keeps its zone", zone, "labrun v0.4.0 (3f2c1ab) · go1.26.0 linux/amd64 · 8 CPUs · 2025-03-01T15:30:05+01:00 · tolerance ±100 ms · repeat 5 (+1 warm-up)"},
		{"nothing known", &results.Meta{ToleranceMs: 50}, "labrun — · tolerance ±50 ms"},
		{"nil", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := metaLine(tt.m); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestConfigLine(t *testing.T) {
	run := results.Run{Config: []results.Param{
		{Name: "a", Value: "1s"}, {Name: "b", Value: ""}, {Name: "c", Value: `say "hi"`},
	}}
	want := `config: a=1s b="" c="say \"hi\""`
	if got := configLine(run); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := configLine(results.Run{}); got != "" {
		t.Errorf("empty config: got %q, want \"\"", got)
	}
}

func TestMarkdownEscapes(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a | b", `a \| b`},
		{"two\nlines", "two lines"},
		{"plain", "plain"},
	}
	for _, tt := range tests {
		if got := markdownCell(tt.in); got != tt.want {
			t.Errorf("markdownCell(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
	codes := []struct{ in, want string }{
		{"config: a=1", "`config: a=1`"},
		{"config: a=`x`", "`` config: a=`x` ``"},
	}
	for _, tt := range codes {
		if got := markdownCode(tt.in); got != tt.want {
			t.Errorf("markdownCode(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorsWriteNothing(t *testing.T) {
	nan := passRun()
	nan.Rows[0].MeasuredMs = new(math.NaN())
	tests := []struct {
		name    string
		write   func(*bytes.Buffer) error
		wantErr string
	}{
		{"run unknown format", func(b *bytes.Buffer) error { return WriteRun(b, "xml", passRun()) },
			`render exp-a: unknown format "xml" (want table, json, markdown, csv or junit)`},
		{"suite unknown format", func(b *bytes.Buffer) error { return WriteSuite(b, "", suite()) },
			`render suite: unknown format "" (want table, json, markdown, csv or junit)`},
		{"run NaN in JSON", func(b *bytes.Buffer) error { return WriteRun(b, FormatJSON, nan) },
			"render exp-a: json: unsupported value: NaN"},
		{"suite NaN in JSON", func(b *bytes.Buffer) error {
			return WriteSuite(b, FormatJSON, results.NewSuite([]results.Run{passRun(), nan}))
		}, "render suite: json: unsupported value: NaN"},
		{"run NaN in CSV", func(b *bytes.Buffer) error { return WriteRun(b, FormatCSV, nan) },
			`render exp-a: row "trickle 20 B, read-timeout 1s": measured_ms is NaN, want a finite number`},
		{"suite Inf in CSV", func(b *bytes.Buffer) error {
			inf := repeatRun()
			inf.Rows[1].Stats.MaxMs = math.Inf(1)
			return WriteSuite(b, FormatCSV, results.NewSuite([]results.Run{passRun(), inf}))
		}, `render suite: row "stall, read-timeout 1s": max_ms is +Inf, want a finite number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := tt.write(&buf)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("got error %v, want %q", err, tt.wantErr)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error, want none:\n%s", buf.Len(), buf.String())
			}
		})
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWriteErrorIsWrapped(t *testing.T) {
	boom := errors.New("disk full")
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			err := WriteRun(failingWriter{boom}, f, passRun())
			if !errors.Is(err, boom) {
				t.Errorf("WriteRun: got %v, want it to wrap %v", err, boom)
			}
			err = WriteSuite(failingWriter{boom}, f, suite())
			if !errors.Is(err, boom) {
				t.Errorf("WriteSuite: got %v, want it to wrap %v", err, boom)
			}
		})
	}
}

// checkGolden compares got with testdata/name, or rewrites the file when -update is set.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report/ -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: output differs from golden file (- want, + got; rerun with -update to accept):\n%s",
			path, lineDiff(string(want), got))
	}
}

// lineDiff returns a line diff from want to got built on a longest common subsequence:
// " " lines are in both, "-" only in want, "+" only in got. Golden files are small, so the
// quadratic table is fine.
func lineDiff(want, got string) string {
	a := strings.SplitAfter(want, "\n")
	b := strings.SplitAfter(got, "\n")
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	line := func(prefix, s string) {
		if s == "" {
			return // the empty piece after a final newline
		}
		if !strings.HasSuffix(s, "\n") {
			s += "\n\\ no newline at end\n"
		}
		out.WriteString(prefix + s)
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			line("  ", a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			line("- ", a[i])
			i++
		default:
			line("+ ", b[j])
			j++
		}
	}
	return out.String()
}

func TestLineDiff(t *testing.T) {
	got := lineDiff("a\nb\nc\n", "a\nB\nc\nd")
	want := "  a\n- b\n+ B\n  c\n+ d\n\\ no newline at end\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestJSONLayout pins the JSON layout to json.MarshalIndent(v, "", "  ") plus a newline;
// the only intended difference, HTML escaping, does not arise for failRun.
func TestJSONLayout(t *testing.T) {
	run := failRun()
	want, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := WriteRun(&got, FormatJSON, run); err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want)+"\n" {
		t.Errorf("JSON differs from MarshalIndent:\n%s", lineDiff(string(want)+"\n", got.String()))
	}
}
