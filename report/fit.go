package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/labrun/labrun/results"
)

// Tables by priority: each kind of table lists its columns and the order in which they give way
// to a narrow terminal, first to a short form, then altogether; a row's measurement or finding,
// and a column that is some row's only value, never go. At a width the first layout, most
// complete first, is drawn whose cells take at most two lines (a row name three), at most half
// again as tall as the plainest, and no taller than at narrower widths (choose): a wider
// terminal never shows a taller table. A line under the table names what was hidden.

type fitColumn struct {
	name  string
	full  func(results.Row) string
	short func(results.Row) string // nil: no short form
	// lost names what the short form leaves out, for the note.
	lost string
	keep bool // never dropped
	// value: a cell other than "—" is a value of its row.
	value bool
}

// tableSpec is a kind of table: columns in drawing order, and the order they give way (a
// column with a short form twice).
type tableSpec struct {
	cols    []fitColumn
	giveWay []int
}

// verdictCol is filled from the table's short verdicts, not from the row.
var verdictCol = fitColumn{name: "verdict", keep: true}

// experimentTable keeps measured, outcome and verdict; calls go first, then spread, tolerance,
// documented, server.
var experimentTable = tableSpec{
	cols: []fitColumn{
		{name: "row", full: func(r results.Row) string { return orDash(r.Name) }, keep: true},
		{name: "calls", full: callsCell, value: true},
		{name: "documented", full: func(r results.Row) string { return orDash(r.Documented) }, value: true},
		{name: "expected", full: expectedCell, short: compactExpected, lost: "the tolerances", value: true},
		{name: "measured", full: measuredCell, short: compactMeasured, lost: "the spread of repeated runs", keep: true, value: true},
		{name: "outcome", full: outcomeCell, keep: true},
		{name: "server", full: func(r results.Row) string { return orDash(r.Server) }, value: true},
		verdictCol,
	},
	giveWay: []int{1, 4, 3, 2, 6},
}

// probeTable keeps the server's finding; calls go first, then spread, expectation, outcome,
// measured time, and the scenarios' titles (docs/probe.md has them).
var probeTable = tableSpec{
	cols: []fitColumn{
		{name: "row", full: func(r results.Row) string { return orDash(r.Name) }, short: scenarioName,
			lost: "the scenarios' titles (docs/probe.md)", keep: true},
		{name: "calls", full: callsCell, value: true},
		{name: "documented", full: func(r results.Row) string { return orDash(r.Documented) }, value: true},
		{name: "expected", full: expectedCell, short: compactExpected, lost: "the tolerances", value: true},
		{name: "measured", full: measuredCell, short: compactMeasured, lost: "the spread of repeated runs", value: true},
		{name: "outcome", full: outcomeCell},
		{name: "server", full: func(r results.Row) string { return orDash(r.Server) }, keep: true, value: true},
		verdictCol,
	},
	giveWay: []int{1, 4, 3, 5, 3, 4, 0},
}

func scenarioName(r results.Row) string {
	name, _, _ := strings.Cut(r.Name, ": ")
	return orDash(name)
}

func specFor(run results.Run) tableSpec {
	if run.Experiment == probeExperiment {
		return probeTable
	}
	return experimentTable
}

type colState int

const (
	colFull colState = iota
	colShort
	colHidden
)

// layout is one way of drawing a table: a state per column.
type layout []colState

// layouts returns spec's layouts for rows, most complete first. An all-"—" column is always
// hidden; a short form changing no cell is skipped; no column goes if a row would be left bare.
func layouts(spec tableSpec, rows []results.Row) []layout {
	first := make(layout, len(spec.cols))
	for i, c := range spec.cols {
		if c.full != nil && !c.keep && allDash(rows, c.full) {
			first[i] = colHidden
		}
	}
	out := []layout{first}
	cur := first
	for _, i := range spec.giveWay {
		c := spec.cols[i]
		next := append(layout(nil), cur...)
		switch {
		case cur[i] == colHidden:
			continue
		case cur[i] == colFull && c.short != nil:
			if !changes(rows, c.full, c.short) {
				next[i] = colShort
				cur = next
				continue
			}
			next[i] = colShort
		case c.keep || leavesRowBare(spec, cur, rows, i):
			continue
		default:
			next[i] = colHidden
		}
		out = append(out, next)
		cur = next
	}
	return out
}

func allDash(rows []results.Row, cell func(results.Row) string) bool {
	for _, r := range rows {
		if cell(r) != dash {
			return false
		}
	}
	return true
}

func changes(rows []results.Row, full, short func(results.Row) string) bool {
	for _, r := range rows {
		if full(r) != short(r) {
			return true
		}
	}
	return false
}

// leavesRowBare reports whether hiding column i leaves a row with no value.
func leavesRowBare(spec tableSpec, l layout, rows []results.Row, i int) bool {
	for _, r := range rows {
		if spec.cols[i].full(r) == dash {
			continue
		}
		bare := true
		for k, c := range spec.cols {
			if k != i && c.value && l[k] != colHidden && c.full(r) != dash {
				bare = false
				break
			}
		}
		if bare {
			return true
		}
	}
	return false
}

// hidden describes what l leaves out: "calls, server, the spread of repeated runs".
func hidden(spec tableSpec, l, first layout, rows []results.Row) string {
	var parts []string
	for i, c := range spec.cols {
		switch {
		case l[i] == colHidden && first[i] != colHidden:
			parts = append(parts, c.name)
		case l[i] == colShort && changes(rows, c.full, c.short):
			parts = append(parts, c.lost)
		}
	}
	return strings.Join(parts, ", ")
}

type fitted struct {
	header []string
	rows   [][]string
	widths []int
	height int // borders included
}

// fitLayout lays rows out in l at width, cutting words only with cut; ok is false when the
// longest words do not fit without.
func fitLayout(spec tableSpec, l layout, rows []results.Row, verdicts []string, width int, cut bool) (fitted, bool) {
	var f fitted
	for i, c := range spec.cols {
		if l[i] != colHidden {
			f.header = append(f.header, c.name)
		}
	}
	f.rows = make([][]string, len(rows))
	for j, r := range rows {
		for i, c := range spec.cols {
			switch {
			case l[i] == colHidden:
				continue
			case c.full == nil:
				f.rows[j] = append(f.rows[j], verdicts[j])
			case l[i] == colShort:
				f.rows[j] = append(f.rows[j], c.short(r))
			default:
				f.rows[j] = append(f.rows[j], c.full(r))
			}
		}
		f.rows[j] = termCells(f.rows[j])
	}
	var ok bool
	if f.widths, ok = fitWidths(f.header, f.rows, width, cut); !ok {
		return fitted{}, false
	}
	f.height = 3
	for _, r := range append([][]string{f.header}, f.rows...) {
		f.height += rowLines(r, f.widths)
	}
	return f, true
}

func rowLines(cells []string, widths []int) int {
	n := 1
	for i, c := range cells {
		n = max(n, len(wrapText(c, widths[i], "")))
	}
	return n
}

// tooTall reports whether a cell takes more than two lines (a row name three).
func (f fitted) tooTall() bool {
	for _, r := range f.rows {
		for i, c := range r {
			if len(wrapText(c, f.widths[i], "")) > lineCap(i) {
				return true
			}
		}
	}
	return false
}

// The widths a table is laid out at on the way to the terminal's, each bounding the next's
// height, so height never grows with width.
const (
	ladderFrom = 80
	ladderStep = 20
)

// choose returns the layout to draw at width and its fitting: the most complete that is not
// too tall, nor taller than half again the plainest or the ladder's narrower choices; else the
// plainest.
func choose(spec tableSpec, ls []layout, rows []results.Row, verdicts []string, width int) (fitted, layout) {
	var prev fitted
	var prevLayout layout
	for w := ladderFrom; w <= width; w += ladderStep {
		if w+ladderStep > width {
			w = width
		}
		f, l := chooseUnder(spec, ls, rows, verdicts, w, prev.height)
		if prevLayout != nil && f.height > prev.height {
			// A narrower terminal's table fits: keep it, as a new layout can come out taller.
			f, l = prev, prevLayout
		}
		prev, prevLayout = f, l
	}
	if prevLayout == nil {
		return chooseUnder(spec, ls, rows, verdicts, width, -1)
	}
	return prev, prevLayout
}

// chooseUnder is choose at one width, height bounded by limit when positive.
func chooseUnder(spec tableSpec, ls []layout, rows []results.Row, verdicts []string, width, limit int) (fitted, layout) {
	last := ls[len(ls)-1]
	plainest, ok := fitLayout(spec, last, rows, verdicts, width, false)
	if !ok {
		plainest, _ = fitLayout(spec, last, rows, verdicts, width, true)
		return plainest, last
	}
	bound := plainest.height + plainest.height/2
	if limit > 0 {
		bound = min(bound, limit)
	}
	for _, l := range ls[:len(ls)-1] {
		if f, ok := fitLayout(spec, l, rows, verdicts, width, false); ok && !f.tooTall() && f.height <= bound {
			return f, l
		}
	}
	return plainest, last
}

// maxVerdictWord is the longest verdict shown whole; a longer one shows its first word.
const maxVerdictWord = 12

// shortVerdicts returns a fitted table's verdict cells (first word and a note's number) and
// the notes.
func shortVerdicts(run results.Run, v verdicter) (cells, notes []string) {
	cells = make([]string, len(run.Rows))
	for i, r := range run.Rows {
		full := v.text(r)
		word := full
		if k := strings.IndexAny(full, ":("); k > 0 {
			word = strings.TrimSpace(full[:k])
		}
		if len(word) > maxVerdictWord {
			word, _, _ = strings.Cut(word, " ")
		}
		cells[i] = word
		if word != full {
			notes = append(notes, full)
			cells[i] = fmt.Sprintf("%s [%d]", word, len(notes))
		}
	}
	return cells, notes
}

func writeRunFitted(buf *bytes.Buffer, run results.Run, lk look) error {
	v := verdicterFor(run)
	buf.WriteString(lk.fit(termSafe(heading(run))) + "\n")
	full := make([][]string, len(run.Rows))
	for i, r := range run.Rows {
		full[i] = termCells(v.cells(r))
	}
	if w, ok := fitWidths(columns, full, lk.width, false); ok && !wraps(columns, full, w) {
		if err := drawTable(buf, columns, full, w, func(i int, c string) string { return v.paint(lk, run.Rows[i], c) }); err != nil {
			return err
		}
		writeRunLines(buf, run, lk, v)
		return nil
	}
	spec := specFor(run)
	verdicts, notes := shortVerdicts(run, v)
	ls := layouts(spec, run.Rows)
	chosen, chosenLayout := choose(spec, ls, run.Rows, verdicts, lk.width)
	if err := drawTable(buf, chosen.header, chosen.rows, chosen.widths, func(i int, c string) string {
		return v.paint(lk, run.Rows[i], c)
	}); err != nil {
		return err
	}
	for i, n := range notes {
		for _, line := range wrapText(fmt.Sprintf("[%d] %s", i+1, termSafe(oneLine(n))), lk.width-1, "    ") {
			buf.WriteString(line + "\n")
		}
	}
	if h := hidden(spec, chosenLayout, ls[0], run.Rows); h != "" {
		buf.WriteString(lk.fit("hidden at this width: "+h+" (--wide, a wider terminal or --format md show them)") + "\n")
	}
	writeRunLines(buf, run, lk, v)
	return nil
}
