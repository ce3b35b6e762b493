package report

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/labrun/labrun/results"
)

// writeRunMarkdown renders run as a GitHub Markdown section: a level-3 heading, a pipe
// table with the same cells as the terminal table, the footer line, the config line in
// backticks and the meta line.
//
// The pipe table is written by hand rather than with tablewriter's Markdown renderer, which
// does not escape "|" in cells and centres the columns; padding the columns to equal width
// keeps the source readable as plain text too.
func writeRunMarkdown(buf *bytes.Buffer, run results.Run) {
	buf.WriteString("### " + markdownText(heading(run)) + "\n\n")

	v := verdicterFor(run)
	var rows [][]string
	for _, r := range run.Rows {
		rows = append(rows, v.cells(r))
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

// writeTimelineLink embeds run's SVG timeline, EXPERIMENT.svg beside the Markdown file, as
// an image that links to the file.
func writeTimelineLink(buf *bytes.Buffer, run results.Run) {
	name := run.Experiment + ".svg" // a plain file name: OutFiles checks it
	buf.WriteString("\n[![" + markdownText(run.Experiment) + ": the measured calls on a timeline](" + name + ")](" + name + ")\n")
}

// writeMarkdownTable writes a pipe table of header and rows, escaping every cell and padding
// the columns to equal width.
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

// markdownCell escapes what would break a pipe-table cell: "|" ends the cell and a newline
// ends the row; and what markdownText escapes.
func markdownCell(s string) string {
	return strings.ReplaceAll(markdownText(oneLine(s)), "|", `\|`)
}

// entityStart is a "&" that may start an HTML character reference ("&lt;", "&#60;").
var entityStart = regexp.MustCompile(`&([#A-Za-z0-9])`)

// markdownText escapes the HTML in s, which a Markdown viewer would otherwise render (a
// saved run's texts are input): "<" always, "&" where it could start a character reference
// (a plain "a & b" stays readable in the source); and shows control characters as escapes,
// as the terminal table does.
func markdownText(s string) string {
	s = entityStart.ReplaceAllString(termSafe(s), "&amp;$1")
	return strings.ReplaceAll(s, "<", "&lt;")
}

// markdownCode wraps s in a code span, with a longer fence when s itself holds backticks.
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
