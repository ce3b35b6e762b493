package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments"
)

// TestPredictFitsTerminal: predict's bars, notes, legend and reasoning fit terminals of
// several widths; the bars keep their 60 cells where they fit.
func TestPredictFitsTerminal(t *testing.T) {
	args := []string{"predict", "--defaults", "go", "--read-timeout", "1s", "--bytes", "10", "--every", "400ms", "--retries", "2", "--explain"}
	for _, cols := range []int{60, 80, 120, 200} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			lines := screenLines(t, cols, experiments.All(), args...)
			checkScreen(t, cols, lines)
			text := strings.Join(lines, "\n")
			for _, want := range []string{"legend: l lease  c connect", "reasoning:", "total "} {
				if !strings.Contains(text, want) {
					t.Errorf("no %q at %d columns:\n%s", want, cols, text)
				}
			}
			bar := ""
			for _, l := range lines {
				if i := strings.Index(l, "|"); i >= 0 && strings.HasSuffix(l, "|") {
					bar = l[i:]
				}
			}
			if cols >= 120 && len(bar) != 62 {
				t.Errorf("at %d columns the bar is %d cells, want 60: %q", cols, len(bar)-2, bar)
			}
			if bar == "" {
				t.Errorf("no bar at %d columns:\n%s", cols, text)
			}
		})
	}
}
