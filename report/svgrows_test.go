package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// timelineGroups is a run whose calls are not its rows (exp-c's and exp-l's kind): a call
// whose group's row counts two executions, a lane of streams, timed rows of a group without
// calls (drawn under a heading) and a count of that group (not drawn: it has no time).
func timelineGroups() results.Run {
	ms := func(v float64) *float64 { return &v }
	wait := func(start, end float64, outcome string) results.Attempt {
		return attempt(start, end, vocab.Outcome(outcome), span("wait", end-start))
	}
	return results.Run{
		Experiment: "exp-l",
		Title:      "calls, lanes and rows",
		Calls: []results.Call{
			{Label: "plain server", Attempts: []results.Attempt{wait(0, 300, "read-timeout"), wait(300, 600, "read-timeout")}},
			{Label: "incident: pool 5" + LaneSep + "requests", Attempts: []results.Attempt{wait(0, 200, "ok")}},
			{Label: "incident: pool 5" + LaneSep + "requests", Attempts: []results.Attempt{wait(100, 400, "ok")}},
		},
		Rows: []results.Row{
			{Name: "plain server: attempt 1", MeasuredMs: ms(300), Outcome: "read-timeout"},
			{Name: "plain server: reservations", MeasuredMs: ms(600), ServerExecutions: results.Count(2)},
			{Name: "incident: pool 5: answered (median end)", MeasuredMs: ms(400), Outcome: "ok"},
			{Name: "sizing: calls answered (median time)", MeasuredMs: ms(45), Outcome: "ok"},
			{Name: "hedging: labrun's hedge after 30ms: p99 of 50 calls", MeasuredMs: ms(52.5), Outcome: "ok"},
			{Name: "storm, no breaker: calls shed", ServerExecutions: results.Count(0)},
		},
	}
}

// TestSVGGroups: a call's line says how often the server executed it (the only call of its
// group; exp-b's calls share their group's count, and say nothing), every timed row whose
// group has no call gets a line under a heading, and a row without a time does not.
func TestSVGGroups(t *testing.T) {
	run := timelineGroups()
	items := svgItems(run)
	var labels []string
	for _, it := range items {
		labels = append(labels, it.label+" | "+it.outcome)
	}
	got := strings.Join(labels, "\n")
	for _, want := range []string{
		"plain server | read-timeout ×2 · executed 2×",
		"timed rows without recorded calls: their measured times, each from its own start | ",
		"sizing: calls answered (median time) | ok",
		"hedging: labrun's hedge after 30ms: p99 of 50 calls | ok",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no line %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "storm") || strings.Contains(got, "plain server: attempt 1") {
		t.Errorf("a row with no time, or one whose group has calls, got a line:\n%s", got)
	}
	checkSVGGeometry(t, run)
	for _, ref := range referenceSuite(t).Experiments {
		if ref.Experiment != "exp-b" {
			continue
		}
		for _, it := range svgItems(ref) {
			if it.executions != "" {
				t.Errorf("exp-b: %q says %q: its group's count is of 20 calls", it.label, it.executions)
			}
		}
	}
}

// TestSVGNoEmptyLine: where the calls are the table's rows, a row without a time shows its
// value in the plot (the demo's pool state, its reservations), so that no line is empty.
func TestSVGNoEmptyLine(t *testing.T) {
	var demo results.Run
	for _, run := range referenceSuite(t).Experiments {
		if run.Experiment == "demo" {
			demo = run
		}
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, demo); err != nil {
		t.Fatal(err)
	}
	for _, r := range demo.Rows {
		if _, timed := rowTime(r); timed || hasCall(demo, r.Name) {
			continue
		}
		if want := ">" + xmlText(rowValue(r)) + "</text>"; !strings.Contains(buf.String(), want) {
			t.Errorf("row %q: no %q in the plot", r.Name, rowValue(r))
		}
	}
}

// hasCall reports whether a call of run is labelled name.
func hasCall(run results.Run, name string) bool {
	for _, c := range run.Calls {
		if c.Label == name {
			return true
		}
	}
	return false
}

// TestSVGTopAxis: a chart taller than svgTallChart (exp-b's) repeats its tick labels at the
// top; a short one (exp-a's) does not.
func TestSVGTopAxis(t *testing.T) {
	for _, run := range referenceSuite(t).Experiments {
		if run.Experiment != "exp-a" && run.Experiment != "exp-b" {
			continue
		}
		var buf bytes.Buffer
		if err := WriteSVG(&buf, run); err != nil {
			t.Fatal(err)
		}
		l := layoutSVG(run, svgItems(run))
		top := regexp.MustCompile(fmt.Sprintf(`<text x="[0-9.]+" y="%d">[0-9.]+</text>`, svgTop-6))
		got, tall := len(top.FindAllString(buf.String(), -1)), l.bottom-svgTop > svgTallChart
		switch {
		case tall && got != len(l.ticks)-1:
			t.Errorf("%s (%.0f px of rows): %d tick labels at the top, want %d (all but 0)", run.Experiment, l.bottom-svgTop, got, len(l.ticks)-1)
		case !tall && got != 0:
			t.Errorf("%s (%.0f px of rows): %d tick labels at the top, want none", run.Experiment, l.bottom-svgTop, got)
		}
		if run.Experiment == "exp-b" && !tall {
			t.Errorf("exp-b's chart is %.0f px of rows: not tall?", l.bottom-svgTop)
		}
	}
}
