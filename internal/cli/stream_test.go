package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/results"
)

// waiting is a fake that finishes only once stdout holds another experiment's table (or
// after a bound): it stands for the experiment still running while the first is printed.
type waiting struct {
	fake
	stdout *syncBuffer
	after  string // the title line it waits for
	saw    bool   // whether it did, before it finished
}

func (w *waiting) Run(ctx context.Context, opt experiments.Options) (results.Run, error) {
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end) && !w.saw; time.Sleep(10 * time.Millisecond) {
		w.saw = strings.Contains(w.stdout.String(), w.after)
	}
	return w.fake.Run(ctx, opt)
}

// TestAllStreams: labrun all prints each experiment's table as it finishes, piped too (the
// first before the last ends), and the recap after them in the list's order; JSON stays one
// document, printed at the end. The last experiment waits for the first's table, whether the
// machine lets them run side by side or not.
func TestAllStreams(t *testing.T) {
	var stdout, stderr syncBuffer
	slow := &waiting{fake: fake{name: "exp-w", calls: 1}, stdout: &stdout, after: "exp-x · a fake"}
	exps := []experiments.Experiment{&fake{name: "exp-x", calls: 1}, slow}
	code := runContext(t.Context(), []string{"labrun", "all", "--quiet"}, &stdout, &stderr, terminals{}, exps)
	out := stdout.String()
	if code != exitPass || !slow.saw {
		t.Fatalf("exit %d; exp-w saw exp-x's table before it ended: %v\n%s%s", code, slow.saw, out, stderr.String())
	}
	x, w := strings.Index(out, "exp-x · a fake"), strings.Index(out, "exp-w · a fake")
	if x < 0 || w < x {
		t.Errorf("want exp-x's table first (it finished first), then exp-w's:\n%s", out)
	}
	recap := out[w:]
	if rx, rw := strings.Index(recap, "  exp-x "), strings.Index(recap, "  exp-w "); rx < 0 || rw < rx {
		t.Errorf("want the recap after the tables, in the list's order:\n%s", recap)
	}

	stdout, stderr = syncBuffer{}, syncBuffer{}
	slow = &waiting{fake: fake{name: "exp-w", calls: 1}, stdout: &stdout, after: `"exp-x"`}
	exps = []experiments.Experiment{&fake{name: "exp-x", calls: 1}, slow}
	code = runContext(t.Context(), []string{"labrun", "all", "--quiet", "--format", "json"}, &stdout, &stderr, terminals{}, exps)
	var suite results.Suite
	if err := json.Unmarshal([]byte(stdout.String()), &suite); code != exitPass || err != nil || slow.saw {
		t.Errorf("--format json: exit %d, %v, printed before the end: %v; want one document at the end", code, err, slow.saw)
	}
	if len(suite.Experiments) != 2 || suite.Experiments[0].Experiment != "exp-x" {
		t.Errorf("--format json: got %d runs, want exp-x then exp-w", len(suite.Experiments))
	}
}
