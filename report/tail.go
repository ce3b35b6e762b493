package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"github.com/labrun/labrun/results"
)

// tailDoc is the tail question's answer as a document: a fact a line.
type tailDoc results.TailPrediction

func (tailDoc) what() string              { return "tail" }
func (d tailDoc) jsonValue() any          { return results.TailPrediction(d) }
func (tailDoc) junit(*bytes.Buffer) error { return errJUnitRunsOnly }
func (d tailDoc) table(buf *bytes.Buffer, _ look) error {
	facts, w := d.facts(), 0
	for _, f := range facts {
		w = max(w, len(f[0]))
	}
	for _, f := range facts {
		fmt.Fprintf(buf, "%-*s  %s\n", w, f[0], f[1])
	}
	return nil
}
func (d tailDoc) markdown(buf *bytes.Buffer, _ look) error {
	buf.WriteString("| what | value |\n|---|---|\n")
	for _, f := range d.facts() {
		fmt.Fprintf(buf, "| %s | %s |\n", f[0], f[1])
	}
	return nil
}
func (d tailDoc) csv(buf *bytes.Buffer) error {
	w := csv.NewWriter(buf)
	_ = w.Write([]string{"what", "value"})
	for _, f := range d.facts() {
		_ = w.Write(f[:])
	}
	w.Flush()
	return w.Error()
}

// facts are the answer's lines, each a name and its value.
func (d tailDoc) facts() [][2]string {
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	if d.Dist != "" {
		add("distribution", d.Dist)
		var qs []string
		for _, q := range d.Quantiles {
			qs = append(qs, fmt.Sprintf("p%s %s ms", strconv.FormatFloat(q.P*100, 'g', -1, 64), ms1(q.Ms)))
		}
		add("its quantiles", strings.Join(qs, ", "))
	}
	add("attempts timed out", pct(d.TimedOut))
	add("calls failed", pct(d.Failed))
	if d.DeadlineEnded > 0 {
		add("calls the deadline ends", pct(d.DeadlineEnded))
	}
	add("requests per call", strconv.FormatFloat(d.Executions, 'f', 4, 64))
	add("caller's p50", msOrNever(d.P50Ms))
	add("caller's p99", msOrNever(d.P99Ms))
	if h := d.Hedge; h != nil {
		add(fmt.Sprintf("hedged at %s ms: p99", ms1(h.AfterMs)), msOrNever(h.P99Ms))
		add("hedged: requests per call", strconv.FormatFloat(h.Executions, 'f', 4, 64))
	}
	span := fmt.Sprintf("requests 1-%d of seed %d", d.Requests, d.Seed)
	if d.Failing != nil {
		add(span+": fail", numbers(d.Failing))
	}
	if d.Slow != nil {
		add(span+": too slow", numbers(d.Slow))
	}
	return out
}

func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" }

func ms1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

func msOrNever(x *float64) string {
	if x == nil {
		return "never: more than that share of the calls never ends"
	}
	return ms1(*x) + " ms"
}

// numbers lists request numbers with their count: "3 (3, 5, 12)".
func numbers(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	if len(ns) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d: %s", len(ns), strings.Join(parts, " "))
}
