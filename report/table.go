package report

import (
	"bytes"
	"strings"

	"github.com/labrun/labrun/results"
)

// writeRunTable renders run for a terminal: heading, bordered table, footer, config and meta
// lines. At a known width the table fits it (writeRunFitted); otherwise every column is whole.
func writeRunTable(buf *bytes.Buffer, run results.Run, lk look) error {
	if lk.width > 0 {
		return writeRunFitted(buf, run, lk)
	}
	v := verdicterFor(run)
	buf.WriteString(termSafe(heading(run)) + "\n")
	g := fullGrid(run, v)
	g.draw(buf, g.naturalWidths(), "", func(j int, c string) string { return v.paint(lk, run.Rows[j], c) })
	buf.WriteString(v.paintFooter(lk, v.footer(run), run.Pass) + "\n")
	if c := configLine(run); c != "" {
		buf.WriteString(termSafe(c) + "\n")
	}
	if m := metaLine(run.Meta); m != "" {
		buf.WriteString(termSafe(m) + "\n")
	}
	return nil
}

// oneLine collapses white space, so a newline cannot split a table or Markdown row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
