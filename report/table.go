package report

import (
	"bytes"
	"strings"

	"github.com/labrun/labrun/results"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// writeRunTable renders run for a terminal: a heading line, an ASCII-bordered table, the
// footer line, the config line and the meta line. On a terminal of known width the table
// fits it (writeRunFitted); otherwise (a pipe, a file) it has every column, each as wide as
// its widest cell. Either way the control characters of the run's texts are escaped.
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

// newTable configures tablewriter for output that depends on nothing but the data:
//
//   - ASCII borders (+, -, |) rather than the default box-drawing characters, which some
//     terminals, fonts and log viewers mangle;
//   - headings as given: tablewriter would otherwise upper-case them ("ROW", "CALLS");
//   - everything left-aligned, headings included, so that a heading sits above its values;
//   - no maximum width, so cells never wrap or get truncated to fit a terminal;
//   - East Asian width off: tablewriter guesses it from LANG/LC_ALL/TERM, and with it on
//     the ambiguous-width runes we print ("—", "·", "±") count as two columns, which would
//     make the same run render differently on different machines. WithEastAsian sets a
//     global of tablewriter's (behind its own mutex); every table this package draws wants
//     the same value, so setting it on each table is safe.
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

// oneLine keeps a cell on one line and collapses runs of white space: a newline in a server
// note would otherwise split a table row over several lines, or end a markdown row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
