package report

import (
	"bytes"
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
	for _, width := range []int{80, 100, 119} {
		for _, color := range []bool{false, true} {
			var buf bytes.Buffer
			if err := Render(&buf, Options{Format: FormatTable, Width: width, Color: color}, suite); err != nil {
				t.Fatal(err)
			}
			plain := strings.NewReplacer(green, "", red, "", yellow, "", reset, "").Replace(buf.String())
			for _, line := range strings.Split(plain, "\n") {
				if n := utf8.RuneCountInString(line); n >= width {
					t.Errorf("width %d: line of %d columns: %q", width, n, line)
				}
			}
			for _, want := range []string{"row", "expected", "measured", "outcome", "verdict", "FAIL [", "off by +250.0 ms", "skip [", "pass ["} {
				if !strings.Contains(plain, want) {
					t.Errorf("width %d: output lacks %q:\n%s", width, want, plain)
				}
			}
		}
	}
	// At FullWidth and beyond, and when the width is unknown, the layout is the full one.
	for _, width := range []int{0, FullWidth, 200} {
		var got, want bytes.Buffer
		Render(&got, Options{Format: FormatTable, Width: width}, suite)
		WriteSuite(&want, FormatTable, suite)
		if got.String() != want.String() {
			t.Errorf("width %d: not the full layout", width)
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
	}
	for _, tt := range tests {
		if got := wrapText(tt.s, tt.width, ""); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("wrapText(%q, %d): got %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}
