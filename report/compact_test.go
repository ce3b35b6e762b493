package report

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
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
			for _, want := range []string{"row", "expected", "measured", "outcome", "verdict", "FAIL [", "off by +250.0 ms", "skipped [", "pass ["} {
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
	// The terminal's sets the heading in the top rule.
	head, rule, _ := strings.Cut(want.String(), "\n")
	rule, rest, _ := strings.Cut(rule, "\n")
	if top := titled(rule, head); got.String() != top+"\n"+rest {
		t.Errorf("width 200: not the full layout with its heading in the top rule:\n%s", got.String())
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
// inside a word, every table starts on a line of its own, its heading set in its top rule.
func TestReferenceFits(t *testing.T) {
	suite := referenceSuite(t)
	for _, width := range []int{80, 100, 120, 160, 200} {
		out := renderAt(t, suite, width, true)
		checkFits(t, out, width, suite)
		for _, run := range suite.Experiments {
			top := "+- " + heading(run) + " -"
			if !strings.Contains(out, "\n"+top) && !strings.HasPrefix(out, top) {
				t.Errorf("width %d: %s's heading is not in its table's top rule", width, run.Experiment)
			}
		}
	}
}

// TestTitledRule: a heading goes in the top rule when it leaves a dash on either side, else
// above the table.
func TestTitledRule(t *testing.T) {
	rule := "+" + strings.Repeat("-", 20) + "+"
	if got, want := titled(rule, "exp-a · short"), "+- exp-a · short ----+"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := titled(rule, "exp-a · a heading too long"); got != "" {
		t.Errorf("a heading longer than the rule: got %q, want none", got)
	}
	run := passRun()
	run.Title = strings.Repeat("a long title ", 8)
	out := renderAt(t, run, 80, false)
	if first, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(first, "exp-") || !strings.Contains(out, "\n+--") {
		t.Errorf("a heading wider than the table: not a line of its own above it:\n%s", out)
	}
}

// TestNeverTallerWhenWider renders each experiment of the reference run at widths from 80 to
// 200 columns: its height never grows with the width, no cell but a row name takes more
// than two lines (at 120 columns and more, where the plainest layout has room), and every
// column left out is named under the table.
func TestNeverTallerWhenWider(t *testing.T) {
	suite := referenceSuite(t)
	for _, run := range suite.Experiments {
		prev, prevWidth := -1, 0
		for width := 80; width <= 200; width += 20 {
			out := renderAt(t, run, width, false)
			height := strings.Count(out, "\n")
			if prev >= 0 && height > prev {
				t.Errorf("%s: %d lines at %d columns, %d at %d", run.Experiment, height, width, prev, prevWidth)
			}
			prev, prevWidth = height, width
			spec := specFor(run)
			verdicts := shortVerdicts(run, verdicterFor(run))
			ls := layouts(spec, run.Rows)
			f, l := choose(spec, ls, run.Rows, verdicts, width)
			if width >= 120 && f.tooTall() {
				t.Errorf("%s at %d columns: a cell takes more than two lines", run.Experiment, width)
			}
			header := out[:strings.Index(out, "\n+-")+200]
			for i, c := range spec.cols {
				if l[i] == colHidden && ls[0][i] != colHidden && strings.Contains(out, "\n+-") && !strings.Contains(out, "| "+c.name+" ") {
					if !strings.Contains(out, hiddenLead) || !strings.Contains(out[strings.Index(out, hiddenLead):], c.name) {
						t.Errorf("%s at %d columns: %s hidden without a note:\n%s", run.Experiment, width, c.name, header)
					}
				}
			}
		}
	}
}

// TestLayoutsGiveWay: the layouts of a table go from every column to the plainest in the
// spec's order; a column that is all dashes is never drawn, and a column that is the only
// value of a row stays.
func TestLayoutsGiveWay(t *testing.T) {
	rows := []results.Row{
		{Name: "timed", ExpectedMs: msPtr(100), MeasuredMs: msPtr(101), Server: "note", Pass: true},
		{Name: "counted", Calls: 9, Pass: true}, // its only value is its calls
	}
	ls := layouts(experimentTable, rows)
	last := ls[len(ls)-1]
	if last[1] == colHidden {
		t.Errorf("calls hidden, though it is the only value of a row: %v", ls)
	}
	if ls[0][2] != colHidden {
		t.Errorf("documented, all dashes, is drawn: %v", ls[0])
	}
	if last[6] != colHidden {
		t.Errorf("server never gives way: %v", ls)
	}
	for i, c := range experimentTable.cols {
		if c.keep && last[i] == colHidden {
			t.Errorf("%s, kept, is hidden", c.name)
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

// TestProbeAnalogy: a probe run without --expect reads as an analogy at every width and in
// every text form: rows agree or differ, no FAIL, no colour; with --expect, verdicts as a
// test's.
func TestProbeAnalogy(t *testing.T) {
	run := results.Run{Experiment: ProbeExperiment, Title: "curl {url}: no timeout up to the cap",
		Config: []results.Param{{Name: "closest", Value: "go"}},
		Rows: []results.Row{
			{Name: "silent: a server that never answers", ExpectedMs: msPtr(1000), MeasuredMs: msPtr(1500), Server: "left at 1500 ms"},
			{Name: "instant: an answer at once", Server: "answered", Pass: true},
		}}
	run.Finish(100 * time.Millisecond)
	for _, width := range []int{0, 80, 120, 200} {
		var buf bytes.Buffer
		if err := Render(&buf, Options{Format: FormatTable, Width: width, Color: true}, run); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Contains(out, "FAIL") || strings.Contains(out, "\033[") || !strings.Contains(out, "differs") || !strings.Contains(out, "agrees") {
			t.Errorf("width %d: not an analogy:\n%s", width, out)
		}
	}
	run.Config = append(run.Config, results.Param{Name: "expect", Value: "go"})
	if out := renderAt(t, run, 120, false); !strings.Contains(out, "FAIL") {
		t.Errorf("with --expect: no FAIL:\n%s", out)
	}
}

// TestNarrowReference renders the reference run at 80 columns and wider: no cell and no name
// above its cells takes more than two lines, no word is cut (every column is at least its
// longest word), and exp-m takes at most 70 lines, not counting the notes of warnings only
// repeated runs have.
func TestNarrowReference(t *testing.T) {
	suite := referenceSuite(t)
	for _, run := range suite.Experiments {
		for width := 80; width <= 200; width += 20 {
			spec := specFor(run)
			f, _ := choose(spec, layouts(spec, run.Rows), run.Rows, shortVerdicts(run, verdicterFor(run)), width)
			if f.tooTall() {
				t.Errorf("%s at %d columns: a cell takes more than two lines", run.Experiment, width)
			}
			for j := range f.rows {
				for i, c := range f.cellsOf(j, f.widths) {
					k := i
					if f.widths[0] == 0 {
						k++
					}
					for _, word := range strings.Fields(c) {
						if textLen(word) > f.widths[k] {
							t.Errorf("%s at %d columns: %q cut to %d columns", run.Experiment, width, word, f.widths[k])
						}
					}
				}
			}
		}
		if run.Experiment != "exp-m" {
			continue
		}
		out := renderAt(t, run, 80, false)
		lines := 0
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if !strings.Contains(l, "] warning: ") {
				lines++
			}
		}
		if lines > 70 {
			t.Errorf("exp-m at 80 columns: %d lines, want at most 70:\n%s", lines, out)
		}
	}
}

// TestReferenceGroups: rows that share a prefix print it once, as a group's line, in the table
// at every width and in Markdown; the reference run at 80 columns stays under 1,200 lines (1,779
// before groups and names above their cells); JSON and CSV keep the full names.
func TestReferenceGroups(t *testing.T) {
	suite := referenceSuite(t)
	prefixes := map[string]string{"exp-b": "hc4 defaults, 2 per route:", "exp-l": "incident: pool 5, lease timeout at the default:"}
	for _, run := range suite.Experiments {
		p, ok := prefixes[run.Experiment]
		if !ok {
			continue
		}
		for _, width := range []int{0, 80, 120, 200} {
			if out := renderAt(t, run, width, false); strings.Count(out, p) != 1 {
				t.Errorf("%s at %d columns: %q printed %d times, want once:\n%s", run.Experiment, width, p, strings.Count(out, p), out)
			}
		}
		for _, f := range []Format{FormatMarkdown, FormatJSON, FormatCSV} {
			var buf bytes.Buffer
			if err := Render(&buf, Options{Format: f}, run); err != nil {
				t.Fatal(err)
			}
			want := 1
			if f != FormatMarkdown {
				want = strings.Count(buf.String(), p+" ")
				if want < 2 {
					t.Errorf("%s in %s: the full names are gone", run.Experiment, f)
				}
			}
			if got := strings.Count(buf.String(), p); got != want {
				t.Errorf("%s in %s: %q printed %d times, want %d", run.Experiment, f, p, got, want)
			}
		}
	}
}

// allLinesAt80 bounds the reference run's height at 80 columns, not counting the warnings'
// notes, which come and go with the noise of the run that made it: 878 lines, with room for
// config lines and cells that wrap once more in another run.
const allLinesAt80 = 900

// TestReferenceAt80: labrun all's table of the reference run at 80 columns, as it is printed
// run by run, takes at most allLinesAt80 lines but for the warnings' notes.
func TestReferenceAt80(t *testing.T) {
	suite := referenceSuite(t)
	o := Options{Format: FormatTable, Width: 80}
	var streamed bytes.Buffer
	for _, run := range suite.Experiments {
		if err := WriteSuiteRun(&streamed, o, run); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteSuiteEnd(&streamed, o, suite); err != nil {
		t.Fatal(err)
	}
	if whole := renderAt(t, suite, 80, false); streamed.String() != whole {
		t.Errorf("printed run by run, the suite differs from its whole table:\n%s", lineDiff(whole, streamed.String()))
	}
	n := strings.Count(streamed.String(), "\n") - strings.Count(streamed.String(), "] warning: ")
	if n > allLinesAt80 {
		t.Errorf("the reference run at 80 columns: %d lines but for the warnings' notes, want at most %d", n, allLinesAt80)
	}
}

// TestClosingLinesAt80: under each fitted table of the reference run at 80 columns, a note is
// said once for all the rows it is of and a warning's on one line, what was hidden takes one
// line, and the footer one (two with skipped or inconclusive rows); the recap takes a line
// per two experiments. Each holds on its own, so that a part that grows fails even when
// another shrinks.
func TestClosingLinesAt80(t *testing.T) {
	suite := referenceSuite(t)
	for _, run := range suite.Experiments {
		out := renderAt(t, run, 80, false)
		end := strings.LastIndex(out, "+\n")
		if end < 0 {
			t.Fatalf("%s: no table:\n%s", run.Experiment, out)
		}
		closing := strings.Split(strings.TrimSuffix(out[end+2:], "\n"), "\n")
		seen := map[string]bool{}
		var footer, hiddenLines int
		for i, l := range closing {
			cont := i+1 < len(closing) && strings.HasPrefix(closing[i+1], "  ")
			switch {
			case strings.HasPrefix(l, "["):
				_, note, _ := strings.Cut(l, "] ")
				if seen[note] {
					t.Errorf("%s: the note %q said twice", run.Experiment, note)
				}
				seen[note] = true
				if strings.HasPrefix(note, "warning: ") && i+1 < len(closing) && strings.HasPrefix(closing[i+1], " ") {
					t.Errorf("%s: a warning's note takes more than a line: %q", run.Experiment, l)
				}
			case strings.HasPrefix(l, hiddenLead):
				hiddenLines++
				if cont {
					hiddenLines++
				}
			case strings.Contains(l, "rows pass") || strings.Contains(l, "noise ") || strings.HasPrefix(l, "tolerance "):
				footer++
			}
		}
		want := 1
		if t := run.Tally(); t.Skipped > 0 || t.Inconclusive > 0 {
			want = 2
		}
		if hiddenLines > 1 || footer > want {
			t.Errorf("%s at 80 columns: hidden in %d lines, footer in %d, want 1 and at most %d:\n%s", run.Experiment, hiddenLines, footer, want, strings.Join(closing, "\n"))
		}
	}
	out := renderAt(t, suite, 80, false)
	recap := out[strings.Index(out, "\nrecap: ")+1:]
	recap = recap[:strings.Index(recap, "\n\n")]
	if n, want := strings.Count(recap, "\n")+1, 1+(len(suite.Experiments)+1)/2; n > want {
		t.Errorf("the recap at 80 columns: %d lines, want at most %d:\n%s", n, want, recap)
	}
}

// TestExpAOneScreen: exp-a alone, as labrun exp-a prints it at 80 columns, fits a screen of 24
// lines.
func TestExpAOneScreen(t *testing.T) {
	suite := referenceSuite(t)
	run := suite.Experiments[0]
	run.Meta = suite.Meta
	if out := renderAt(t, run, 80, false); strings.Count(out, "\n") > 24 {
		t.Errorf("exp-a at 80 columns: %d lines, want at most 24:\n%s", strings.Count(out, "\n"), out)
	}
}

func TestGroupRows(t *testing.T) {
	rows := [][]string{
		{"a, b: one: x"}, {"a, b: one: y"}, {"a, b: two"}, // share "a, b: one" only in part
		{"c: x"}, {"d: x"}, {"d: y"}, {"d: "}, {"plain"},
	}
	g := groupRows(rows)
	var got []string
	for j, r := range g.rows {
		if g.groups[j] != "" {
			got = append(got, "["+g.groups[j]+"]")
		}
		got = append(got, r[0])
	}
	want := []string{"[a, b:]", "  one: x", "  one: y", "  two", "c: x", "[d:]", "  x", "  y", "d: ", "plain"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	g = groupRows([][]string{{"p: q: 1"}, {"p: q: 2"}})
	if g.groups[0] != "p: q:" || g.rows[1][0] != "  2" {
		t.Errorf("the longest shared prefix: got %q %q", g.groups, g.rows)
	}
}

// TestLineCount: lineCount agrees with wrapText on every cell of the reference run.
func TestLineCount(t *testing.T) {
	for _, run := range referenceSuite(t).Experiments {
		for _, r := range run.Rows {
			for _, c := range (verdicter{}).cells(r) {
				for _, width := range []int{1, 5, 9, 16, 30, 75} {
					if got, want := lineCount(c, width, "  "), len(wrapText(c, width, "  ")); got != want {
						t.Errorf("lineCount(%q, %d): got %d, want %d", c, width, got, want)
					}
				}
			}
		}
	}
}
