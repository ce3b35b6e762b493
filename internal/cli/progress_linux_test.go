package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
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
// "labrun: interrupted", which then starts a line of its own, and stdout has no recap (only
// the tables of experiments that ended before). The run is interrupted once the status line is
// on the screen.
func TestInterruptClearsStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOnWrite{cancel: cancel, when: "labrun: experiment 1/2"}
	var stdout strings.Builder
	code := runContext(ctx, []string{"labrun", "all", "--serial"}, &stdout, stderr, terminals{stdout: true, stderr: true}, fakes())
	got := stderr.String()
	if code != exitInterrupted || strings.Contains(stdout.String(), "recap") {
		t.Fatalf("got exit %d, stdout %q; want 130 and no recap", code, stdout.String())
	}
	if !strings.HasSuffix(got, "\r\033[Klabrun: interrupted\n") {
		t.Errorf("the status line is not cleared before interrupted: %q", got[max(0, len(got)-120):])
	}
}

// cancelOnWrite is a stderr that calls cancel once what was written holds when.
type cancelOnWrite struct {
	mu     sync.Mutex // guards b
	b      strings.Builder
	cancel context.CancelFunc
	when   string
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.when) {
		w.cancel()
	}
	return len(p), nil
}

func (w *cancelOnWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
