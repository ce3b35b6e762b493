package report

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/labrun/labrun/results"
)

// The compact layout: a run's table for a terminal narrower than FullWidth. It keeps the
// columns a reader decides by (row, expected, measured, outcome, verdict), wraps long cells
// onto several lines instead of letting the terminal wrap whole rows, and moves what does not
// fit in a cell (a FAIL's reason, a warning) into numbered notes under the table. The server
// column and the repeat statistics are left out: --format markdown or json, or a wider
// terminal, shows them.

var compactColumns = []string{"row", "expected", "measured", "outcome", "verdict"}

// compactCaps are the widest the columns after the row's may be; the row column takes the
// rest of the width.
var compactCaps = []int{0, 22, 18, 24, 10}

const (
	compactMinRow   = 14 // the row column never gets narrower than this
	compactMinOther = 7  // nor any other
)

func writeRunCompact(buf *bytes.Buffer, run results.Run, lk look) error {
	buf.WriteString(lk.fit(heading(run)) + "\n")
	var rows [][]string
	var notes []string
	for _, r := range run.Rows {
		verdict := "pass"
		switch {
		case r.Skipped != "":
			notes = append(notes, "skipped: "+r.Skipped)
			verdict = fmt.Sprintf("skip [%d]", len(notes))
		case !r.Pass:
			notes = append(notes, "FAIL: "+orDash(r.Reason))
			verdict = fmt.Sprintf("FAIL [%d]", len(notes))
		case r.Warning != "":
			notes = append(notes, "warning: "+r.Warning)
			verdict = fmt.Sprintf("pass [%d]", len(notes))
		}
		rows = append(rows, []string{
			oneLine(orDash(r.Name)),
			oneLine(compactExpected(r)),
			oneLine(compactMeasured(r)),
			oneLine(outcomeCell(r)),
			verdict,
		})
	}
	widths := compactWidths(rows, lk.width)
	t := newTable(buf)
	t.Header(wrapRow(compactColumns, widths))
	for i, r := range rows {
		cells := wrapRow(r, widths)
		cells[4] = lk.verdict(run.Rows[i], cells[4])
		if err := t.Append(cells); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for i, n := range notes {
		for _, line := range wrapText(fmt.Sprintf("[%d] %s", i+1, oneLine(n)), lk.width-1, "    ") {
			buf.WriteString(line + "\n")
		}
	}
	for _, line := range wrapText(footer(run), lk.width-1, "  ") {
		buf.WriteString(line + "\n")
	}
	if c := configLine(run); c != "" {
		for _, line := range wrapText(c, lk.width-1, "  ") {
			buf.WriteString(line + "\n")
		}
	}
	if m := metaLine(run.Meta); m != "" {
		for _, line := range wrapText(m, lk.width-1, "  ") {
			buf.WriteString(line + "\n")
		}
	}
	return nil
}

// compactExpected is the expected cell without the outcome, which has its own column.
func compactExpected(r results.Row) string {
	s := ""
	if r.ExpectedMs != nil {
		s = formatMs(*r.ExpectedMs)
	}
	return withCounts(withStatus(s, r.ExpectedStatus), r.ExpectedExecutions, r.ExpectedNewConnections)
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
	return withCounts(withStatus(s, r.Status), r.ServerExecutions, r.NewConnections)
}

// compactWidths chooses the column widths for a table of five columns that fits width
// terminal columns (ASCII borders and one space of padding each side take 16), leaving the
// last terminal column free, as some terminals wrap when it is written.
func compactWidths(rows [][]string, width int) []int {
	natural := make([]int, len(compactColumns))
	word := make([]int, len(compactColumns)) // the longest word: a column narrower cuts it
	for i, h := range compactColumns {
		natural[i], word[i] = textLen(h), textLen(h)
	}
	for _, r := range rows {
		for i, c := range r {
			natural[i] = max(natural[i], textLen(c))
			for _, f := range strings.Fields(c) {
				word[i] = max(word[i], textLen(f))
			}
		}
	}
	budget := width - 1 - (3*len(compactColumns) + 1)
	w := make([]int, len(natural))
	others := 0
	for i := 1; i < len(w); i++ {
		w[i] = min(natural[i], compactCaps[i])
		others += w[i]
	}
	// Too narrow for the row column: take from the other column with the most room above
	// its floor, one at a time; first down to the longest word, then to compactMinOther.
	for _, floor := range [][]int{word, nil} {
		for budget-others < compactMinRow {
			best, room := 0, 0
			for i := 1; i < len(w); i++ {
				f := compactMinOther
				if floor != nil {
					f = max(f, min(floor[i], compactCaps[i]))
				}
				if w[i]-f > room {
					best, room = i, w[i]-f
				}
			}
			if best == 0 {
				break // nothing left to take at this floor
			}
			w[best]--
			others--
		}
	}
	w[0] = max(min(natural[0], budget-others), compactMinRow)
	return w
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
		}
		for textLen(line) > max(limit, 1) {
			r := []rune(line)
			lines = append(lines, string(r[:limit]))
			line = string(r[limit:])
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

// fit cuts nothing: it wraps a line to the terminal's width in the compact layout, and
// leaves it whole otherwise.
func (lk look) fit(s string) string {
	if !lk.compact() {
		return s
	}
	return strings.Join(wrapText(s, lk.width-1, "  "), "\n")
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
