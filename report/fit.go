package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/labrun/labrun/results"
)

// Tables by priority. Each kind of table (an experiment's, a probe's) lists its columns and
// the order in which they give way to a narrow terminal: a column first loses what its short
// form leaves out (the spread of repeated runs, the tolerance, a scenario's title), then
// goes altogether. The column that holds a row's measurement or finding never goes, nor
// does one that is the only value some row has (exp-l's counts live in "calls").
//
// At a width, the layouts are tried from the most complete to the plainest (every column
// that can give way has), and the first is drawn whose cells take at most two lines (a row
// name three), whose table is at most half again as tall as the plainest's at that width,
// and no taller than the table drawn at narrower widths (80, 100, 120, ... columns: see
// choose). A wider terminal shows more columns, never a taller table. A line under the
// table names what was hidden and how to see it.

// fitColumn is a column of a fitted table.
type fitColumn struct {
	name  string
	full  func(results.Row) string
	short func(results.Row) string // nil: no short form
	// lost names what the short form leaves out, for the note under the table.
	lost string
	keep bool // never dropped: the row's measurement or finding, the row, the verdict
	// value: a cell of this column other than "—" is a value of its row (the row, verdict
	// and outcome are not).
	value bool
}

// tableSpec is a kind of table: its columns in the order they are drawn, and the order in
// which they give way (indexes into cols; a column with a short form gives way twice).
type tableSpec struct {
	cols    []fitColumn
	giveWay []int
}

// verdictCol is filled from the verdicts worked out for the table (short, with a note's
// number), not from the row alone.
var verdictCol = fitColumn{name: "verdict", keep: true}

// experimentTable: the measured value, the outcome and the verdict always stay; the calls
// go first, then the spread and the tolerance, the documented value, the server's note.
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

// probeTable: what the server saw is the finding and always stays; the calls go first, then
// the spread, the model's expectation, the outcome, the measured time (the finding says
// it), and last the scenarios' titles (docs/probe.md has them).
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

// scenarioName is a probe row's name without its title: "silent".
func scenarioName(r results.Row) string {
	name, _, _ := strings.Cut(r.Name, ": ")
	return orDash(name)
}

// specFor returns the kind of table run is drawn as.
func specFor(run results.Run) tableSpec {
	if run.Experiment == probeExperiment {
		return probeTable
	}
	return experimentTable
}

// colState is how a layout draws a column.
type colState int

const (
	colFull colState = iota
	colShort
	colHidden
)

// layout is one way of drawing a table: a state per column of its spec.
type layout []colState

// layouts returns the layouts of spec for rows, most complete first, plainest last. A column
// every cell of which is "—" is hidden in all of them (it hides nothing); a short form that
// changes no cell is skipped; a column is not dropped when some row would be left without a
// value.
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

// leavesRowBare reports whether hiding column i of l leaves a row with no value in the
// columns still drawn.
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

// hidden describes what l leaves out of rows: "calls, server, the spread of repeated runs".
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

// fitted is a table laid out for a width.
type fitted struct {
	header []string
	rows   [][]string
	widths []int
	height int // the table's lines, borders included
}

// fitLayout lays rows out in l at width, cutting words when cut and nothing else fits; ok
// is false when the longest words do not fit and cut is not set.
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
	f.height = 3 // the borders above and under the header, and under the table
	for _, r := range append([][]string{f.header}, f.rows...) {
		f.height += rowLines(r, f.widths)
	}
	return f, true
}

// rowLines is the lines a row of cells takes at widths.
func rowLines(cells []string, widths []int) int {
	n := 1
	for i, c := range cells {
		n = max(n, len(wrapText(c, widths[i], "")))
	}
	return n
}

// tooTall reports whether a cell of f takes more lines than its cap: two, three for a row
// name.
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

// The widths a table is laid out at on the way to the terminal's: the height chosen at one
// bounds the height at the next, so that the height never grows with the width at these
// widths, and between them by no more than a step's difference.
const (
	ladderFrom = 80
	ladderStep = 20
)

// choose returns the layout of ls to draw at width, and how it is fitted: the most complete
// whose cells take at most two lines (a row name three), no taller than half again the
// plainest layout's height at width, nor than the table chosen at the ladder's widths below
// width; the plainest when none is.
func choose(spec tableSpec, ls []layout, rows []results.Row, verdicts []string, width int) (fitted, layout) {
	var prev fitted
	var prevLayout layout
	for w := ladderFrom; w <= width; w += ladderStep {
		if w+ladderStep > width {
			w = width // the last step is the width itself
		}
		f, l := chooseUnder(spec, ls, rows, verdicts, w, prev.height)
		if prevLayout != nil && f.height > prev.height {
			// The widths that fit a narrower terminal fit this one: keep its table, as
			// laying the columns out again can come out taller.
			f, l = prev, prevLayout
		}
		prev, prevLayout = f, l
	}
	if prevLayout == nil {
		return chooseUnder(spec, ls, rows, verdicts, width, -1)
	}
	return prev, prevLayout
}

// chooseUnder is choose at one width, with the height bounded by limit unless it is 0 or
// less.
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

// maxVerdictWord is the longest verdict a fitted table's verdict column shows whole ("not
// judged", "inconclusive"); a longer one shows its first word.
const maxVerdictWord = 12

// shortVerdicts returns the verdict cells of a fitted table, each the verdict's first word
// ("pass", "FAIL", "skipped") with the number of a note that holds the rest, and the notes.
func shortVerdicts(run results.Run, v verdicter) (cells, notes []string) {
	cells = make([]string, len(run.Rows))
	for i, r := range run.Rows {
		full := v.text(r)
		word := full
		if k := strings.IndexAny(full, ":("); k > 0 {
			word = strings.TrimSpace(full[:k])
		}
		if len(word) > maxVerdictWord {
			word, _, _ = strings.Cut(word, " ") // "differs from hc5 at its defaults": "differs"
		}
		cells[i] = word
		if word != full {
			notes = append(notes, full)
			cells[i] = fmt.Sprintf("%s [%d]", word, len(notes))
		}
	}
	return cells, notes
}

// writeRunFitted writes run's table form for a terminal of lk.width columns.
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
