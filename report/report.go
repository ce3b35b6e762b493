// Package report renders experiment results (results.Run, results.Suite) as a terminal table,
// Markdown, JSON, CSV, JUnit XML, and SVG timelines (WriteSVG; docs/reports.md).
//
// Every writer renders into memory and writes once, so an error never leaves half a report.
// Rendering is deterministic (no terminal, locale or environment), which the golden files pin.
package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/results"
)

// Format names an output format.
type Format string

// The output formats. JSON field names and CSV columns are the results types' JSON tags.
const (
	FormatTable    Format = "table"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
	FormatCSV      Format = "csv"
	// FormatJUnit is JUnit XML for CI: a testsuite per experiment, a testcase per row. Runs only.
	FormatJUnit Format = "junit"
)

// Formats lists the formats in the order help text shows them.
func Formats() []Format {
	return []Format{FormatTable, FormatJSON, FormatMarkdown, FormatCSV, FormatJUnit}
}

// ParseFormat validates a --format value: the names Formats lists, and "md".
func ParseFormat(s string) (Format, error) {
	if s == "md" {
		return FormatMarkdown, nil
	}
	for _, f := range Formats() {
		if s == string(f) {
			return f, nil
		}
	}
	return "", unknownFormat(s)
}

// unknownFormat lists the formats in help's words.
func unknownFormat(s string) error {
	fs := Formats()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = string(f)
	}
	want := names[len(names)-1]
	if len(names) > 1 {
		want = strings.Join(names[:len(names)-1], ", ") + " or " + want
	}
	return fmt.Errorf("unknown format %q (want %s)", param.Cut(s), want)
}

// WriteRun renders one run in format f to w. In table and Markdown a run with Meta ends with
// its Meta line, and a repeated run with a recap. Nothing is written when rendering fails (an
// unknown format, a NaN or infinite time).
func WriteRun(w io.Writer, f Format, run results.Run) error {
	return render(w, Options{Format: f}, runDoc(run))
}

// WriteSuite renders several runs (labrun all) in format f to w: in table and Markdown the runs,
// a recap of experiments and failed or inconclusive rows, the Meta line and a summary line; in
// JSON the results.Suite; in CSV one header, then every row, naming its experiment first.
// Nothing is written when rendering fails.
func WriteSuite(w io.Writer, f Format, s results.Suite) error {
	return render(w, Options{Format: f}, suiteDoc(s))
}

// writeSuiteText writes the table or Markdown form of a suite.
func writeSuiteText(buf *bytes.Buffer, s results.Suite, lk look, markdown bool) error {
	return writeSuite(buf, s, lk, markdown, false)
}

// writeReport writes an --out directory's REPORT.md: the Markdown form with each run's
// EXPERIMENT.svg after it.
func writeReport(buf *bytes.Buffer, s results.Suite) error {
	return writeSuite(buf, s, look{}, true, true)
}

func writeSuite(buf *bytes.Buffer, s results.Suite, lk look, markdown, images bool) error {
	if markdown {
		summary, _ := suiteSummary(s)
		buf.WriteString("# labrun report\n\n" + markdownText(summary) + "\n\n")
	}
	for _, run := range s.Experiments {
		if markdown {
			writeRunMarkdown(buf, run)
			if images {
				writeTimelineLink(buf, run)
			}
		} else if err := writeRunTable(buf, run, lk); err != nil {
			return fmt.Errorf("%s: %w", orDash(run.Experiment), err)
		}
		buf.WriteString("\n")
	}
	writeSuiteEnd(buf, s, lk, markdown)
	return nil
}

// writeSuiteEnd writes what follows the runs in a suite's text forms: the recap, in the
// suite's order, the meta line and the summary.
func writeSuiteEnd(buf *bytes.Buffer, s results.Suite, lk look, markdown bool) {
	if markdown {
		writeRecapMarkdown(buf, s.Experiments)
	} else {
		writeRecapTable(buf, s.Experiments, lk)
	}
	buf.WriteString("\n")
	safe := termSafe
	if markdown {
		safe = markdownText
	}
	if m := metaLine(s.Meta); m != "" {
		buf.WriteString(lk.fitParts(strings.Split(safe(m), " · "), "  ") + "\n")
		if markdown {
			buf.WriteString("\n")
		}
	}
	summary, pass := suiteSummary(s)
	buf.WriteString(lk.summary(lk.fitParts(strings.Split(safe(summary), " · "), "  "), pass) + "\n")
}

func flush(w io.Writer, buf *bytes.Buffer) error {
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// writeJSON writes v as json.MarshalIndent(v, "", "  ") does, but without HTML escaping, which
// would print "held -> reset" as "held \u003e reset".
func writeJSON(buf *bytes.Buffer, v any) error {
	b, err := encodeJSON(v, "", 0)
	buf.Write(b)
	return err
}

// suiteSummary is a suite's last line, and whether every experiment passed.
func suiteSummary(s results.Suite) (string, bool) {
	var failed, unsure []string
	for _, run := range s.Experiments {
		switch runVerdict(run) {
		case "FAIL":
			failed = append(failed, orDash(run.Experiment))
		case "INCONCLUSIVE":
			unsure = append(unsure, orDash(run.Experiment))
		}
	}
	n := len(s.Experiments)
	line := fmt.Sprintf("all: %d/%d experiments pass", n-len(failed)-len(unsure), n)
	if len(failed) > 0 {
		line += ", failed: " + strings.Join(failed, ", ")
	}
	if len(unsure) > 0 {
		line += ", inconclusive: " + strings.Join(unsure, ", ") + " (the machine's noise explains their misses: " + Retry + ")"
	}
	var skipped []string
	for _, run := range s.Experiments {
		if k := run.Tally().Skipped; k > 0 {
			skipped = append(skipped, fmt.Sprintf("%s %d", orDash(run.Experiment), k))
		}
	}
	if len(skipped) > 0 {
		line += " · rows skipped (not measured here): " + strings.Join(skipped, ", ")
	}
	return line, len(failed)+len(unsure) == 0
}

// Retry says what to try when noise left rows inconclusive.
const Retry = "try --serial, --repeat 3, or a quieter machine"

// columns are the table's headings, in the order of cells.
var columns = []string{"row", "calls", "documented", "expected", "measured", "outcome", "server", "verdict"}

const dash = "—"

func callsCell(r results.Row) string {
	s := strconv.Itoa(r.Calls)
	if r.Calls != r.ExpectedCalls {
		s += fmt.Sprintf(" (want %d)", r.ExpectedCalls)
	}
	return s
}

// expectedCell joins expected time, outcome and executions ("1500 ms deadline, 2 exec").
func expectedCell(r results.Row) string {
	var parts []string
	if r.ExpectedMs != nil {
		parts = append(parts, formatMs(*r.ExpectedMs)+band(r))
		if r.ToleranceMs != nil && !r.Banded() {
			parts[len(parts)-1] += " ±" + strings.TrimSuffix(formatMs(*r.ToleranceMs), " ms")
		}
	}
	if r.ExpectedOutcome != "" {
		parts = append(parts, string(r.ExpectedOutcome))
	}
	return withCounts(withStatus(strings.Join(parts, " "), r.ExpectedStatus), r.ExpectedExecutions, r.ExpectedExecutionsMax,
		r.ExpectedNewConnections, r.ExpectedNewConnectionsMax, r.NoPool)
}

// measuredCell shows the measured time with one decimal (the resolution), executions, and for
// repeated runs the median and spread: "4000.4 ms (n=5, 3999.8..4001.2, sd 0.5)".
func measuredCell(r results.Row) string {
	s := ""
	if r.MeasuredMs != nil {
		s = oneDecimal(*r.MeasuredMs) + " ms"
	}
	if st := r.Stats; st != nil && st.N > 1 {
		if s == "" {
			s = oneDecimal(st.MedianMs) + " ms"
		}
		s += " " + spread(*st)
	}
	return withCounts(withStatus(s, r.Status), r.ServerExecutions, nil, r.NewConnections, nil, r.NoPool)
}

func spread(st results.Stats) string {
	return fmt.Sprintf("(n=%d, %s..%s, sd %s)", st.N, oneDecimal(st.MinMs), oneDecimal(st.MaxMs), oneDecimal(st.StddevMs))
}

// band is a banded row's band after its expected time: " (38.9..54.0)", else "".
func band(r results.Row) string {
	if !r.Banded() {
		return ""
	}
	return " (" + oneDecimal(*r.ExpectedMinMs) + ".." + oneDecimal(*r.ExpectedMaxMs) + ")"
}

func oneDecimal(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func withStatus(s string, status *int) string {
	if status == nil || *status == 200 {
		return s
	}
	if s == "" {
		return fmt.Sprintf("HTTP %d", *status)
	}
	return fmt.Sprintf("%s, HTTP %d", s, *status)
}

// withCounts appends executions ("2 exec") and new connections ("pooled conn", "3 new conns",
// "no connection" without a pool).
func withCounts(s string, exec, execMax, conns, connsMax *int, noPool bool) string {
	add := func(e string) {
		if s == "" {
			s = e
		} else {
			s += ", " + e
		}
	}
	if exec != nil {
		add(results.RangeText(exec, execMax) + " exec")
	}
	switch {
	case conns != nil && connsMax != nil && *connsMax != *conns:
		add(results.RangeText(conns, connsMax) + " new conns")
	case conns != nil:
		switch *conns {
		case 0:
			if noPool {
				add("no connection")
			} else {
				add("pooled conn")
			}
		case 1:
			add("new conn")
		default:
			add(fmt.Sprintf("%d new conns", *conns))
		}
	}
	return orDash(s)
}

func outcomeCell(r results.Row) string {
	if r.Skipped != "" {
		return "not measured"
	}
	s := orDash(string(r.Outcome))
	if r.Outcome != r.ExpectedOutcome {
		s += " (want " + orDash(string(r.ExpectedOutcome)) + ")"
	}
	return s
}

// verdictCell is "pass", "pass (warning: ...)", "inconclusive: ..." or "FAIL: reason".
func verdictCell(r results.Row) string {
	switch {
	case r.Skipped != "":
		return skippedWord + ": " + r.Skipped
	case r.Pass && r.Warning != "":
		return passWord + " (warning: " + r.Warning + ")"
	case r.Pass:
		return passWord
	case r.Inconclusive != "":
		return "inconclusive: " + r.Reason + "; " + r.Inconclusive
	case r.Reason == "":
		return "FAIL"
	default:
		return "FAIL: " + r.Reason
	}
}

// formatMs formats a model or tolerance time, integral values without decimals.
func formatMs(v float64) string {
	if v == math.Trunc(v) && !math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
}

// footer is the line under a run's table: rule, row counts (skipped apart) and verdict.
func footer(run results.Run) string {
	noise := ""
	if run.Noise != nil {
		noise = " (" + run.Noise.Text() + ")"
	}
	return fmt.Sprintf("tolerance ±%s on times%s; outcomes and counts must match exactly · %s",
		formatMs(run.ToleranceMs), noise, strings.Join(tally(run), " · "))
}

// fittedFooter is footer in parts and fewer words, for a fitted table: the tally first.
func fittedFooter(run results.Run) []string {
	parts := append(tally(run), "tolerance ±"+formatMs(run.ToleranceMs))
	if run.Noise != nil {
		parts = append(parts, run.Noise.Short())
	}
	return parts
}

// tally is "52/53 rows pass", "1 skipped", "PASS".
func tally(run results.Run) []string {
	t := run.Tally()
	parts := []string{fmt.Sprintf("%d/%d rows pass", t.Passed, len(run.Rows))}
	if t.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", t.Skipped))
	}
	if t.Inconclusive > 0 {
		parts = append(parts, fmt.Sprintf("%d inconclusive", t.Inconclusive))
	}
	return append(parts, runVerdict(run))
}

// runVerdict is PASS, FAIL, or INCONCLUSIVE (no failure, but noise explains a miss).
func runVerdict(run results.Run) string {
	t := run.Tally()
	switch {
	case t.Failed > 0:
		return "FAIL"
	case t.Inconclusive > 0:
		return "INCONCLUSIVE"
	}
	return "PASS"
}

// configLine lists the run's parameters ("config: read-timeout=1s deadline=1.5s"), quoting
// values that are empty or hold spaces or quotes; "" when none.
func configLine(run results.Run) string {
	if len(run.Config) == 0 {
		return ""
	}
	parts := make([]string, len(run.Config))
	for i, p := range run.Config {
		v := p.Value
		if v == "" || strings.ContainsAny(v, " \t\n\"'") {
			v = strconv.Quote(v)
		}
		parts[i] = p.Name + "=" + v
	}
	return "config: " + strings.Join(parts, " ")
}

// metaLine says where and how a run was made ("labrun v0.4.0 · go1.26.0 linux/amd64 · 8 CPUs ·
// ... · repeat 5 (+1 warm-up)"), leaving out what Meta does not know; "" for no Meta.
func metaLine(m *results.Meta) string {
	if m == nil {
		return ""
	}
	parts := []string{"labrun " + orDash(m.Labrun)}
	platform := m.OS
	if m.Arch != "" {
		platform += "/" + m.Arch
	}
	if g := strings.TrimSpace(m.GoVersion + " " + platform); g != "" {
		parts = append(parts, g)
	}
	switch {
	case m.CPUs == 1:
		parts = append(parts, "1 CPU")
	case m.CPUs > 1:
		parts = append(parts, fmt.Sprintf("%d CPUs", m.CPUs))
	}
	if !m.Start.IsZero() {
		parts = append(parts, m.Start.Format(time.RFC3339))
	}
	parts = append(parts, "tolerance ±"+formatMs(m.ToleranceMs))
	if m.Repeat > 0 {
		r := fmt.Sprintf("repeat %d", m.Repeat)
		switch {
		case m.Warmup == 1:
			r += " (+1 warm-up)"
		case m.Warmup > 1:
			r += fmt.Sprintf(" (+%d warm-ups)", m.Warmup)
		}
		parts = append(parts, r)
	}
	return strings.Join(parts, " · ")
}

func heading(run results.Run) string {
	if run.Title == "" {
		return orDash(run.Experiment)
	}
	return orDash(run.Experiment) + " · " + run.Title
}

func orDash[S ~string](s S) string {
	if s == "" {
		return dash
	}
	return string(s)
}
