package report

import (
	"bytes"
	"io"

	"github.com/labrun/labrun/results"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

const defaultsTitle = "client defaults · none of them is production-ready"

const defaultsFooter = "use one as a starting point: labrun predict --defaults NAME"

// defaultsColumns are the table and Markdown headings, in defaultsCells' order.
var defaultsColumns = []string{"client", "preset", "lease wait", "connect", "read", "pool", "whole call", "reuse", "re-send",
	"TLS handshake", "lookup", "source"}

// defaultsCSVColumns are results.ClientDefaults' JSON tags, in field order.
var defaultsCSVColumns = []string{"name", "client", "lease", "connect", "read", "pool", "call", "source", "reuse", "resend", "handshake", "lookup"}

// defaultsJSON is the JSON form, an object so fields can be added.
type defaultsJSON struct {
	Clients []results.ClientDefaults `json:"clients"`
}

// WriteDefaults renders the libraries' default limits (labrun defaults) in format f to w, a
// client per row in order. The table form is a title, a bordered table whose cells are never
// wrapped when it is under 120 columns, else a card per client wrapped to 120 (Render fits
// either to a terminal's width), and a footer; Markdown the same under a heading; JSON {"clients": [...]}, never
// null; CSV a header of the JSON tags and a line per client. Empty values show as "—" in table
// and Markdown. Nothing is written when rendering fails.
func WriteDefaults(w io.Writer, f Format, rows []results.ClientDefaults) error {
	return render(w, Options{Format: f}, defaultsDoc(rows))
}

func defaultsCells(c results.ClientDefaults) []string {
	return []string{
		orDash(c.Client), orDash(c.Name), orDash(c.Lease), orDash(c.Connect),
		orDash(c.Read), orDash(c.Pool), orDash(c.Call), orDash(c.Reuse), orDash(c.Resend),
		orDash(c.Handshake), orDash(c.Lookup), orDash(c.Source),
	}
}

// writeDefaultsTable renders with newTable, which neither wraps nor truncates.
func writeDefaultsTable(buf *bytes.Buffer, rows []results.ClientDefaults) error {
	buf.WriteString(defaultsTitle + "\n")
	t := newTable(buf)
	t.Header(defaultsColumns)
	for _, c := range rows {
		cs := defaultsCells(c)
		for i, s := range cs {
			cs[i] = oneLine(s)
		}
		if err := t.Append(cs); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	buf.WriteString(defaultsFooter + "\n")
	return nil
}

func writeDefaultsMarkdown(buf *bytes.Buffer, rows []results.ClientDefaults) {
	buf.WriteString("### Client defaults\n\n")

	var table [][]string
	for _, c := range rows {
		table = append(table, defaultsCells(c))
	}
	writeMarkdownTable(buf, defaultsColumns, table)

	buf.WriteString("\n" + defaultsFooter + "\n")
}

func writeDefaultsCSV(buf *bytes.Buffer, rows []results.ClientDefaults) error {
	lines := [][]string{defaultsCSVColumns}
	for _, c := range rows {
		lines = append(lines, []string{c.Name, c.Client, c.Lease, c.Connect, c.Read, c.Pool, c.Call, c.Source, c.Reuse, c.Resend,
			c.Handshake, c.Lookup})
	}
	return writeCSV(buf, lines)
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
