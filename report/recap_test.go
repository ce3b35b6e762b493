package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/labrun/labrun/results"
)

// TestRecapListsEveryMiss: the recap before a suite's summary has one line per experiment
// and every failed or inconclusive row with its experiment and reason, at every width; no
// line is as wide as the terminal.
func TestRecapListsEveryMiss(t *testing.T) {
	s := suite()
	for _, width := range []int{0, 80, 120, 160, 200} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, Options{Format: FormatTable, Width: width}, s); err != nil {
				t.Fatal(err)
			}
			text := buf.String()
			at := strings.LastIndex(text, "\nrecap: ")
			if at < 0 {
				t.Fatalf("no recap:\n%s", text)
			}
			recap := text[at:]
			if width > 0 {
				for _, line := range strings.Split(recap, "\n") {
					if textLen(line) >= width {
						t.Errorf("a line of %d columns at %d: %q", textLen(line), width, line)
					}
				}
			}
			flat := strings.Join(strings.Fields(recap), " ")
			for _, want := range []string{
				"exp-a 3 rows 4.0 s PASS",
				"exp-b 6 rows, 5 failed — FAIL",
				"exp-l 2 rows, 1 inconclusive 12.3 s INCONCLUSIVE",
				"exp-b · no measurement · FAIL: no measured time",
				"exp-l · late under load · inconclusive: off by +130.0 ms",
				"the machine kept labrun waiting up to 61 ms meanwhile",
			} {
				if !strings.Contains(flat, want) {
					t.Errorf("recap lacks %q:\n%s", want, recap)
				}
			}
			if strings.Contains(flat, "exp-a · ") || strings.Contains(flat, "· in time ·") {
				t.Errorf("the recap lists a row that passed:\n%s", recap)
			}
			if !strings.HasSuffix(strings.Join(strings.Fields(text), " "), "(the machine's noise explains their misses: "+Retry+")") {
				t.Errorf("the summary is not the last line:\n%s", text)
			}
		})
	}
}

// TestRecapOfOneRun: a repeated run printed on its own ends with a recap; a single run does
// not (its table is the recap), nor does a suite's run inside it.
func TestRecapOfOneRun(t *testing.T) {
	tests := []struct {
		name string
		run  results.Run
		want bool
	}{
		{"repeated", repeatRun(), true},
		{"single", failRun(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range []Format{FormatTable, FormatMarkdown} {
				var buf bytes.Buffer
				if err := WriteRun(&buf, f, tt.run); err != nil {
					t.Fatal(err)
				}
				if got := strings.Contains(buf.String(), "recap"); got != tt.want {
					t.Errorf("%s: recap %v, want %v:\n%s", f, got, tt.want, buf.String())
				}
			}
		})
	}
}

// TestRecapAllPass: a suite that passed says so in its recap and lists no rows; runs that do
// not say how long they took (read back from an older labrun) get no time column.
func TestRecapAllPass(t *testing.T) {
	var buf bytes.Buffer
	writeRecapTable(&buf, []results.Run{passRun(), smallRun()}, look{})
	want := "recap: 2 experiments, 4 rows, none failed\n  exp-a  3 rows  PASS\n  exp-c  1 row   PASS\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
