package report

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/labrun/labrun/results"
)

// The recap closes a long report: just before the summary, one line per experiment (rows, time,
// verdict), then every failed or inconclusive row with its reason, which would otherwise sit
// hundreds of lines above. A repeated run of one experiment ends with one too.

type recapRow struct {
	experiment, name, verdict string
	row                       results.Row
}

// recapped returns the failed or inconclusive rows of runs, in order.
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

// recapTime is an experiment's measured time (results.Noise's SpanMs), "—" when unknown.
func recapTime(run results.Run) string {
	if run.Noise == nil || run.Noise.SpanMs <= 0 {
		return dash
	}
	return strconv.FormatFloat(run.Noise.SpanMs/1000, 'f', 1, 64) + " s"
}

// recapCount is "12 rows, 2 failed, 1 inconclusive", or "1 row".
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

// recapTitle is "recap: 13 experiments, 214 rows, 3 failed or inconclusive".
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

const recapBad = "failed or inconclusive (experiment · row · verdict):"

// writeRecapTable writes the recap's table form, wrapped to the width, verdicts coloured.
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
	entries := make([]string, len(runs))
	for i, run := range runs {
		line := "  " + pad(names[i], nw) + "  " + pad(counts[i], cw) + "  "
		if timed {
			line += strings.Repeat(" ", tw-textLen(times[i])) + times[i] + "  "
		}
		entries[i] = line + runVerdict(run)
	}
	// On a terminal wide enough, two columns, read down as ls lists.
	ew, rows := widestOf(entries), len(runs)
	if lk.width > 0 && rows > 1 && 2*ew+2 < lk.width {
		rows = (rows + 1) / 2
	}
	for i := range rows {
		if rows == len(runs) {
			buf.WriteString(lk.footer(lk.fit(entries[i]), runs[i].Pass) + "\n")
			continue
		}
		line := lk.footer(entries[i], runs[i].Pass)
		if k := i + rows; k < len(runs) {
			line += strings.Repeat(" ", ew-textLen(entries[i])+2) + lk.footer(entries[k], runs[k].Pass)
		}
		buf.WriteString(line + "\n")
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

// writeRecapMarkdown writes the recap as a table of experiments and a list of bad rows.
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

// recapRun reports whether a run printed alone ends with a recap: a repeated experiment (a
// probe judges nothing).
func recapRun(run results.Run) bool {
	return run.Meta != nil && run.Meta.Repeat > 1 && !verdicterFor(run).analogy()
}

// anyTimed reports whether a run says its time; runs from older labruns do not.
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
