package report

import (
	"bytes"
	"strings"

	"github.com/labrun/labrun/results"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// writeRunTable renders run for a terminal: heading, bordered table, footer, config and meta
// lines. At a known width the table fits it (writeRunFitted); otherwise every column is whole.
func writeRunTable(buf *bytes.Buffer, run results.Run, lk look) error {
	if lk.width > 0 {
		return writeRunFitted(buf, run, lk)
	}
	v := verdicterFor(run)
	buf.WriteString(termSafe(heading(run)) + "\n")
	t := newTable(buf)
	t.Header(columns)
	for _, r := range run.Rows {
		cs := termCells(v.cells(r))
		cs[len(cs)-1] = v.paint(lk, r, cs[len(cs)-1])
		if err := t.Append(cs); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	buf.WriteString(v.paintFooter(lk, v.footer(run), run.Pass) + "\n")
	if c := configLine(run); c != "" {
		buf.WriteString(termSafe(c) + "\n")
	}
	if m := metaLine(run.Meta); m != "" {
		buf.WriteString(termSafe(m) + "\n")
	}
	return nil
}

// newTable configures tablewriter for output that depends on the data alone: ASCII borders
// (box drawing gets mangled), headings as given, left-aligned, no maximum width, and East Asian
// width off (tablewriter guesses it from LANG and TERM, making "—" two columns on some machines;
// WithEastAsian sets a global, safe as every table wants the same).
func newTable(buf *bytes.Buffer) *tablewriter.Table {
	return tablewriter.NewTable(buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Symbols: tw.NewSymbols(tw.StyleASCII),
		})),
		tablewriter.WithEastAsian(tw.Off),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
}

// oneLine collapses white space, so a newline cannot split a table or Markdown row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
