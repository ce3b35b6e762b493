// Package report renders experiment results (results.Run, results.Suite) for people and
// programs: a bordered terminal table, a GitHub Markdown table, JSON or CSV, and a run's
// measured calls as an SVG timeline (WriteSVG).
//
// Every writer renders the whole document into memory first and writes it to w in one call,
// so an error never leaves half a report behind. Rendering is deterministic: the same run
// gives the same bytes whatever the terminal, locale or environment, which is what lets the
// golden files in testdata pin the output down.
package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/results"
)

// Format names an output format.
type Format string

// The output formats. FormatTable is meant for a terminal, FormatMarkdown for pasting into
// documentation and issues, FormatJSON for programs (its field names are the JSON tags of
// the results types), FormatCSV for spreadsheets and data frames (one line per row, its
// column names are the JSON tags too).
const (
	FormatTable    Format = "table"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
	FormatCSV      Format = "csv"
	// FormatJUnit is JUnit XML for CI systems: one testsuite per experiment, one testcase
	// per row. It applies to runs only.
	FormatJUnit Format = "junit"
)

// Formats lists the formats in the order help text shows them.
func Formats() []Format {
	return []Format{FormatTable, FormatJSON, FormatMarkdown, FormatCSV, FormatJUnit}
}

// ParseFormat validates a --format value. It accepts the names Formats lists, and "md" for
// markdown.
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

// unknownFormat says which formats exist, in the words help text would use:
// unknown format "xml" (want table, json, markdown or csv).
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
	return fmt.Errorf("unknown format %q (want %s)", s, want)
}

// WriteRun renders one experiment run in format f and writes it to w.
//
// In table and markdown form a run with Meta ends with a line saying where and how it was
// made, and a repeated run (Meta.Repeat above 1) with a recap, as a suite's. The CSV form is a header line and one line per row (see WriteSuite).
//
// Nothing is written when rendering fails, for example for an unknown format or a time that
// JSON or CSV cannot represent (NaN, ±Inf).
func WriteRun(w io.Writer, f Format, run results.Run) error {
	return render(w, Options{Format: f}, runDoc(run))
}

// WriteSuite renders several runs (labrun all) in format f and writes them to w.
//
// In table and markdown form the runs follow one another, separated by blank lines, then a
// recap (one line per experiment: rows, time, verdict; then every row that failed or was
// inconclusive, with its reason), and a last line sums up the suite: "all: 2/3 experiments pass, failed: exp-b", preceded by the
// suite's Meta line when it has one. In JSON form it is the results.Suite object. In CSV form
// it is one header line, then the rows of every experiment, each line naming its experiment
// in the first column; a value that does not apply is an empty cell. As with WriteRun,
// nothing is written when rendering fails.
func WriteSuite(w io.Writer, f Format, s results.Suite) error {
	return render(w, Options{Format: f}, suiteDoc(s))
}

// writeSuiteText writes the table or markdown form of a suite: the runs one after another,
// separated by blank lines, the Meta line, and the summary line. The markdown form starts
// with a heading and the summary.
func writeSuiteText(buf *bytes.Buffer, s results.Suite, lk look, markdown bool) error {
	return writeSuite(buf, s, lk, markdown, false)
}

// writeReport writes REPORT.md of an --out directory: the suite's markdown form with each
// run followed by its SVG timeline, EXPERIMENT.svg beside the file.
func writeReport(buf *bytes.Buffer, s results.Suite) error {
	return writeSuite(buf, s, look{}, true, true)
}

// writeSuite is writeSuiteText, with the runs' timelines embedded when images is set.
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
		buf.WriteString(lk.fit(safe(m)) + "\n")
		if markdown {
			buf.WriteString("\n") // its own paragraph, not run into the summary
		}
	}
	summary, pass := suiteSummary(s)
	buf.WriteString(lk.summary(lk.fit(safe(summary)), pass) + "\n")
	return nil
}

func flush(w io.Writer, buf *bytes.Buffer) error {
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// writeJSON writes v indented by two spaces with a trailing newline, the layout of
// json.MarshalIndent(v, "", "  "). It uses an Encoder only to switch off HTML escaping:
// MarshalIndent would print a server note such as "held -> reset" as "held \u003e reset",
// which helps no JSON consumer and hurts anyone reading the file.
func writeJSON(buf *bytes.Buffer, v any) error {
	b, err := encodeJSON(v, "", 0)
	buf.Write(b)
	return err
}

// suiteSummary is the last line of a suite in table and markdown form, and whether every
// experiment passed.
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

// Retry says what to try when the machine's noise left rows inconclusive.
const Retry = "try --serial, --repeat 3, or a quieter machine"

// columns are the table and markdown column headings, in order; cells returns a row's
// texts in the same order.
var columns = []string{"row", "calls", "documented", "expected", "measured", "outcome", "server", "verdict"}

// dash stands for "no value" in a cell.
const dash = "—"

func callsCell(r results.Row) string {
	s := strconv.Itoa(r.Calls)
	if r.Calls != r.ExpectedCalls {
		s += fmt.Sprintf(" (want %d)", r.ExpectedCalls)
	}
	return s
}

// expectedCell joins the expected time and outcome ("1500 ms deadline") and appends the
// expected server executions (", 2 exec"), showing only the parts the row has.
func expectedCell(r results.Row) string {
	var parts []string
	if r.ExpectedMs != nil {
		parts = append(parts, formatMs(*r.ExpectedMs))
		if r.ToleranceMs != nil {
			parts[len(parts)-1] += " ±" + strings.TrimSuffix(formatMs(*r.ToleranceMs), " ms")
		}
	}
	if r.ExpectedOutcome != "" {
		parts = append(parts, string(r.ExpectedOutcome))
	}
	return withCounts(withStatus(strings.Join(parts, " "), r.ExpectedStatus), r.ExpectedExecutions, r.ExpectedExecutionsMax,
		r.ExpectedNewConnections, r.ExpectedNewConnectionsMax, r.NoPool)
}

// measuredCell shows the measured time always with one decimal, so that a reader sees the
// measurement's resolution, plus the server executions when the row counts them. A time
// measured over several runs is their median, followed by the spread:
// "4000.4 ms (n=5, 3999.8..4001.2, sd 0.5)".
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

// spread is the part of a measured cell that describes repeated runs:
// "(n=5, 3999.8..4001.2, sd 0.5)", times in ms with one decimal like the median before it.
func spread(st results.Stats) string {
	return fmt.Sprintf("(n=%d, %s..%s, sd %s)", st.N, oneDecimal(st.MinMs), oneDecimal(st.MaxMs), oneDecimal(st.StddevMs))
}

func oneDecimal(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// withStatus appends a status other than 200 ("HTTP 503") to s.
func withStatus(s string, status *int) string {
	if status == nil || *status == 200 {
		return s
	}
	if s == "" {
		return fmt.Sprintf("HTTP %d", *status)
	}
	return fmt.Sprintf("%s, HTTP %d", s, *status)
}

// withCounts appends the counts a row has to s: server executions ("2 exec") and new
// connections ("pooled conn", "new conn", "3 new conns"; "no connection" for none when the
// client had no pool to use).
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
		// Not measured here: what the model expects is in the expected column.
		return "not measured"
	}
	s := orDash(string(r.Outcome))
	if r.Outcome != r.ExpectedOutcome {
		s += " (want " + orDash(string(r.ExpectedOutcome)) + ")"
	}
	return s
}

// verdictCell is "pass", "pass (warning: ...)" for a pass that rests on noisy samples,
// "inconclusive: reason; why the noise explains it", or "FAIL: reason".
func verdictCell(r results.Row) string {
	switch {
	case r.Skipped != "":
		return "skipped: " + r.Skipped
	case r.Pass && r.Warning != "":
		return "pass (warning: " + r.Warning + ")"
	case r.Pass:
		return "pass"
	case r.Inconclusive != "":
		return "inconclusive: " + r.Reason + "; " + r.Inconclusive
	case r.Reason == "":
		return "FAIL"
	default:
		return "FAIL: " + r.Reason
	}
}

// formatMs formats a model or tolerance time: integral values without decimals ("4000 ms"),
// others with one ("924.6 ms"), since model values are mostly round numbers.
func formatMs(v float64) string {
	if v == math.Trunc(v) && !math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
}

// footer is the line under a run's table: the verdict rule, the row count and the verdict.
// Skipped rows (not measured here) are counted apart, never as passes.
func footer(run results.Run) string {
	t := run.Tally()
	skipped := ""
	if t.Skipped > 0 {
		skipped = fmt.Sprintf(" · %d skipped", t.Skipped)
	}
	if t.Inconclusive > 0 {
		skipped += fmt.Sprintf(" · %d inconclusive", t.Inconclusive)
	}
	noise := ""
	if run.Noise != nil {
		noise = " (" + run.Noise.Text() + ")"
	}
	return fmt.Sprintf("tolerance ±%s on times%s; outcomes and counts must match exactly · %d/%d rows pass%s · %s",
		formatMs(run.ToleranceMs), noise, t.Passed, len(run.Rows), skipped, runVerdict(run))
}

// runVerdict is a run's verdict word: PASS, FAIL (a row failed), or INCONCLUSIVE (no row
// failed, but the machine's noise explains a row's miss).
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

// configLine lists the run's parameters in order ("config: read-timeout=1s deadline=1.5s"),
// or returns "" when there are none. Values that are empty or contain spaces or quotes are
// quoted, so that the line can be read back unambiguously.
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

// metaLine says where and how a run or suite was made, or returns "" for no Meta:
// "labrun v0.4.0 · go1.26.0 linux/amd64 · 8 CPUs · 2025-03-01T14:30:00Z · tolerance ±100 ms ·
// repeat 5 (+1 warm-up)". Parts the Meta does not know (an empty Go version, no CPU count, a
// zero start, no repeat count) are left out; the labrun version shows as "—" when unknown,
// so that the line always starts with "labrun".
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

// heading is the first line of a run: "exp-a · trickle vs read timeout".
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
