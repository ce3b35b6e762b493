package report

import (
	"bytes"
	"math"
	"strings"

	"github.com/labrun/labrun/results"
)

// grid is a run's table as drawn: header, rows of cells and, before row j, groups[j] when set,
// a line across every column. Cells are one line each; drawing wraps them to widths.
type grid struct {
	header []string
	rows   [][]string
	groups []string
	// verdictAt is the column that takes a row's verdict colour, counted from the last (0):
	// the verdict's, or the outcome's when the verdicts are folded into the footer.
	verdictAt int
	// cache: fitGrid's cell lines, rows whole (own) and without names (others).
	cache struct{ own, others lineCache }
}

const groupIndent = "  "

// groupRows groups each run of two or more consecutive rows whose names share the text before
// their first ": " (extended to the longest such prefix they share): the group's line is the
// prefix once, its rows keep the rest, indented.
func groupRows(rows [][]string) grid {
	g := grid{rows: append([][]string(nil), rows...), groups: make([]string, len(rows))}
	g.cache.own, g.cache.others = lineCache{}, lineCache{}
	prefix := func(j int) string {
		if len(rows[j]) == 0 {
			return ""
		}
		p, rest, ok := strings.Cut(rows[j][0], ": ")
		if !ok || strings.TrimSpace(rest) == "" {
			return ""
		}
		return p
	}
	for j := 0; j < len(rows); {
		p := prefix(j)
		end := j + 1
		for p != "" && end < len(rows) && prefix(end) == p {
			end++
		}
		if end-j < 2 {
			j = end
			continue
		}
		for {
			next, _, ok := strings.Cut(strings.TrimPrefix(rows[j][0], p+": "), ": ")
			longer := p + ": " + next
			if !ok {
				break
			}
			shared := true
			for k := j; k < end; k++ {
				if rest, ok := strings.CutPrefix(rows[k][0], longer+": "); !ok || strings.TrimSpace(rest) == "" {
					shared = false
				}
			}
			if !shared {
				break
			}
			p = longer
		}
		g.groups[j] = p + ":"
		for k := j; k < end; k++ {
			cs := append([]string(nil), rows[k]...)
			cs[0] = groupIndent + strings.TrimPrefix(cs[0], p+": ")
			g.rows[k] = cs
		}
		j = end
	}
	return g
}

func inner(widths []int) int {
	n := 3 * (len(widths) - 1)
	for _, w := range widths {
		n += w
	}
	return n
}

// drawn returns the columns drawn in boxes, and widths: all but the names at width 0.
func (g grid) drawn(widths []int) (header []string, rows [][]string, w []int) {
	if widths[0] > 0 {
		return g.header, g.rows, widths
	}
	rows = make([][]string, len(g.rows))
	for j, r := range g.rows {
		rows[j] = r[1:]
	}
	return g.header[1:], rows, widths[1:]
}

// above reports whether row j's name goes on lines across the table above its cells: when
// that is shorter, or in its column the name takes over two lines or has a word cut.
func (g grid) above(j int, widths []int) bool {
	r := g.rows[j]
	if widths[0] == 0 {
		return true
	}
	if longestWord(r[0]) > widths[0] {
		return true
	}
	in := lineCount(r[0], widths[0], "")
	if in == 1 {
		return false
	}
	_, _, w := g.drawn(widths)
	return in > min(lineCap(0), lineCount(r[0], inner(w), groupIndent)+rowLines(r[1:], widths[1:]))
}

// spans returns the lines across the table before row j.
func (g grid) spans(j int, widths []int) []string {
	_, _, w := g.drawn(widths)
	var out []string
	if g.groups[j] != "" {
		out = wrapText(g.groups[j], inner(w), groupIndent)
	}
	if g.above(j, widths) {
		out = append(out, wrapText(g.rows[j][0], inner(w), groupIndent)...)
	}
	return out
}

// cellsOf returns row j's drawn cells: its name blank when above.
func (g grid) cellsOf(j int, widths []int) []string {
	r := g.rows[j]
	switch {
	case widths[0] == 0:
		return r[1:]
	case g.above(j, widths):
		return append([]string{""}, r[1:]...)
	}
	return r
}

func longestWord(s string) int {
	lead := len(s) - len(strings.TrimLeft(s, " "))
	n := 0
	for _, f := range strings.Fields(s) {
		n = max(n, lead+textLen(f))
	}
	return n
}

func (g grid) widest(widths []int) int {
	n := 0
	for j, s := range g.groups {
		n = max(n, textLen(s))
		if g.above(j, widths) {
			n = max(n, textLen(g.rows[j][0]))
		}
	}
	return n
}

// widen gives w's first column (w: the drawn widths) what lines across the table need, up
// to room.
func (g grid) widen(w, widths []int, room int) {
	if add := min(g.widest(widths)-inner(w), room); add > 0 {
		w[0] += add
	}
}

// usedWidths narrows the drawn widths to the longest line each column's cells wrap to.
func (g grid) usedWidths(widths []int) []int {
	header, _, w := g.drawn(widths)
	used := make([]int, len(w))
	for j := range append([][]string{nil}, g.rows...) {
		cells := header
		if j > 0 {
			cells = g.cellsOf(j-1, widths)
		}
		for i, c := range cells {
			for _, l := range wrapText(c, w[i], "") {
				used[i] = max(used[i], textLen(l))
			}
		}
	}
	g.widen(used, widths, inner(w)-inner(used))
	return used
}

// heightAt is the lines g takes at widths, borders included.
func (g grid) heightAt(widths []int) int {
	header, _, w := g.drawn(widths)
	n := 3 + rowLines(header, w)
	for j := range g.rows {
		n += len(g.spans(j, widths)) + rowLines(g.cellsOf(j, widths), w)
	}
	return n
}

// tooTall reports whether a cell, or a name above its cells, takes more than two lines.
func (g grid) tooTall(widths []int) bool {
	_, _, w := g.drawn(widths)
	for j, r := range g.rows {
		if g.above(j, widths) && lineCount(r[0], inner(w), groupIndent) > 2 {
			return true
		}
		for i, c := range r {
			if (i > 0 || !g.above(j, widths)) && lineCount(c, widths[i], "") > lineCap(i) {
				return true
			}
		}
	}
	return false
}

// rule is the line between g's header and its rows at widths: "+----+-----+".
func (g grid) rule(widths []int) string {
	rule := "+"
	for _, x := range g.usedWidths(widths) {
		rule += strings.Repeat("-", x+2) + "+"
	}
	return rule
}

// titled is rule with title set in it, "+- title ----+", or "" when it does not fit.
func titled(rule, title string) string {
	n := len(rule) - 5 - textLen(title) // the dashes after the title: "+- ", " " and "+" take 5
	if n < 1 {
		return ""
	}
	return "+- " + title + " " + strings.Repeat("-", n) + "+"
}

// draw writes g in tablewriter's ASCII style: cells wrapped to widths, one space of padding;
// top, when set, is the rule above the header (titled's); paint colours row j's cell at
// verdictAt, line by line.
func (g grid) draw(buf *bytes.Buffer, widths []int, top string, paint func(j int, s string) string) {
	header, _, _ := g.drawn(widths)
	w := g.usedWidths(widths)
	rule := g.rule(widths) + "\n"
	if top == "" {
		top = rule
	} else {
		top += "\n"
	}
	buf.WriteString(top)
	drawCells(buf, header, w, -1, nil)
	buf.WriteString(rule)
	for j := range g.rows {
		for _, l := range g.spans(j, widths) {
			buf.WriteString("| " + pad(l, inner(w)) + " |\n")
		}
		cells := g.cellsOf(j, widths)
		drawCells(buf, cells, w, len(cells)-1-g.verdictAt, func(s string) string { return paint(j, s) })
	}
	buf.WriteString(rule)
}

func rowLines(cells []string, widths []int) int {
	n := 1
	for i, c := range cells {
		n = max(n, lineCount(c, widths[i], ""))
	}
	return n
}

// drawCells writes a row of cells wrapped to widths, cell painted by paint.
func drawCells(buf *bytes.Buffer, cells []string, widths []int, painted int, paint func(string) string) {
	lines := make([][]string, len(cells))
	n := 1
	for i, c := range cells {
		lines[i] = wrapText(c, widths[i], "")
		n = max(n, len(lines[i]))
	}
	for k := range n {
		buf.WriteString("|")
		for i := range cells {
			l := ""
			if k < len(lines[i]) {
				l = lines[i][k]
			}
			s := l
			if paint != nil && i == painted && l != "" {
				s = paint(l)
			}
			buf.WriteString(" " + s + strings.Repeat(" ", max(0, widths[i]-textLen(l))) + " |")
		}
		buf.WriteString("\n")
	}
}

// fullGrid is run's table with every column whole.
func fullGrid(run results.Run, v verdicter) grid {
	cells := make([][]string, len(run.Rows))
	for j, r := range run.Rows {
		cells[j] = termCells(v.cells(r))
	}
	g := groupRows(cells)
	g.header = columns
	return g
}

func (g grid) wraps(widths []int) bool {
	for j, r := range append([][]string{g.header}, g.rows...) {
		if j > 0 && textLen(g.groups[j-1]) > inner(widths) {
			return true
		}
		for i, c := range r {
			if textLen(c) > widths[i] {
				return true
			}
		}
	}
	return false
}

func (g grid) naturalWidths() []int {
	w := make([]int, len(g.header))
	for _, r := range append([][]string{g.header}, g.rows...) {
		for i, c := range r {
			w[i] = max(w[i], textLen(c))
		}
	}
	g.widen(w, w, math.MaxInt)
	return w
}
