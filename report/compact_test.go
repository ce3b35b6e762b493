package report

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/labrun/labrun/results"
)

// testLong is a run whose cells are long: names, reasons and config as real runs have them.
func testLong() results.Run {
	run := failRun()
	run.Rows = append(run.Rows, results.Row{
		Name:       "trickle 10 B every 400ms, read timeout 1s, total deadline 1.5s, pooled connection",
		ExpectedMs: msPtr(1500), MeasuredMs: msPtr(1500.4), ExpectedOutcome: "deadline", Outcome: "deadline",
		ExpectedExecutions: results.Count(1), ServerExecutions: results.Count(1), Pass: true,
		Warning: "spread 60.0 ms (1490.0 to 1550.0) exceeds half the tolerance",
	}, results.Row{Name: "needs a namespace", Skipped: "unprivileged user namespaces are not available here", Pass: true})
	return run
}

func TestCompactFits(t *testing.T) {
	suite := results.NewSuite([]results.Run{passRun(), testLong(), repeatRun()})
	suite.Meta = &results.Meta{Labrun: "v1 (abcdef123456)", GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", CPUs: 2, ToleranceMs: 100, Repeat: 5, Warmup: 1}
	for _, width := range []int{80, 100, 119, 120, 160} {
		for _, color := range []bool{false, true} {
			plain := renderAt(t, suite, width, color)
			checkFits(t, plain, width, suite)
			for _, want := range []string{"row", "expected", "measured", "outcome", "verdict", "FAIL [", "off by +250.0 ms", "skip [", "pass ["} {
				if !strings.Contains(plain, want) {
					t.Errorf("width %d: output lacks %q:\n%s", width, want, plain)
				}
			}
		}
	}
	// When the width is unknown (a pipe, a file), the layout is the full one; and where the
	// full table fits, a terminal gets it too.
	var got, want bytes.Buffer
	Render(&got, Options{Format: FormatTable}, suite)
	WriteSuite(&want, FormatTable, suite)
	if got.String() != want.String() {
		t.Errorf("width 0: not the full layout")
	}
	got.Reset()
	want.Reset()
	Render(&got, Options{Format: FormatTable, Width: 200}, passRun())
	WriteRun(&want, FormatTable, passRun())
	if got.String() != want.String() {
		t.Errorf("width 200: not the full layout:\n%s", got.String())
	}
}

// renderAt renders v's table form at width and returns it without colour.
func renderAt(t *testing.T, v any, width int, color bool) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, Options{Format: FormatTable, Width: width, Color: color}, v); err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(green, "", red, "", yellow, "", reset, "").Replace(buf.String())
}

// checkFits checks that no line of out is width columns or wider, and that every word of
// every row name of suite is printed whole in out's row column.
func checkFits(t *testing.T, out string, width int, suite results.Suite) {
	t.Helper()
	rowCells := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n >= width {
			t.Errorf("width %d: line of %d columns: %q", width, n, line)
		}
		if cs := strings.Split(line, "|"); len(cs) > 2 {
			for _, w := range strings.Fields(cs[1]) {
				rowCells[w] = true
			}
		}
	}
	for _, run := range suite.Experiments {
		for _, r := range run.Rows {
			for _, w := range strings.Fields(r.Name) {
				if !rowCells[w] {
					t.Errorf("width %d: %s: the word %q of row %q is not whole in the row column", width, run.Experiment, w, r.Name)
				}
			}
		}
	}
}

// referenceSuite reads the committed reference run: every experiment, five repeats.
func referenceSuite(t *testing.T) results.Suite {
	t.Helper()
	f, err := os.Open("../results/reference/run.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	suite, err := results.Read(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return suite
}

// TestReferenceFits renders the reference run (every experiment, five repeats) at the
// widths of common terminals: no line is wider than the terminal, no row name is split
// inside a word, and the documented and server columns stay where they fit.
func TestReferenceFits(t *testing.T) {
	suite := referenceSuite(t)
	for _, width := range []int{80, 100, 120, 160, 200} {
		out := renderAt(t, suite, width, true)
		checkFits(t, out, width, suite)
		// Every table starts on a line of its own: a heading, then the top border.
		for _, run := range suite.Experiments {
			if !strings.Contains(out, "\n"+heading(run)+"\n+-") && !strings.HasPrefix(out, heading(run)+"\n+-") {
				t.Errorf("width %d: %s's heading is not a line of its own above its table", width, run.Experiment)
			}
		}
		a := out[:strings.Index(out, "\n\n")]
		for _, col := range []string{"| documented", "| server"} {
			if has := strings.Contains(a, col); has != (width >= 100) {
				t.Errorf("width %d: exp-a has column %q: %v", width, col, has)
			}
		}
	}
}

func TestDefaultsCompactFits(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, Options{Format: FormatTable, Width: 80}, testDefaults()); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if n := utf8.RuneCountInString(line); n >= 80 {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	for _, c := range testDefaults() {
		if !strings.Contains(buf.String(), c.Client) {
			t.Errorf("client %q missing", c.Client)
		}
	}
}

func TestWrapText(t *testing.T) {
	tests := []struct {
		s     string
		width int
		want  []string
	}{
		{"short", 10, []string{"short"}},
		{"one two three", 7, []string{"one two", "three"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"a verylongword", 5, []string{"a", "veryl", "ongwo", "rd"}},
		{"retryOnConnectionFailure(false)", 26, []string{"retryOnConnectionFailure(", "false)"}},
		{"read-timeout", 8, []string{"read-", "timeout"}},
	}
	for _, tt := range tests {
		if got := wrapText(tt.s, tt.width, ""); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("wrapText(%q, %d): got %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}
