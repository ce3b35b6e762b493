package report

import (
	"bytes"
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

// writeRunLines writes the footer, config and meta lines, wrapped to the width; under a fitted
// table, the footer said shorter.
func writeRunLines(buf *bytes.Buffer, run results.Run, lk look, v verdicter, fitted bool) {
	f := lk.fit(v.footer(run))
	if fitted && !v.analogy() {
		f = lk.fitParts(fittedFooter(run), "")
	}
	buf.WriteString(v.paintFooter(lk, f, run.Pass) + "\n")
	if c := configLine(run); c != "" {
		buf.WriteString(lk.fit(termSafe(c)) + "\n")
	}
	if m := metaLine(run.Meta); m != "" {
		buf.WriteString(lk.fitParts(strings.Split(termSafe(m), " · "), "  ") + "\n")
	}
}

func termCells(cs []string) []string {
	for i, c := range cs {
		cs[i] = termSafe(oneLine(c))
	}
	return cs
}

// fitWidths chooses column widths for a table fitting width (borders and padding take 3 a
// column and 1; the last terminal column stays free, as some terminals wrap there). Each column
// first gets its longest word, the row column up to a third, the verdict its longest cell; the
// rest goes where it saves most lines. ok is false when the longest words do not fit; with
// cut, columns then shrink to fitMinOther and ok is true.
// at caches each column's cell lines at each width tried, for calls over the same rows.
func fitWidths(header []string, rows [][]string, width int, cut bool, at lineCache) ([]int, bool) {
	n := len(header)
	natural := make([]int, n)
	word := make([]int, n)
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			natural[i] = max(natural[i], textLen(c))
			lead := len(c) - len(strings.TrimLeft(c, " "))
			for _, f := range strings.Fields(c) {
				word[i] = max(word[i], lead+textLen(f))
			}
		}
	}
	budget := width - 1 - (3*n + 1)
	w := make([]int, n)
	used := 0
	shrinks := n // the columns that may shrink: not the verdict
	if header[n-1] == verdictCol.name {
		shrinks = n - 1
	}
	for i := range w {
		switch {
		case i == 0:
			w[i] = min(natural[i], max(word[i], fitMinRow))
		case i == shrinks:
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
				for i := range shrinks {
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

// lineCache is column i's cell lines at width x: [i][x].
type lineCache map[int]map[int][]int

// maxLookahead bounds the widths fitWidths tries a column at for a saved line.
const maxLookahead = 40

func cellLines(cells []string, width int) []int {
	out := make([]int, len(cells))
	for j, c := range cells {
		out[j] = lineCount(c, width, "")
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

// lineCap is the lines a cell of column i may take.
func lineCap(int) int { return 2 }

func compactExpected(r results.Row) string {
	s := ""
	if r.ExpectedMs != nil {
		s = formatMs(*r.ExpectedMs) + band(r)
	}
	return withCounts(withStatus(s, r.ExpectedStatus), r.ExpectedExecutions, r.ExpectedExecutionsMax,
		r.ExpectedNewConnections, r.ExpectedNewConnectionsMax, r.NoPool)
}

// metExpected is compactExpected for a table that shows the measured cell: what the model
// and the measurement share is said once, there. Counts and status the measurement met leave
// the model's time; a cell with no time that equals the measured one is "same".
func metExpected(r results.Row) string {
	if r.ExpectedMs == nil {
		if e := compactExpected(r); e != compactMeasured(r) || e == dash {
			return e
		}
		return sameAsMeasured
	}
	st, exec, execMax, conns, connsMax := r.ExpectedStatus, r.ExpectedExecutions, r.ExpectedExecutionsMax,
		r.ExpectedNewConnections, r.ExpectedNewConnectionsMax
	if met(st, nil, r.Status) {
		st = nil
	}
	if met(exec, execMax, r.ServerExecutions) {
		exec, execMax = nil, nil
	}
	if met(conns, connsMax, r.NewConnections) {
		conns, connsMax = nil, nil
	}
	return withCounts(withStatus(formatMs(*r.ExpectedMs)+band(r), st), exec, execMax, conns, connsMax, r.NoPool)
}

// sameAsMeasured is an expected cell that says what the measured one beside it does.
const sameAsMeasured = "same"

// met reports whether an expected count (a range up to max when set) is exactly what was
// measured.
func met(want, max, got *int) bool {
	return want != nil && got != nil && *want == *got && (max == nil || *max == *want)
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

// wrapText breaks s into lines of at most width runes at spaces, cutting over-long words; lines
// after the first start with indent. Spaces that start s start every line.
func wrapText(s string, width int, indent string) []string {
	if width <= 0 || textLen(s) <= width {
		return []string{s}
	}
	if body := strings.TrimLeft(s, " "); body != s && width > len(s)-len(body) {
		lead := s[:len(s)-len(body)]
		lines := wrapText(body, width-len(lead), indent)
		for i := range lines {
			lines[i] = lead + lines[i]
		}
		return lines
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
			cut := max(limit, 1)
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

// lineCount is len(wrapText(s, width, indent)), without building the lines.
func lineCount(s string, width int, indent string) int {
	if width <= 0 || textLen(s) <= width || strings.HasPrefix(s, " ") {
		return len(wrapText(s, width, indent))
	}
	lines, cur, limit := 1, -1, width
	for _, word := range strings.Fields(s) {
		n := textLen(word)
		switch {
		case cur < 0:
			cur = n
		case cur+1+n <= limit:
			cur += 1 + n
		default:
			lines, cur, limit = lines+1, n, width-textLen(indent)
		}
		if cur > max(limit, 1) {
			return len(wrapText(s, width, indent)) // a word is cut
		}
	}
	return lines
}

// textLen counts one column per rune (labrun prints no double-width runes).
func textLen(s string) int { return utf8.RuneCountInString(s) }

// fitParts joins parts with " · " into lines of the terminal's width, breaking between parts
// rather than inside one where it can; lines after the first start with indent.
func (lk look) fitParts(parts []string, indent string) string {
	var lines []string
	cur := ""
	for _, p := range parts {
		switch {
		case cur == "":
			cur = p
		case lk.width <= 0 || textLen(cur)+3+textLen(p) < lk.width:
			cur += " · " + p
		default:
			lines = append(lines, lk.fit(cur))
			cur = indent + p
		}
	}
	return strings.Join(append(lines, lk.fit(cur)), "\n")
}

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
	lw := widestOf(labels)
	for _, c := range rows {
		cells := defaultsCells(c)
		buf.WriteString("\n" + strings.Join(wrapText(cells[0]+" (--defaults "+cells[1]+")", width-1, "  "), "\n") + "\n")
		for i, label := range labels {
			prefix := "  " + pad(label, lw) + " "
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
