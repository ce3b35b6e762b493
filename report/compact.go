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
	fitMinRow   = 16 // or its whole name when shorter
	fitMinOther = 7  // when even whole words do not fit
)

// writeRunLines writes the footer, config and meta lines, wrapped to the width.
func writeRunLines(buf *bytes.Buffer, run results.Run, lk look, v verdicter) {
	buf.WriteString(v.paintFooter(lk, lk.fit(v.footer(run)), run.Pass) + "\n")
	if c := configLine(run); c != "" {
		buf.WriteString(lk.fit(termSafe(c)) + "\n")
	}
	if m := metaLine(run.Meta); m != "" {
		buf.WriteString(lk.fit(termSafe(m)) + "\n")
	}
}

// drawTable draws header and rows wrapped to widths; paint colours row i's last cell.
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

func termCells(cs []string) []string {
	for i, c := range cs {
		cs[i] = termSafe(oneLine(c))
	}
	return cs
}

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

// fitWidths chooses column widths for a table fitting width (borders and padding take 3 a
// column and 1; the last terminal column stays free, as some terminals wrap there). Each column
// first gets its longest word, the row column up to a third; the rest goes where it saves most
// lines. ok is false when the longest words do not fit; with cut, columns then shrink to
// fitMinOther and ok is true.
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
			w[i] = natural[i]
		default:
			w[i] = word[i]
		}
		used += w[i]
	}
	if used > budget {
		if !cut {
			return nil, false
		}
		// Shrink the widest other column first, then the row column; the verdict keeps its width.
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
	if grow := min(natural[0], budget/3) - w[0]; grow > 0 {
		grow = min(grow, budget-used)
		w[0] += grow
		used += grow
	}
	cols := make([][]string, n)
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			cols[i] = append(cols[i], c)
		}
	}
	at := make([]map[int][]int, n) // at[i][x]: column i's cell lines at width x
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
	lines := make([][]int, n) // lines[i][j]: cell j of column i at w[i]
	for i := range w {
		lines[i] = linesAt(i, w[i])
	}
	for used < budget {
		// Each next column of width goes where it saves the most lines per column given, looking
		// up to maxLookahead ahead (a line is saved only when a whole word moves up): lines past a
		// cap first, then height, then all cell lines; ties go left.
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

// maxLookahead bounds the widths fitWidths tries a column at for a saved line.
const maxLookahead = 40

func cellLines(cells []string, width int) []int {
	out := make([]int, len(cells))
	for j, c := range cells {
		out[j] = len(wrapText(c, width, ""))
	}
	return out
}

// tableHeight counts, with column i's lines replaced by instead, the lines past their cap, the
// table's height and all cell lines.
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

// lineCap is the lines a cell of column i may take: two, three for a row name.
func lineCap(i int) int {
	if i == 0 {
		return 3
	}
	return 2
}

func compactExpected(r results.Row) string {
	s := ""
	if r.ExpectedMs != nil {
		s = formatMs(*r.ExpectedMs)
	}
	return withCounts(withStatus(s, r.ExpectedStatus), r.ExpectedExecutions, r.ExpectedExecutionsMax,
		r.ExpectedNewConnections, r.ExpectedNewConnectionsMax, r.NoPool)
}

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

// wrapRow wraps each cell to its width, lines joined by "\n" (one tablewriter row).
func wrapRow(cells []string, widths []int) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.Join(wrapText(c, widths[i], ""), "\n")
	}
	return out
}

// wrapText breaks s into lines of at most width runes at spaces, cutting over-long words; lines
// after the first start with indent.
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
			// An over-long word breaks after a hyphen, slash or bracket in reach, else at the line's end.
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

// textLen counts one column per rune (labrun prints no double-width runes).
func textLen(s string) int { return utf8.RuneCountInString(s) }

// fit wraps a line to the terminal's width, when known.
func (lk look) fit(s string) string {
	if lk.width <= 0 {
		return s
	}
	return strings.Join(wrapText(s, lk.width-1, "  "), "\n")
}

// termSafe shows control characters (ESC, NUL, C1, bidi overrides) as Go escapes: text from a
// saved run must not drive the terminal.
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

// unsafeRune is a control character or utf8.RuneError (a byte that is no UTF-8).
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError
}

// writeDefaultsCompact writes each client as a block of labelled lines, which fits any width.
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

func widest(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		n = max(n, textLen(line))
	}
	return n
}
