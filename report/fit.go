package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/labrun/labrun/results"
)

// Tables by priority: each kind of table lists its columns and the order in which they give way
// to a narrow terminal, first to a short form, then altogether; a row's measurement or finding
// never goes, and a column that is some row's only value goes last, into notes. At a width the
// first layout, most complete first, is drawn whose cells take at most two lines, at most an
// eighth taller than the shortest, and no taller than at narrower widths (choose): a wider
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
		{name: "expected", full: expectedCell, short: metExpected, lost: "tolerances", value: true},
		{name: "measured", full: measuredCell, short: compactMeasured, lost: "spreads", keep: true, value: true},
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
		{name: "expected", full: expectedCell, short: compactExpected, lost: "tolerances", value: true},
		{name: "measured", full: measuredCell, short: compactMeasured, lost: "spreads", value: true},
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
	colNoted // hidden, noted for the rows it leaves bare
)

func (s colState) shown() bool { return s < colHidden }

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
	var bare []int
	for _, i := range spec.giveWay {
		c := spec.cols[i]
		next := append(layout(nil), cur...)
		switch {
		case !cur[i].shown():
			continue
		case cur[i] == colFull && c.short != nil:
			if !changes(rows, c.full, c.short) {
				next[i] = colShort
				cur = next
				continue
			}
			next[i] = colShort
		case c.keep:
			continue
		case leavesRowBare(spec, cur, rows, i):
			bare = append(bare, i)
			continue
		default:
			next[i] = colHidden
		}
		out = append(out, next)
		cur = next
	}
	for _, i := range bare {
		if cur[i].shown() {
			cur = append(layout(nil), cur...)
			cur[i] = colNoted
			out = append(out, cur)
		}
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
			if k != i && c.value && l[k].shown() && c.full(r) != dash {
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

// bareNotes returns, for a row that l leaves with no value, its hidden values ("server: ...").
func bareNotes(spec tableSpec, l layout, r results.Row) []string {
	var notes []string
	for i, c := range spec.cols {
		switch {
		case !c.value || c.full(r) == dash:
		case l[i].shown():
			return nil
		case l[i] == colNoted:
			notes = append(notes, c.name+": "+c.full(r))
		}
	}
	return notes
}

// hidden describes what l leaves out: "calls, server, the spread of repeated runs".
func hidden(spec tableSpec, l, first layout, rows []results.Row) string {
	var parts []string
	for i, c := range spec.cols {
		switch {
		case !l[i].shown() && first[i].shown():
			parts = append(parts, c.name)
		case l[i] == colShort && changes(rows, c.full, c.short):
			parts = append(parts, c.lost)
		}
	}
	return strings.Join(parts, ", ")
}

type fitted struct {
	grid
	widths []int
	height int // borders and notes included
	notes  []string
}

// fitLayout lays rows out in l at width, cutting words only with cut; ok is false when the
// longest words do not fit without.
func fitLayout(spec tableSpec, l layout, rows []results.Row, verdicts []shortVerdict, width int, cut bool) (fitted, bool) {
	fold := foldsVerdicts(spec, l, verdicts)
	if fold {
		l = append(layout(nil), l...)
		l[len(l)-1] = colHidden
	}
	var header []string
	for i, c := range spec.cols {
		if l[i].shown() {
			header = append(header, c.name)
		}
	}
	cells := make([][]string, len(rows))
	var notes []string
	number := map[string]int{} // a note is said once
	for j, r := range rows {
		// The verdict's first word, with its notes' numbers.
		var marks []string
		for _, n := range append([]string{verdicts[j].full}, bareNotes(spec, l, r)...) {
			if n == "" {
				continue
			}
			if number[n] == 0 {
				notes = append(notes, n)
				number[n] = len(notes)
			}
			marks = append(marks, strconv.Itoa(number[n]))
		}
		numbers := ""
		if marks != nil {
			numbers = " [" + strings.Join(marks, ",") + "]"
		}
		verdict := verdicts[j].word + numbers
		skipped := verdicts[j].word == skippedWord
		for i, c := range spec.cols {
			var cell string
			switch {
			case !l[i].shown():
				continue
			case c.full == nil || fold && skipped && c.name == "outcome":
				cell = verdict
			case l[i] == colShort:
				cell = c.short(r)
			default:
				cell = c.full(r)
			}
			if fold && !skipped && c.name == "measured" {
				cell += numbers
			}
			cells[j] = append(cells[j], cell)
		}
		cells[j] = termCells(cells[j])
	}
	g := groupRows(cells)
	g.header = header
	if fold {
		// The outcome takes the verdict's colour: count the columns shown after it.
		for i := len(spec.cols) - 1; spec.cols[i].name != "outcome"; i-- {
			if l[i].shown() {
				g.verdictAt++
			}
		}
	}
	f := fitted{grid: g, notes: notes}
	var ok bool
	if f.widths, ok = fitGrid(g, width, cut); !ok {
		return fitted{}, false
	}
	f.height = g.heightAt(f.widths) + len(notes)
	return f, true
}

// nameWidths are the row column's widths fitGrid tries; 0 puts every name above its cells.
var nameWidths = []int{0, 8, 10, 12, 16, 20, 24, 28, 32}

// fitGrid chooses g's widths: fitWidths' own, or a row column of nameWidths and the others
// fitted to the rest; not too tall first, then the shortest.
func fitGrid(g grid, width int, cut bool) ([]int, bool) {
	var best []int
	var bestTall bool
	var bestHeight int
	better := func(w []int) {
		_, _, d := g.drawn(w)
		g.widen(d, w, width-5-inner(d))
		tall, height := g.tooTall(w), g.heightAt(w)
		if best == nil || tall != bestTall && !tall || tall == bestTall && height < bestHeight {
			best, bestTall, bestHeight = w, tall, height
		}
	}
	if w, ok := fitWidths(g.header, g.rows, width, cut, g.cache.own); ok {
		better(w)
	}
	others := make([][]string, len(g.rows))
	for j, r := range g.rows {
		others[j] = append([]string{""}, r[1:]...)
	}
	header := append([]string{""}, g.header[1:]...)
	for _, x := range nameWidths {
		if x > 0 && x < textLen(g.header[0]) {
			continue
		}
		room := width - x
		if x == 0 {
			room = width + 3 // the name column is not drawn, its border freed
		}
		w, ok := fitWidths(header, others, room, cut, g.cache.others)
		if !ok {
			continue
		}
		w[0] = x
		better(w)
	}
	return best, best != nil
}

// tooTall reports whether a cell takes more than two lines.
func (f fitted) tooTall() bool { return f.grid.tooTall(f.widths) }

// The widths a table is laid out at on the way to the terminal's, each bounding the next's
// height, so height never grows with width.
const (
	ladderFrom = 80
	ladderStep = 20
)

// choose returns the layout to draw at width and its fitting: the most complete that is not
// too tall, nor taller than an eighth more than the shortest or the ladder's narrower
// choices; else the shortest.
func choose(spec tableSpec, ls []layout, rows []results.Row, verdicts []shortVerdict, width int) (fitted, layout) {
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
func chooseUnder(spec tableSpec, ls []layout, rows []results.Row, verdicts []shortVerdict, width, limit int) (fitted, layout) {
	last := ls[len(ls)-1]
	fits := make([]fitted, len(ls))
	shortest := -1
	for i, l := range ls {
		f, ok := fitLayout(spec, l, rows, verdicts, width, false)
		if !ok {
			continue
		}
		fits[i] = f
		if shortest < 0 || f.height < fits[shortest].height {
			shortest = i
		}
	}
	if shortest < 0 {
		plainest, _ := fitLayout(spec, last, rows, verdicts, width, true)
		return plainest, last
	}
	bound := fits[shortest].height + fits[shortest].height/8
	if limit > 0 {
		bound = min(bound, limit)
	}
	for i, f := range fits {
		if f.widths != nil && !f.tooTall() && f.height <= bound {
			return f, ls[i]
		}
	}
	return fits[shortest], ls[shortest]
}

// hiddenLead starts the line naming what a fitted table left out.
const hiddenLead = "hidden (--wide shows): "

func writeRunFitted(buf *bytes.Buffer, run results.Run, lk look) error {
	v := verdicterFor(run)
	paint := func(j int, c string) string { return v.paint(lk, run.Rows[j], c) }
	// The heading goes in the table's top rule, or above it when the table is too narrow.
	draw := func(g grid, w []int) {
		top := titled(g.rule(w), termSafe(heading(run)))
		if top == "" {
			buf.WriteString(lk.fit(termSafe(heading(run))) + "\n")
		}
		g.draw(buf, w, top, paint)
	}
	full := fullGrid(run, v)
	if w, ok := fitGrid(full, lk.width, false); ok && !full.wraps(w) {
		draw(full, w)
		writeRunLines(buf, run, lk, v, false)
		return nil
	}
	spec := specFor(run)
	ls := layouts(spec, run.Rows)
	chosen, chosenLayout := choose(spec, ls, run.Rows, shortVerdicts(run, v), lk.width)
	draw(chosen.grid, chosen.widths)
	for i, n := range chosen.notes {
		for _, line := range wrapText(fmt.Sprintf("[%d] %s", i+1, termSafe(oneLine(n))), lk.width-1, "    ") {
			buf.WriteString(line + "\n")
		}
	}
	if h := hidden(spec, chosenLayout, ls[0], run.Rows); h != "" {
		buf.WriteString(lk.fit(hiddenLead+h) + "\n")
	}
	writeRunLines(buf, run, lk, v, true)
	return nil
}
