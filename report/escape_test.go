package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/labrun/labrun/results"
)

// hostileRun is a saved run whose texts carry terminal escapes, NUL, a bidirectional
// override and HTML, as a crafted run.json may.
func hostileRun() results.Run {
	run := passRun()
	run.Experiment = "exp-\x1b[2J"
	run.Title = "title \x07<b>bold</b>"
	run.Rows[0].Name = "name \x1b]0;owned\x07 <img src=x onerror=alert(1)> \x00 \u202eevil"
	run.Rows[0].Server = "server \x1b[31mred &lt;"
	run.Rows[1].Documented = "doc \x9b2J"
	run.Config = append(run.Config, results.Param{Name: "x\x1b", Value: "\x1b[1m"})
	run.Meta = &results.Meta{Labrun: "v1\x1b[0m<i>", ToleranceMs: 100}
	return run
}

func TestHostileTexts(t *testing.T) {
	suite := results.NewSuite([]results.Run{hostileRun()})
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		for _, width := range []int{0, 100} {
			for _, v := range []any{hostileRun(), suite} {
				var buf bytes.Buffer
				if err := Render(&buf, Options{Format: f, Width: width}, v); err != nil {
					t.Fatal(err)
				}
				got := buf.String()
				for _, bad := range []string{"\x1b", "\x00", "\x07", "\x9b", "\u202e"} {
					if strings.Contains(got, bad) {
						t.Errorf("%s, width %d, %T: the output holds %q:\n%s", f, width, v, bad, got)
					}
				}
				if !strings.Contains(got, `\x1b`) || !strings.Contains(got, `\u202e`) {
					t.Errorf("%s, width %d, %T: the escapes are not shown:\n%s", f, width, v, got)
				}
				if f == FormatMarkdown {
					for _, bad := range []string{"<img", "<b>", "<i>"} {
						if strings.Contains(got, bad) {
							t.Errorf("markdown, %T: the output holds %q:\n%s", v, bad, got)
						}
					}
					if !strings.Contains(got, "&lt;img") || !strings.Contains(got, "&amp;lt;") {
						t.Errorf("markdown, %T: the HTML is not escaped:\n%s", v, got)
					}
				}
			}
		}
	}
}

// TestHostileTextsCSV: the CSV of a run whose texts hold control characters escapes them as
// the other formats do.
func TestHostileTextsCSV(t *testing.T) {
	run := hostileRun()
	run.Rows[0].Skipped = "the command says it cannot do this: \x1b[2J\x07bell\r\nnext"
	var buf bytes.Buffer
	if err := Render(&buf, Options{Format: FormatCSV}, run); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, bad := range []string{"\x1b", "\x00", "\x07", "\x9b", "\u202e", "\r"} {
		if strings.Contains(got, bad) {
			t.Errorf("the CSV holds %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, `\x1b[2J\abell\r\nnext`) {
		t.Errorf("the skip reason's escapes are not shown:\n%s", got)
	}
	if lines := strings.Count(got, "\n"); lines != 1+len(run.Rows) {
		t.Errorf("%d lines, want a header and %d rows:\n%s", lines, len(run.Rows), got)
	}
}

func TestTermSafe(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain · ±—", "plain · ±—"},
		{"a\x1b[31mb", `a\x1b[31mb`},
		{"nul\x00", `nul\x00`},
		{"c1 \u009b", `c1 \u009b`},
		{"bidi \u202e", `bidi \u202e`},
	}
	for _, tt := range tests {
		if got := termSafe(tt.in); got != tt.want {
			t.Errorf("termSafe(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestNoPoolCounts: a row whose client had no pool to use says "no connection" for 0 new
// connections, in every text format; another row keeps "pooled conn".
func TestNoPoolCounts(t *testing.T) {
	zero := 0
	run := passRun()
	run.Rows = run.Rows[:2]
	for i := range run.Rows {
		run.Rows[i].ServerExecutions, run.Rows[i].ExpectedExecutions = &zero, &zero
		run.Rows[i].NewConnections, run.Rows[i].ExpectedNewConnections = &zero, &zero
	}
	run.Rows[0].NoPool = true
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		for _, width := range []int{0, 200} {
			var buf bytes.Buffer
			if err := Render(&buf, Options{Format: f, Width: width}, run); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			if n := strings.Count(got, "no connection"); n != 2 {
				t.Errorf("%s, width %d: %d \"no connection\", want 2 (expected and measured of the first row):\n%s", f, width, n, got)
			}
			if n := strings.Count(got, "pooled conn"); n != 2 {
				t.Errorf("%s, width %d: %d \"pooled conn\", want 2 (the second row's):\n%s", f, width, n, got)
			}
		}
	}
}
