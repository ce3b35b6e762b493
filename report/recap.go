package report

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/labrun/labrun/results"
)

// The recap closes a long report: labrun all prints about a thousand lines, and a failing
// row sits hundreds of lines above the summary that names its experiment. The recap repeats,
// just before that summary, one line per experiment (its rows, the time it took, its verdict)
// and then every row that failed or was inconclusive, with its experiment and its reason (for
// an inconclusive row, the noise that explains it). A repeated run of one experiment ends
// with it too: its table is as long as its rows times its lines, and its spread columns make
// them taller.

// recapRow is one row the recap lists: its experiment, its name and its verdict text.
type recapRow struct {
	experiment, name, verdict string
	row                       results.Row
}

// recapped returns the rows of runs that failed or were inconclusive, in the order of the
// runs and their rows.
func recapped(runs []results.Run) []recapRow {
	var out []recapRow
	for _, run := range runs {
		for _, r := range run.Rows {
			if r.Pass || r.Skipped != "" {
				continue
			}
			out = append(out, recapRow{orDash(run.Experiment), orDash(r.Name), verdictCell(r), r})
		}
	}
	return out
}

// recapTime is the time an experiment took: its measured runs together (results.Noise's
// SpanMs), "—" for a run that does not say (read back from a labrun before it).
func recapTime(run results.Run) string {
	if run.Noise == nil || run.Noise.SpanMs <= 0 {
		return dash
	}
	return strconv.FormatFloat(run.Noise.SpanMs/1000, 'f', 1, 64) + " s"
}

// recapCount is "1 row", "12 rows", with the failed and inconclusive rows when there are
// any: "12 rows, 2 failed, 1 inconclusive".
func recapCount(run results.Run) string {
	s := strconv.Itoa(len(run.Rows)) + " rows"
	if len(run.Rows) == 1 {
		s = "1 row"
	}
	t := run.Tally()
	if t.Failed > 0 {
		s += fmt.Sprintf(", %d failed", t.Failed)
	}
	if t.Inconclusive > 0 {
		s += fmt.Sprintf(", %d inconclusive", t.Inconclusive)
	}
	return s
}

// recapTitle heads the recap: "recap: 13 experiments, 214 rows, 3 failed or inconclusive",
// "..., none failed".
func recapTitle(runs []results.Run, bad int) string {
	rows := 0
	for _, run := range runs {
		rows += len(run.Rows)
	}
	what := fmt.Sprintf("%d experiments", len(runs))
	if len(runs) == 1 {
		what = "1 experiment"
	}
	s := fmt.Sprintf("recap: %s, %d rows", what, rows)
	if bad == 0 {
		return s + ", none failed"
	}
	return s + fmt.Sprintf(", %d failed or inconclusive", bad)
}

// recapBad introduces the list of failed or inconclusive rows.
const recapBad = "failed or inconclusive (experiment · row · verdict):"

// writeRecapTable writes the recap in table form: the title, one aligned line per experiment,
// and the failed or inconclusive rows, each wrapped to the terminal's width under its own
// indent. Verdicts are coloured as the footers are.
func writeRecapTable(buf *bytes.Buffer, runs []results.Run, lk look) {
	bad := recapped(runs)
	var names, counts, times []string
	for _, run := range runs {
		names = append(names, termSafe(orDash(run.Experiment)))
		counts = append(counts, recapCount(run))
		times = append(times, recapTime(run))
	}
	nw, cw, tw := widestOf(names), widestOf(counts), widestOf(times)
	timed := anyTimed(runs)
	buf.WriteString(lk.fit(recapTitle(runs, len(bad))) + "\n")
	for i, run := range runs {
		line := "  " + pad(names[i], nw) + "  " + pad(counts[i], cw) + "  "
		if timed {
			line += strings.Repeat(" ", tw-textLen(times[i])) + times[i] + "  "
		}
		buf.WriteString(lk.footer(lk.fit(line+runVerdict(run)), run.Pass) + "\n")
	}
	if len(bad) == 0 {
		return
	}
	buf.WriteString(recapBad + "\n")
	for _, b := range bad {
		line := termSafe(b.experiment) + " · " + termSafe(oneLine(b.name)) + " · " + termSafe(oneLine(b.verdict))
		lines := []string{line}
		if lk.width > 0 {
			lines = wrapText(line, lk.width-3, "    ")
		}
		buf.WriteString(lk.verdict(b.row, "  "+strings.Join(lines, "\n  ")) + "\n")
	}
}

// writeRecapMarkdown writes the recap as a section: a table of the experiments and a list of
// the rows that failed or were inconclusive.
func writeRecapMarkdown(buf *bytes.Buffer, runs []results.Run) {
	bad := recapped(runs)
	buf.WriteString("### recap\n\n" + markdownText(strings.TrimPrefix(recapTitle(runs, len(bad)), "recap: ")) + "\n\n")
	timed := anyTimed(runs)
	var rows [][]string
	for _, run := range runs {
		row := []string{orDash(run.Experiment), recapCount(run), recapTime(run), runVerdict(run)}
		if !timed {
			row = slices.Delete(row, 2, 3)
		}
		rows = append(rows, row)
	}
	header := []string{"experiment", "rows", "time", "verdict"}
	if !timed {
		header = slices.Delete(header, 2, 3)
	}
	writeMarkdownTable(buf, header, rows)
	if len(bad) == 0 {
		return
	}
	buf.WriteString("\n" + markdownText(recapBad) + "\n\n")
	for _, b := range bad {
		buf.WriteString("- " + markdownText(b.experiment+" · "+oneLine(b.name)+" · "+oneLine(b.verdict)) + "\n")
	}
}

// recapRun reports whether a run printed on its own ends with a recap: a repeated run of an
// experiment (Meta.Repeat above 1). A probe's analogy judges nothing, so it has none.
func recapRun(run results.Run) bool {
	return run.Meta != nil && run.Meta.Repeat > 1 && !verdicterFor(run).analogy()
}

// anyTimed reports whether a run of runs says how long it took: the recap shows no time
// column for runs read back from a labrun before they did.
func anyTimed(runs []results.Run) bool {
	return slices.ContainsFunc(runs, func(r results.Run) bool { return recapTime(r) != dash })
}

func widestOf(ss []string) int {
	n := 0
	for _, s := range ss {
		n = max(n, textLen(s))
	}
	return n
}

func pad(s string, n int) string { return s + strings.Repeat(" ", max(0, n-textLen(s))) }
