package report

import (
	"bytes"
	"io"

	"github.com/labrun/labrun/results"
)

// defaultsTitle is the first line of the table form (the markdown form has its own heading).
const defaultsTitle = "client defaults · none of them is production-ready"

// defaultsFooter closes the table and markdown forms: the defaults are where a
// configuration starts, not where it ends.
const defaultsFooter = "use one as a starting point: labrun predict --defaults NAME"

// defaultsColumns are the table and markdown column headings, in the order of defaultsCells.
// The client comes first, as in labrun defaults; the preset name follows it.
var defaultsColumns = []string{"client", "preset", "lease wait", "connect", "read", "pool", "whole call", "reuse", "re-send",
	"TLS handshake", "lookup", "source"}

// defaultsCSVColumns are the header of the CSV form: the JSON tags of
// results.ClientDefaults, in the struct's order.
var defaultsCSVColumns = []string{"name", "client", "lease", "connect", "read", "pool", "call", "source", "reuse", "resend", "handshake", "lookup"}

// defaultsJSON is the JSON form: {"clients": [...]}, an object rather than a bare array so
// that fields can be added later without breaking readers.
type defaultsJSON struct {
	Clients []results.ClientDefaults `json:"clients"`
}

// WriteDefaults renders the client libraries' default limits (labrun defaults) in format f
// and writes them to w, one client per row in the order given.
//
// The table form is a title line ("client defaults · none of them is production-ready"), an
// ASCII-bordered table with the columns client, preset, lease wait, connect, read, pool,
// whole call, reuse (how a pooled connection that died is found out, idle eviction), re-send
// (what the library sends again by itself), TLS handshake and lookup (what bounds each) and
// source, and a footer line pointing to labrun
// predict --defaults. Cells are never wrapped or truncated, whatever the terminal: a long
// source makes a wide table, but the same rows always give the same bytes (on a terminal
// narrower than the table, Render takes the compact layout instead). The markdown form holds
// the same table and footer under a "### Client defaults" heading. The JSON form is
// {"clients": [...]} with the JSON tags of results.ClientDefaults (an empty list for no rows,
// never null). The CSV form is a header line of those tags, in the struct's order, and one
// line per client.
//
// In table and markdown form an empty value shows as "—"; in JSON and CSV it stays empty.
// As with WriteRun, nothing is written when rendering fails, for example for an unknown
// format.
func WriteDefaults(w io.Writer, f Format, rows []results.ClientDefaults) error {
	return render(w, Options{Format: f}, defaultsDoc(rows))
}

// defaultsCells returns the texts of one client, in the order of defaultsColumns, shared by
// the table and markdown forms.
func defaultsCells(c results.ClientDefaults) []string {
	return []string{
		orDash(c.Client), orDash(c.Name), orDash(c.Lease), orDash(c.Connect),
		orDash(c.Read), orDash(c.Pool), orDash(c.Call), orDash(c.Reuse), orDash(c.Resend),
		orDash(c.Handshake), orDash(c.Lookup), orDash(c.Source),
	}
}

// writeDefaultsTable renders the terminal view with newTable, which neither wraps nor
// truncates and ignores the terminal and locale, so the output depends on the rows alone.
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

// writeDefaultsMarkdown renders a GitHub Markdown section: a level-3 heading, a pipe table
// padded like writeRunMarkdown's, and the footer line.
func writeDefaultsMarkdown(buf *bytes.Buffer, rows []results.ClientDefaults) {
	buf.WriteString("### Client defaults\n\n")

	var table [][]string
	for _, c := range rows {
		table = append(table, defaultsCells(c))
	}
	writeMarkdownTable(buf, defaultsColumns, table)

	buf.WriteString("\n" + defaultsFooter + "\n")
}

// writeDefaultsCSV writes the header and one line per client, values as given.
func writeDefaultsCSV(buf *bytes.Buffer, rows []results.ClientDefaults) error {
	lines := [][]string{defaultsCSVColumns}
	for _, c := range rows {
		lines = append(lines, []string{c.Name, c.Client, c.Lease, c.Connect, c.Read, c.Pool, c.Call, c.Source, c.Reuse, c.Resend,
			c.Handshake, c.Lookup})
	}
	return writeCSV(buf, lines)
}
