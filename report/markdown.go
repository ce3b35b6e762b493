package report

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/labrun/labrun/results"
)

// writeRunMarkdown renders run as a level-3 heading, a pipe table with the terminal table's
// cells, and the footer, config and meta lines. The table is written by hand: tablewriter's
// Markdown does not escape "|" and centres columns.
func writeRunMarkdown(buf *bytes.Buffer, run results.Run) {
	buf.WriteString("### " + markdownText(heading(run)) + "\n\n")

	v := verdicterFor(run)
	var cells [][]string
	for _, r := range run.Rows {
		cells = append(cells, v.cells(r))
	}
	// A group is a row of its own, its name in bold, the other cells empty.
	g := groupRows(cells)
	var rows [][]string
	for j, r := range g.rows {
		if g.groups[j] != "" {
			rows = append(rows, append([]string{"**" + strings.TrimSuffix(g.groups[j], ":") + ":**"}, make([]string, len(columns)-1)...))
		}
		rows = append(rows, r)
	}
	writeMarkdownTable(buf, columns, rows)

	buf.WriteString("\n" + v.footer(run) + "\n")
	if c := configLine(run); c != "" {
		buf.WriteString("\n" + markdownCode(termSafe(c)) + "\n")
	}
	if m := metaLine(run.Meta); m != "" {
		buf.WriteString("\n" + markdownText(m) + "\n")
	}
}

// writeTimelineLink embeds EXPERIMENT.svg as an image linking to the file.
func writeTimelineLink(buf *bytes.Buffer, run results.Run) {
	name := run.Experiment + ".svg" // OutFiles checked it
	buf.WriteString("\n[![" + markdownText(run.Experiment) + ": the measured calls on a timeline](" + name + ")](" + name + ")\n")
}

// writeMarkdownTable writes a pipe table, cells escaped, columns padded to equal width.
func writeMarkdownTable(buf *bytes.Buffer, header []string, rows [][]string) {
	table := [][]string{header}
	for _, r := range rows {
		cs := make([]string, len(r))
		for i, c := range r {
			cs[i] = markdownCell(c)
		}
		table = append(table, cs)
	}
	widths := make([]int, len(header))
	for _, row := range table {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c), 3)
		}
	}
	rule := make([]string, len(header))
	for i, w := range widths {
		rule[i] = strings.Repeat("-", w)
	}
	writeMarkdownRow(buf, table[0], widths)
	writeMarkdownRow(buf, rule, widths)
	for _, row := range table[1:] {
		writeMarkdownRow(buf, row, widths)
	}
}

func writeMarkdownRow(buf *bytes.Buffer, row []string, widths []int) {
	buf.WriteString("|")
	for i, c := range row {
		buf.WriteString(" " + c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)) + " |")
	}
	buf.WriteString("\n")
}

// markdownCell escapes "|" and newlines, and what markdownText escapes.
func markdownCell(s string) string {
	return strings.ReplaceAll(markdownText(oneLine(s)), "|", `\|`)
}

var entityStart = regexp.MustCompile(`&([#A-Za-z0-9])`)

// markdownText escapes the HTML a viewer would render (a saved run is input): "<" always, "&"
// where it could start a reference; control characters show as escapes.
func markdownText(s string) string {
	s = entityStart.ReplaceAllString(termSafe(s), "&amp;$1")
	return strings.ReplaceAll(s, "<", "&lt;")
}

// markdownCode wraps s in a code span, with a longer fence when s holds backticks.
func markdownCode(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
