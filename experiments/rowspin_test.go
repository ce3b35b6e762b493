package experiments

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/results"
)

// TestRowsPinned runs every experiment with its documented parameters and renders, row by row,
// what the model and the case tables decide: the row's id and name, the documented figure, the
// expected time, outcome, calls, server executions, status and new connections, and whether
// the row is skipped by design. The rendering must equal that of the committed reference run
// (results/reference/run.json): it holds the experiments' behaviour still while their code
// moves between files and packages. A difference is a change of behaviour, to be named in a
// commit or undone; a regenerated reference run moves it on purpose.
//
// The measured values themselves (times, measured outcomes and counts) are noise's and are
// not pinned; neither are the few expectations the model takes from a constant the run
// measures (pinMeasured).
func TestRowsPinned(t *testing.T) {
	testenv.Slow(t, "every experiment end to end")
	f, err := os.Open("../results/reference/run.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref, err := results.Read(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]results.Run{}
	for _, run := range ref.Experiments {
		want[run.Experiment] = run
	}
	// The experiments run side by side, the longest first, as labrun all runs them: what is
	// pinned is what no load moves (pinMeasured leaves out the rest).
	exps := slices.SortedStableFunc(slices.Values(All()), func(a, b Experiment) int {
		return cmp.Compare(Takes(b.Info().Name), Takes(a.Info().Name))
	})
	got := make([]results.Run, len(exps))
	var g errgroup.Group
	g.SetLimit(3 * runtime.NumCPU())
	for i, e := range exps {
		g.Go(func() error {
			run, err := e.Run(context.Background(), Options{Tolerance: DefaultTolerance})
			if err != nil {
				return fmt.Errorf("%s: %w", e.Info().Name, err)
			}
			got[i] = run
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, e := range exps {
		name := e.Info().Name
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: not in the reference run", name)
			continue
		}
		diffPinned(t, name, pinRows(got[i]), pinRows(w))
	}
}

// diffPinned reports the lines of got that differ from want, at most 20.
func diffPinned(t *testing.T, name string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", name, len(got), len(want))
	}
	shown := 0
	for i := 0; i < max(len(got), len(want)) && shown < 20; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("%s row %d:\ngot  %s\nwant %s", name, i+1, g, w)
			shown++
		}
	}
}

// pinMeasured are the rows whose expectation the model computes from what the run measured,
// by experiment, and the fields of theirs that are therefore not pinned ("row": whether the
// row is there at all).
var pinMeasured = []struct {
	experiment string
	id         *regexp.Regexp
	fields     []string
	why        string
}{
	{"exp-h", regexp.MustCompile(`-p(50|99)$`), []string{"expected"},
		"a burst's set-up and cost per stream are calibrated on the machine before the rows"},
	{"exp-h", regexp.MustCompile(`apns-ejection`), []string{"outcome", "calls", "connections"},
		"the round in which the slow node is ejected is the jitter's (the row states the range)"},
	{"exp-h", regexp.MustCompile(`apns-ejection.*after-it`), []string{"row"},
		"when the slow node streams until the last round, no push comes after it"},
	{"exp-i", regexp.MustCompile(`^7-go-http-2`), []string{"expected"},
		"the kernel's retransmission timeouts start from the round trip the run measures"},
	{"exp-l", regexp.MustCompile(`answered-median-end|health-check-at|recovered`), []string{"expected"},
		"the pool's hand-off is measured right before and after the rows"},
	{"exp-l", regexp.MustCompile(`workers-busy|waiting-at-the-pool|requests-on-inventory-at-once`), []string{"calls"},
		"counted at the requests' measured starts"},
	{"exp-l", regexp.MustCompile(`requests-the-downstream`), []string{"executions"},
		"a hedge for every call answered after the delay, at the calls' measured times"},
	{"exp-l", regexp.MustCompile(`^storm`), []string{"calls", "connections", "skipped"},
		"the storm's counts follow the model at the calls' measured times"},
	{"exp-m", regexp.MustCompile(`^retry-policy|^the-same-ok-on-the-second|^maxattempts-10|maxconcurrentstreams-10-wave-`), []string{"expected"},
		"a call's and a pause's cost, and a wave's, are calibrated on the machine before the rows (grpccal.go)"},
	{"exp-n", regexp.MustCompile(`requests-received|answered-in-time|work-done|recovered|the-last-calls|queue-gone`), []string{"expected", "outcome", "executions"},
		"the storm's model runs at the service time the machine gave (experiments/storm)"},
}

// pinRows renders run's rows, one line each.
func pinRows(run results.Run) []string {
	var out []string
	for _, r := range run.Rows {
		masked := map[string]bool{}
		for _, m := range pinMeasured {
			if m.experiment == run.Experiment && m.id.MatchString(r.ID) {
				for _, f := range m.fields {
					masked[f] = true
				}
			}
		}
		if masked["row"] {
			continue
		}
		field := func(name, v string) string {
			if masked[name] {
				return name + "=(measured)"
			}
			return name + "=" + v
		}
		out = append(out, strings.Join([]string{
			r.ID, r.Name,
			"documented=" + r.Documented + " " + pinMs(r.DocumentedMs) + " " + pinInt(r.DocumentedExecutions),
			field("expected", pinMs(r.ExpectedMs)),
			field("outcome", string(r.ExpectedOutcome)),
			field("calls", strconv.Itoa(r.ExpectedCalls)),
			field("executions", pinInt(r.ExpectedExecutions)+".."+pinInt(r.ExpectedExecutionsMax)),
			"status=" + pinInt(r.ExpectedStatus),
			field("connections", pinInt(r.ExpectedNewConnections)+".."+pinInt(r.ExpectedNewConnectionsMax)),
			field("skipped", strconv.FormatBool(r.Skipped != "")),
		}, " | "))
	}
	return out
}

func pinMs(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func pinInt(v *int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}
