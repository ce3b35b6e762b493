package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"

	"github.com/labrun/labrun/results"
)

// stormDoc is a retry storm's prediction as a document.
type stormDoc results.StormPrediction

func (stormDoc) what() string              { return "storm" }
func (d stormDoc) jsonValue() any          { return results.StormPrediction(d) }
func (stormDoc) junit(*bytes.Buffer) error { return errJUnitRunsOnly }
func (d stormDoc) table(buf *bytes.Buffer, _ look) error {
	d.write(buf, false)
	return nil
}
func (d stormDoc) markdown(buf *bytes.Buffer, _ look) error {
	d.write(buf, true)
	return nil
}

// write writes the phases as a table, then the storm's summary, a fact a line.
func (d stormDoc) write(buf *bytes.Buffer, markdown bool) {
	head := []string{"phase", "calls", "requests", "per call", "answered in time", "wasted"}
	rows := [][]string{}
	for _, p := range d.Phases {
		rows = append(rows, []string{p.Phase, strconv.Itoa(p.Calls), strconv.Itoa(p.Requests),
			strconv.FormatFloat(p.Amplification, 'f', 2, 64), strconv.Itoa(p.Good), strconv.Itoa(p.Wasted)})
	}
	title := "policy: " + d.Policy
	if d.Source != "" {
		title += " (" + d.Source + ")"
	}
	if markdown {
		fmt.Fprintf(buf, "**%s**\n\n| %s |\n|", title, joinCells(head, " | "))
		for range head {
			buf.WriteString("---|")
		}
		buf.WriteString("\n")
		for _, r := range rows {
			fmt.Fprintf(buf, "| %s |\n", joinCells(r, " | "))
		}
		buf.WriteString("\n")
	} else {
		fmt.Fprintln(buf, title)
		widths := make([]int, len(head))
		for _, r := range append([][]string{head}, rows...) {
			for i, c := range r {
				widths[i] = max(widths[i], len(c))
			}
		}
		for _, r := range append([][]string{head}, rows...) {
			for i, c := range r {
				if i > 0 {
					buf.WriteString("  ")
				}
				fmt.Fprintf(buf, "%-*s", widths[i], c)
			}
			buf.WriteString("\n")
		}
	}
	for _, line := range d.summary() {
		if markdown {
			buf.WriteString("- ")
		}
		buf.WriteString(line + "\n")
	}
}

func joinCells(cells []string, sep string) string {
	var b bytes.Buffer
	for i, c := range cells {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(c)
	}
	return b.String()
}

// summary is the storm's facts after the table.
func (d stormDoc) summary() []string {
	var out []string
	if d.RecoveredAfterMs != nil {
		out = append(out, fmt.Sprintf("recovered: every call answered at its first attempt %.0f ms after the pause", *d.RecoveredAfterMs))
	} else {
		out = append(out, "not recovered: calls still time out at the end of the window (a metastable failure)")
	}
	if d.DrainedAfterMs != nil {
		out = append(out, fmt.Sprintf("the pause's queue gone %.0f ms after it", *d.DrainedAfterMs))
	}
	out = append(out, fmt.Sprintf("retries sent %d, refused by the policy's bounds %d; work done for callers that had left %d; longest queue %d",
		d.Retries, d.Denied, d.Wasted, d.PeakQueue))
	if d.TipOverRate > 0 {
		out = append(out, fmt.Sprintf("tips over at %.0f calls/s: from that load on it does not recover", d.TipOverRate))
	} else {
		out = append(out, "recovers at every load up to the capacity")
	}
	return out
}

func (d stormDoc) csv(buf *bytes.Buffer) error {
	w := csv.NewWriter(buf)
	_ = w.Write([]string{"at_ms", "offered_per_s", "goodput_per_s", "queue"})
	for _, p := range d.Timeline {
		_ = w.Write([]string{strconv.FormatFloat(p.AtMs, 'f', -1, 64), strconv.FormatFloat(p.Offered, 'f', -1, 64),
			strconv.FormatFloat(p.Goodput, 'f', -1, 64), strconv.Itoa(p.Queue)})
	}
	w.Flush()
	return w.Error()
}
