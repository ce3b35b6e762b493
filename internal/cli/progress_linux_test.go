package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestProgressOnTerminal: on terminals of several widths, serial labrun all counts the
// experiments and, once one has finished, says the time left; a repeated run names the run.
// No status line is as wide as the terminal.
func TestProgressOnTerminal(t *testing.T) {
	for _, cols := range []int{80, 120, 200} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			lines := screenLines(t, cols, fakes(), "all", "--serial")
			checkScreen(t, cols, lines)
			text := strings.Join(lines, "\n")
			for _, want := range []string{"labrun: experiment 1/2 · exp-x", "labrun: experiment 2/2 · "} {
				if !strings.Contains(text, want) {
					t.Errorf("no %q on the screen:\n%s", want, text)
				}
			}
			if !strings.Contains(text, "recap: 2 experiments") {
				t.Errorf("no recap:\n%s", text)
			}
			lines = screenLines(t, cols, fakes(), "exp-x", "--repeat", "2")
			checkScreen(t, cols, lines)
			if text := strings.Join(lines, "\n"); !strings.Contains(text, "(run 2/2)") {
				t.Errorf("a repeated run does not name its run:\n%s", text)
			}
		})
	}
}

// TestInterruptClearsStatus: when a run is interrupted, the status line is cleared before
// "labrun: interrupted", which then starts a line of its own.
func TestInterruptClearsStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	got := runArgs(t, ctx, fakes(), true, "all", "--serial")
	if got.code != exitInterrupted || got.stdout != "" {
		t.Fatalf("got exit %d, stdout %q; want 130 and nothing", got.code, got.stdout)
	}
	if !strings.Contains(got.stderr, "labrun: experiment 1/2") {
		t.Errorf("no status line was drawn: %q", got.stderr)
	}
	if !strings.HasSuffix(got.stderr, "\r\033[Klabrun: interrupted\n") {
		t.Errorf("the status line is not cleared before interrupted: %q", got.stderr[max(0, len(got.stderr)-120):])
	}
}
