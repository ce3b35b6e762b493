package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labrun/labrun/results"
)

const (
	fitMinRow   = 16 // the row column gets at least this much, or its whole name when shorter
	fitMinOther = 7  // the narrowest any other column gets when even whole words do not fit
)

// writeRunLines writes the lines under a fitted table: the footer, the config and the meta
// line, each wrapped to the width.
func writeRunLines(buf *bytes.Buffer, run results.Run, lk look, v verdicter) {
	buf.WriteString(v.paintFooter(lk, lk.fit(v.footer(run)), run.Pass) + "\n")
	if c := configLine(run); c != "" {
		buf.WriteString(lk.fit(termSafe(c)) + "\n")
	}
	if m := metaLine(run.Meta); m != "" {
		buf.WriteString(lk.fit(termSafe(m)) + "\n")
	}
}

// drawTable draws header and rows with each cell wrapped to its column's width; paint
// colours the last column's cell of row i.
func drawTable(buf *bytes.Buffer, header []string, rows [][]string, widths []int, paint func(i int, cell string) string) error {
	t := newTable(buf)
	t.Header(wrapRow(header, widths))
	for i, r := range rows {
		cs := wrapRow(r, widths)
		cs[len(cs)-1] = paint(i, cs[len(cs)-1])
		if err := t.Append(cs); err != nil {
			return err
		}
	}
	return t.Render()
}

// termCells makes each cell one line of text safe for a terminal.
func termCells(cs []string) []string {
	for i, c := range cs {
		cs[i] = termSafe(oneLine(c))
	}
	return cs
}

// wraps reports whether a cell of rows is wider than its column.
func wraps(header []string, rows [][]string, widths []int) bool {
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			if textLen(c) > widths[i] {
				return true
			}
		}
	}
	return false
}

// fitWidths chooses the widths of the columns of header and rows for a table that fits
// width terminal columns (ASCII borders and one space of padding each side take 3 a column
// and 1), leaving the last terminal column free, as some terminals wrap when it is written.
// Every column first gets its longest word, so that no word is cut (the row column at least
// fitMinRow, then up to a third of the width); the width left over goes, a column at a time,
// to where it saves the most lines. ok is false when even the
// longest words do not fit; with cut, the columns then shrink to fitMinOther, cutting words,
// and ok is true.
func fitWidths(header []string, rows [][]string, width int, cut bool) ([]int, bool) {
	n := len(header)
	natural := make([]int, n)
	word := make([]int, n)
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			natural[i] = max(natural[i], textLen(c))
			for _, f := range strings.Fields(c) {
				word[i] = max(word[i], textLen(f))
			}
		}
	}
	budget := width - 1 - (3*n + 1)
	w := make([]int, n)
	used := 0
	for i := range w {
		switch i {
		case 0:
			w[i] = min(natural[i], max(word[i], fitMinRow))
		case n - 1:
			w[i] = natural[i] // the verdict, short, never wraps
		default:
			w[i] = word[i]
		}
		used += w[i]
	}
	if used > budget {
		if !cut {
			return nil, false
		}
		// Take from the widest other column, one at a time, down to fitMinOther; then
		// from the row column, down to fitMinRow. The verdict column keeps its width.
		for _, rowToo := range []bool{false, true} {
			for used > budget {
				best := -1
				for i := range n - 1 {
					floor := fitMinOther
					if i == 0 {
						if !rowToo {
							continue
						}
						floor = min(natural[0], fitMinRow)
					}
					if w[i] > floor && (best < 0 || w[i] > w[best]) {
						best = i
					}
				}
				if best < 0 {
					break
				}
				w[best]--
				used--
			}
		}
		return w, true
	}
	// The row name first: it gets up to a third of the width, if it needs it.
	if grow := min(natural[0], budget/3) - w[0]; grow > 0 {
		grow = min(grow, budget-used)
		w[0] += grow
		used += grow
	}
	cols := make([][]string, n) // the cells of each column, heading first
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			cols[i] = append(cols[i], c)
		}
	}
	at := make([]map[int][]int, n) // at[i][x]: the lines of column i's cells at width x
	linesAt := func(i, x int) []int {
		if at[i] == nil {
			at[i] = map[int][]int{}
		}
		if l, ok := at[i][x]; ok {
			return l
		}
		at[i][x] = cellLines(cols[i], x)
		return at[i][x]
	}
	lines := make([][]int, n) // lines[i][j]: the lines of cell j of column i at width w[i]
	for i := range w {
		lines[i] = linesAt(i, w[i])
	}
	for used < budget {
		// The next columns of width go to the column where they save the most lines per
		// column given, looking up to maxLookahead columns ahead (a cell takes a line less
		// only when a whole word moves up, which one column at a time rarely shows): first
		// lines past a cell's cap, then of the table's height, then of all cells; on a tie
		// the leftmost.
		excess, height, all := tableHeight(lines, 0, lines[0])
		best, bestD := -1, 0
		var bestGain [3]float64
		for i := range w {
			for d := 1; d <= min(budget-used, natural[i]-w[i], maxLookahead); d++ {
				e, h, c := tableHeight(lines, i, linesAt(i, w[i]+d))
				if e == excess && h == height && c == all {
					continue
				}
				f := float64(d)
				gain := [3]float64{float64(excess-e) / f, float64(height-h) / f, float64(all-c) / f}
				if best < 0 || gain[0] > bestGain[0] || gain[0] == bestGain[0] && (gain[1] > bestGain[1] || gain[1] == bestGain[1] && gain[2] > bestGain[2]) {
					best, bestD, bestGain = i, d, gain
				}
			}
		}
		if best < 0 {
			// Nothing saves a line: the row column grows to its widest name, if it can.
			grow := min(budget-used, natural[0]-w[0])
			if grow <= 0 {
				break
			}
			best, bestD = 0, grow
		}
		w[best] += bestD
		used += bestD
		lines[best] = linesAt(best, w[best])
	}
	return w, true
}

// maxLookahead bounds how many columns of width fitWidths tries a column at before it gives
// up looking for a line it saves.
const maxLookahead = 40

// cellLines returns the lines each of cells takes wrapped to width.
func cellLines(cells []string, width int) []int {
	out := make([]int, len(cells))
	for j, c := range cells {
		out[j] = len(wrapText(c, width, ""))
	}
	return out
}

// tableHeight is the lines of a table whose cells take lines, with column i's replaced by
// instead: the lines cells take past their cap (two, three for a row name), the table's
// height, and the number of cell lines in all.
func tableHeight(lines [][]int, i int, instead []int) (excess, height, cells int) {
	for j := range instead {
		tallest := 0
		for k := range lines {
			l := lines[k][j]
			if k == i {
				l = instead[j]
			}
			tallest = max(tallest, l)
			cells += l
			excess += max(0, l-lineCap(k))
		}
		height += tallest
	}
	return excess, height, cells
}

// lineCap is the lines a cell of column i takes before its table counts as too tall: two,
// three for a row name.
func lineCap(i int) int {
	if i == 0 {
		return 3
	}
	return 2
}

// compactExpected is the expected cell without the outcome, which has its own column.
func compactExpected(r results.Row) string {
	s := ""
	if r.ExpectedMs != nil {
		s = formatMs(*r.ExpectedMs)
	}
	return withCounts(withStatus(s, r.ExpectedStatus), r.ExpectedExecutions, r.ExpectedExecutionsMax,
		r.ExpectedNewConnections, r.ExpectedNewConnectionsMax, r.NoPool)
}

// compactMeasured is the measured cell without the spread of repeated runs.
func compactMeasured(r results.Row) string {
	s := ""
	switch {
	case r.MeasuredMs != nil:
		s = oneDecimal(*r.MeasuredMs) + " ms"
	case r.Stats != nil:
		s = oneDecimal(r.Stats.MedianMs) + " ms"
	}
	return withCounts(withStatus(s, r.Status), r.ServerExecutions, nil, r.NewConnections, nil, r.NoPool)
}

// wrapRow wraps each cell to its column's width, lines joined by "\n" (tablewriter draws
// them as one row of several lines).
func wrapRow(cells []string, widths []int) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.Join(wrapText(c, widths[i], ""), "\n")
	}
	return out
}

// wrapText breaks s into lines of at most width runes at spaces, cutting a word longer than
// a line; lines after the first start with indent.
func wrapText(s string, width int, indent string) []string {
	if width <= 0 || textLen(s) <= width {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		limit := width
		if len(lines) > 0 {
			limit = width - textLen(indent)
		}
		switch {
		case line == "":
			line = word
		case textLen(line)+1+textLen(word) <= limit:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
			limit = width - textLen(indent)
		}
		for textLen(line) > max(limit, 1) {
			r := []rune(line)
			cut := limit
			// A word too long for a line breaks after a hyphen, slash, bracket or the like
			// when one is in reach, and only otherwise at the line's end.
			for k := limit; k > limit/2; k-- {
				if strings.ContainsRune("-/(=:,._", r[k-1]) {
					cut = k
					break
				}
			}
			lines = append(lines, string(r[:cut]))
			line = string(r[cut:])
			limit = width - textLen(indent)
		}
	}
	lines = append(lines, line)
	for i := 1; i < len(lines); i++ {
		lines[i] = indent + lines[i]
	}
	return lines
}

// textLen is the columns s takes: one per rune (the runes labrun prints have no double
// width, and tables count them so too, East Asian width being off).
func textLen(s string) int { return utf8.RuneCountInString(s) }

// fit wraps a line to the terminal's width, when one is known, and leaves it whole
// otherwise.
func (lk look) fit(s string) string {
	if lk.width <= 0 {
		return s
	}
	return strings.Join(wrapText(s, lk.width-1, "  "), "\n")
}

// termSafe shows the control characters of s (ESC, NUL, the C1 controls, the bidirectional
// overrides) as Go escapes ("\x1b", "\u202e"): text from a saved run must not drive the
// terminal it is printed on.
func termSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r != utf8.RuneError && unsafeRune(r) {
			b.WriteString(strings.Trim(strconv.QuoteRune(r), "'"))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafeRune is a control character, or utf8.RuneError, which stands for a byte that is no
// UTF-8 (written back as U+FFFD, not as the byte).
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError
}

// writeDefaultsCompact writes each client as a block of labelled lines, which fits any
// width: the full table is as wide as its longest source.
func writeDefaultsCompact(buf *bytes.Buffer, rows []results.ClientDefaults, width int) {
	buf.WriteString(strings.Join(wrapText(defaultsTitle, width-1, "  "), "\n") + "\n")
	labels := defaultsColumns[2:]
	for _, c := range rows {
		cells := defaultsCells(c)
		buf.WriteString("\n" + strings.Join(wrapText(cells[0]+" (--defaults "+cells[1]+")", width-1, "  "), "\n") + "\n")
		for i, label := range labels {
			prefix := fmt.Sprintf("  %-11s ", label)
			lines := wrapText(oneLine(cells[i+2]), width-1-textLen(prefix), "")
			for k, line := range lines {
				if k == 0 {
					buf.WriteString(prefix + line + "\n")
				} else {
					buf.WriteString(strings.Repeat(" ", textLen(prefix)) + line + "\n")
				}
			}
		}
	}
	buf.WriteString("\n" + strings.Join(wrapText(defaultsFooter, width-1, "  "), "\n") + "\n")
}

// widest returns the columns of the longest line of s.
func widest(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		n = max(n, textLen(line))
	}
	return n
}
