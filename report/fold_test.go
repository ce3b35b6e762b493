package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/results"
)

// foldRun is a run whose rows all pass but one skipped, one with a warning, with names too
// long for a row column at 80: a fitted table there leaves its verdicts to the footer.
func foldRun() results.Run {
	long := "a row whose name is long enough to go above its cells at eighty columns"
	return results.Run{
		Experiment: "exp-z", Title: "verdicts folded", ToleranceMs: 20,
		Rows: []results.Row{
			{Name: long + ", one", ExpectedMs: msPtr(300), MeasuredMs: msPtr(301.4), ExpectedOutcome: "ok", Outcome: "ok",
				ExpectedNewConnections: results.Count(2), NewConnections: results.Count(2), Server: "held the handshake", Pass: true},
			{Name: long + ", two", ExpectedMs: msPtr(1500), MeasuredMs: msPtr(1500.4), ExpectedOutcome: "deadline", Outcome: "deadline",
				Warning: "spread 60.0 ms (1490.0 to 1550.0) exceeds half the tolerance", Server: "trickled", Pass: true},
			{Name: long + ", three", ExpectedMs: msPtr(924601), ExpectedOutcome: "read-timeout",
				Skipped: "measured in exp-i (needs a network namespace)", Pass: true},
		},
	}
}

// TestVerdictsFolded: at 80 columns, a table whose rows all pass or are skipped has no
// verdict column: the skipped row says so in its outcome's cell, the warning's number follows
// the measured time, and the footer's tally says the rest. One failing row brings the column
// back.
func TestVerdictsFolded(t *testing.T) {
	out := renderAt(t, foldRun(), 80, false)
	header := lineWith(out, "| expected")
	if strings.Contains(header, "verdict") {
		t.Errorf("every row passes or is skipped, yet a verdict column:\n%s", out)
	}
	if l := lineWith(out, "skipped ["); !strings.Contains(l, "| skipped [") || strings.Count(l, "[") != 1 {
		t.Errorf("the skipped row's outcome cell should say it, once: %q\n%s", l, out)
	}
	if !strings.Contains(out, "1500.4 ms [") || !strings.Contains(out, "] warning: spread") {
		t.Errorf("the warning's number should follow the measured time:\n%s", out)
	}
	if !strings.Contains(out, "2/3 rows pass · 1 skipped · PASS") {
		t.Errorf("the footer's tally:\n%s", out)
	}

	failing := foldRun()
	failing.Rows[0].Pass, failing.Rows[0].Reason, failing.Pass = false, "off by +250.0 ms", false
	out = renderAt(t, failing, 80, false)
	if header := lineWith(out, "| expected"); !strings.Contains(header, "verdict") {
		t.Errorf("a failing row needs the verdict column:\n%s", out)
	}
}

// lineWith is the first line of out holding s.
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestMetExpected: the expected cell of a fitted table leaves out the counts and status the
// measurement met, when the model's time is left; without a time, a cell equal to the measured
// one is "same". A count that differs, or a range, stays.
func TestMetExpected(t *testing.T) {
	ms := results.Ms(300 * time.Millisecond)
	status := func(v int) *int { return &v }
	for _, tc := range []struct {
		name string
		r    results.Row
		want string
	}{
		{"counts met", results.Row{ExpectedMs: ms, MeasuredMs: ms, ExpectedNewConnections: results.Count(2), NewConnections: results.Count(2),
			ExpectedExecutions: results.Count(1), ServerExecutions: results.Count(1)}, "300 ms"},
		{"status met", results.Row{ExpectedMs: ms, MeasuredMs: ms, ExpectedStatus: status(503), Status: status(503)}, "300 ms"},
		{"a count that differs", results.Row{ExpectedMs: ms, MeasuredMs: ms, ExpectedNewConnections: results.Count(2), NewConnections: results.Count(1),
			ExpectedExecutions: results.Count(1), ServerExecutions: results.Count(1)}, "300 ms, 2 new conns"},
		{"a range", results.Row{ExpectedMs: ms, MeasuredMs: ms, ExpectedExecutions: results.Count(1), ExpectedExecutionsMax: results.Count(3),
			ServerExecutions: results.Count(1)}, "300 ms, 1-3 exec"},
		{"no time, the same", results.Row{ExpectedStatus: status(408), Status: status(408), ExpectedExecutions: results.Count(2),
			ServerExecutions: results.Count(2)}, sameAsMeasured},
		{"no time, a count that differs", results.Row{ExpectedExecutions: results.Count(2), ServerExecutions: results.Count(1)}, "2 exec"},
		{"nothing expected", results.Row{}, dash},
	} {
		if got := metExpected(tc.r); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFitWidthsLastColumn: the verdict keeps its width, but a last column that is not the
// verdict (the verdicts folded) wraps like any other.
func TestFitWidthsLastColumn(t *testing.T) {
	rows := [][]string{{"row", "1 ms", "leased 0, pending 0, available 0, max 100"}}
	w, ok := fitWidths([]string{"row", "expected", "outcome"}, rows, 40, false, lineCache{})
	if !ok || w[2] >= textLen(rows[0][2]) {
		t.Errorf("outcome last: got %v (ok %v), want it wrapped under 40 columns", w, ok)
	}
	if _, ok := fitWidths([]string{"row", "expected", verdictCol.name}, rows, 40, false, lineCache{}); ok {
		t.Errorf("verdict last: fitted at 40 columns, want its whole width kept")
	}
}

// TestFoldedColour: with the verdicts folded, the outcome takes the verdict's colour, and the
// fitted footer's PASS, in the middle of its line, is coloured as the full footer's is.
func TestFoldedColour(t *testing.T) {
	run := foldRun()
	run.Pass = true
	var lit bytes.Buffer
	if err := Render(&lit, Options{Format: FormatTable, Width: 80, Color: true}, run); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{green + "ok" + reset, yellow + "skipped [", "· " + green + "PASS" + reset + " · "} {
		if !strings.Contains(lit.String(), want) {
			t.Errorf("the folded table lacks %q:\n%s", want, lit.String())
		}
	}
}
