package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// barWidth is the number of cells in an attempt's timeline bar. Every bar of a prediction
// spans the same time, so the bars of successive attempts line up under one another.
const barWidth = 60

// legend explains the bar characters; it follows the bars in table and markdown form.
const legend = "legend: l lease  c connect  w wait for first byte  b body  ! ended by a limit or the kernel  > never ends"

// WritePrediction renders a prediction (labrun predict) in format f and writes it to w.
//
// The table form is a terminal view: one row per attempt with its start, end and outcome and
// a timeline bar of 60 ASCII cells, all bars on one time scale from 0 to the end of the
// call, then each attempt's phases, a legend and a summary line ("total 601 ms · read-timeout
// · server executed the request 2 times"). The markdown form holds the same under a level-3
// heading, with the bars in a fenced code block. The JSON form is the results.Prediction
// object. The CSV form has one line per phase: attempt (from 1), attempt_start_ms,
// attempt_end_ms, attempt_outcome, phase, phase_ms, with an empty cell for a time that never
// comes.
//
// As with WriteRun, nothing is written when rendering fails: for an unknown format, or (in
// table, markdown and CSV form) a time that is NaN, infinite or negative.
func WritePrediction(w io.Writer, f Format, p results.Prediction) error {
	return render(w, Options{Format: f}, predictionDoc(p))
}

// checkPrediction rejects the times a timeline cannot place. JSON needs no such check for
// NaN and ±Inf, which its encoder refuses anyway, and negative times encode faithfully.
func checkPrediction(p results.Prediction) error {
	check := func(what string, v *float64) error {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0) {
			return fmt.Errorf("%s is %v ms, want a finite time >= 0", what, *v)
		}
		if v != nil && *v > results.MaxMs {
			return fmt.Errorf("%s is %v ms, want at most %g ms (a year)", what, *v, results.MaxMs)
		}
		return nil
	}
	if err := check("total", p.TotalMs); err != nil {
		return err
	}
	if err := check("total with jitter", p.TotalMaxMs); err != nil {
		return err
	}
	for i, a := range p.Attempts {
		n := i + 1
		if err := check(fmt.Sprintf("attempt %d start", n), &a.StartMs); err != nil {
			return err
		}
		if err := check(fmt.Sprintf("attempt %d end", n), a.EndMs); err != nil {
			return err
		}
		for _, ph := range a.Phases {
			if err := check(fmt.Sprintf("attempt %d %s phase", n, string(ph.Phase)), ph.Ms); err != nil {
				return err
			}
		}
	}
	return nil
}

// writePredictionTable renders the terminal view: heading, attempt rows with their bars,
// the phases line, the legend and the summary.
//
// On a terminal of width columns (0: unknown, the full layout) no line is as wide as the
// terminal: the bars are narrower (down to minBarWidth cells) and the text lines wrap under
// their indent.
func writePredictionTable(buf *bytes.Buffer, p results.Prediction, width int) {
	lk := look{width: width}
	buf.WriteString(lk.fit(predictionHeading(p)) + "\n")

	scale := timelineScale(p)
	rows := [][]string{{"attempt", "start", "end", "outcome", "timeline 0 .. " + predictMs(scale)}}
	for i, a := range p.Attempts {
		rows = append(rows, []string{
			strconv.Itoa(i + 1), predictMs(a.StartMs), endCell(a.EndMs), orDash(string(a.Outcome)), ""})
	}
	// Columns are padded to their widest cell plus two spaces; the last column (the bars) is
	// not padded, so no line ends in spaces.
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c)+2)
		}
	}
	cells := barWidth
	if width > 0 {
		used := 0
		for _, w := range widths[:len(widths)-1] {
			used += w
		}
		cells = min(barWidth, max(minBarWidth, width-1-used-2)) // 2: the bar's "|" ends
	}
	for i, a := range p.Attempts {
		rows[i+1][len(widths)-1] = "|" + bar(a, scale, cells) + "|"
	}
	for _, row := range rows {
		last := len(row) - 1
		for i, c := range row[:last] {
			buf.WriteString(c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
		}
		buf.WriteString(row[last] + "\n")
	}

	if len(p.Attempts) > 0 {
		parts := make([]string, len(p.Attempts))
		for i, a := range p.Attempts {
			parts[i] = strconv.Itoa(i+1) + ": " + phasesText(a)
		}
		// Indented to the start column, so the line reads as a footnote to the rows.
		indent := strings.Repeat(" ", widths[0])
		note := func(s string) {
			lines := []string{s}
			if width > 0 {
				lines = wrapText(s, width-1-len(indent), "  ")
			}
			buf.WriteString(indent + strings.Join(lines, "\n"+indent) + "\n")
		}
		note("phases: " + strings.Join(parts, " · "))
		for i, a := range p.Attempts {
			if a.Why != "" {
				note("why " + strconv.Itoa(i+1) + ": " + oneLine(a.Why))
			}
		}
	}
	buf.WriteString(fitLegend(width) + "\n")
	buf.WriteString(lk.fit(predictionSummary(p)) + "\n")
}

// fitLegend is the legend on lines shorter than width (0: one line), broken between its
// entries, which keep their two-space gaps.
func fitLegend(width int) string {
	if width <= 0 || textLen(legend) < width {
		return legend
	}
	entries := strings.Split(legend, "  ")
	var lines []string
	line := entries[0]
	for _, e := range entries[1:] {
		if textLen(line)+2+textLen(e) < width {
			line += "  " + e
			continue
		}
		lines = append(lines, line)
		line = "  " + e
	}
	return strings.Join(append(lines, line), "\n")
}

// minBarWidth is the fewest cells of a bar on a narrow terminal.
const minBarWidth = 20

// writeExplanation writes the model's reasoning, one step a line (labrun predict --explain).
// On a terminal of width columns (0: unknown) each step wraps under its indent.
func writeExplanation(buf *bytes.Buffer, p results.Prediction, markdown bool, width int) {
	if len(p.Explanation) == 0 {
		return
	}
	if markdown {
		buf.WriteString("\n**Why**\n\n")
		for _, line := range p.Explanation {
			buf.WriteString("- " + markdownCell(strings.TrimSpace(line)) + "\n")
		}
		return
	}
	buf.WriteString("reasoning:\n")
	for _, line := range p.Explanation {
		lines := []string{line}
		if width > 0 {
			lines = wrapText(line, width-3, "    ")
		}
		buf.WriteString("  " + strings.Join(lines, "\n  ") + "\n")
	}
}

// writePredictionMarkdown renders a GitHub Markdown section: a level-3 heading, a pipe table
// of the attempts, the bars in a fenced code block (a pipe table would not keep them in a
// monospaced font) and the summary line.
func writePredictionMarkdown(buf *bytes.Buffer, p results.Prediction) {
	buf.WriteString("### " + predictionHeading(p) + "\n\n")

	var rows [][]string
	for i, a := range p.Attempts {
		rows = append(rows, []string{
			strconv.Itoa(i + 1), predictMs(a.StartMs), endCell(a.EndMs), orDash(string(a.Outcome)), phasesText(a), orDash(a.Why),
		})
	}
	writeMarkdownTable(buf, []string{"attempt", "start", "end", "outcome", "phases", "why"}, rows)

	// The bars hold only "lcwb!> |", digits and spaces, so a plain ``` fence is safe.
	scale := timelineScale(p)
	label := len("attempt  ")
	buf.WriteString("\n```\n")
	buf.WriteString("attempt  timeline 0 .. " + predictMs(scale) + "\n")
	for i, a := range p.Attempts {
		n := strconv.Itoa(i + 1)
		buf.WriteString(n + strings.Repeat(" ", max(label-len(n), 1)) + "|" + bar(a, scale, barWidth) + "|\n")
	}
	buf.WriteString(legend + "\n```\n\n")
	buf.WriteString(predictionSummary(p) + "\n")
}

// predictionHeading is the first line: "predict · read-timeout=300ms retries=1", or just
// "predict" with no scenario.
func predictionHeading(p results.Prediction) string {
	if len(p.Scenario) == 0 {
		return "predict"
	}
	// configLine quotes values the same way for a run's config; reusing it keeps the two
	// lines readable back alike. Only its "config: " prefix is not wanted here.
	params := strings.TrimPrefix(configLine(results.Run{Config: p.Scenario}), "config: ")
	return "predict · " + params
}

// predictionSummary is the last line: "total 601 ms · read-timeout · server executed the
// request 2 times", with "never ends" in place of the total when the call hangs, and the
// band of a retry layer's jitter after the total when it has one ("total 15000 ms (15 s) to
// 20000 ms (20 s) with jitter").
func predictionSummary(p results.Prediction) string {
	total := "never ends"
	if p.TotalMs != nil {
		total = "total " + predictMs(*p.TotalMs)
		if p.TotalMaxMs != nil {
			// A retry layer's jitter: the band from every random wait at its shortest to its longest.
			total += " to " + predictMs(*p.TotalMaxMs) + " with jitter"
		}
	}
	var exec string
	switch p.ServerExecutions {
	case 0:
		exec = "server never executed the request"
	case 1:
		exec = "server executed the request 1 time"
	default:
		exec = fmt.Sprintf("server executed the request %d times", p.ServerExecutions)
	}
	return total + " · " + orDash(p.Outcome) + " · " + exec
}

// phasesText lists an attempt's phases with their lengths: "connect 1 ms, wait 300 ms".
// A lease that took no time is left out (it only says a connection was free), unless it is
// the attempt's only phase; every other phase is shown, even at 0 ms, since "wait 0 ms"
// says the first byte came at once.
func phasesText(a results.Attempt) string {
	var parts []string
	for _, ph := range a.Phases {
		if ph.Phase == "lease" && ph.Ms != nil && *ph.Ms == 0 && len(a.Phases) > 1 {
			continue
		}
		length := "never ends"
		if ph.Ms != nil {
			length = predictMs(*ph.Ms)
		}
		parts = append(parts, orDash(string(ph.Phase))+" "+length)
	}
	return orDash(strings.Join(parts, ", "))
}

// endCell is an attempt's end, or "never" for an attempt that hangs.
func endCell(end *float64) string {
	if end == nil {
		return "never"
	}
	return predictMs(*end)
}

// predictMs is formatMs with a hint in seconds from 10 s on ("127000 ms (127 s)",
// "924600 ms (924.6 s)"): predictions span from a 1 ms connect to the kernel's quarter of an
// hour, and six-digit milliseconds are hard to read at a glance. The hint is rounded to a
// tenth of a second; the milliseconds stay exact.
func predictMs(v float64) string {
	s := formatMs(v)
	if v >= 10000 {
		s += " (" + strconv.FormatFloat(math.Round(v/100)/10, 'f', -1, 64) + " s)"
	}
	return s
}

// timelineScale is the time the bars span: the call's total, or for a call that hangs (or
// takes no time) 1.25 times the latest finite time in the prediction, which leaves room to
// show the hang running on, or 1 s when there is none.
func timelineScale(p results.Prediction) float64 {
	if p.TotalMs != nil && *p.TotalMs > 0 {
		return *p.TotalMs
	}
	var latest float64
	for _, a := range p.Attempts {
		t := a.StartMs
		latest = max(latest, t)
		if a.EndMs != nil {
			latest = max(latest, *a.EndMs)
		}
		for _, ph := range a.Phases {
			if ph.Ms == nil {
				break
			}
			t += *ph.Ms
			latest = max(latest, t)
		}
	}
	if latest > 0 {
		return latest * 1.25
	}
	return 1000
}

// phaseChars are the bar characters of the phases; a phase not listed shows as "?".
var phaseChars = map[string]byte{"lease": 'l', "connect": 'c', "wait": 'w', "body": 'b'}

// bar draws attempt a as width cells on a timeline from 0 to scale ms. Each cell shows the
// phase occupying it and cells outside the attempt are spaces. Times map to cell boundaries
// by rounding, so attempts that follow one another tile the line without overlap.
//
// Rounding alone would hide short phases, such as a 1 ms connect on a 601 ms line. So a phase
// that takes time but got no cell gets one, taken from the attempt's widest phase while that
// has more than one; the attempt keeps its length. An attempt that would get no cell at all
// gets one, so that every attempt shows. The last cell of an attempt that failed is "!"; an
// attempt that never ends runs to the right edge and ends in ">".
func bar(a results.Attempt, scale float64, width int) string {
	cells := bytes.Repeat([]byte{' '}, width)
	if width <= 0 || !(scale > 0) {
		return string(cells)
	}
	cell := func(t float64) int {
		if t >= scale {
			return width
		}
		return min(max(int(math.Round(t/scale*float64(width))), 0), width)
	}

	lo, hi := cell(a.StartMs), width
	if a.EndMs != nil {
		hi = max(cell(*a.EndMs), lo)
	}
	if hi == lo {
		lo = min(lo, width-1)
		hi = lo + 1
	}

	// n[k] is the number of cells of phase k: from the previous boundary to the rounded end
	// of the phase, clamped to the attempt; the last phase ends where the attempt ends, so the
	// attempt's cells are always filled even if its phases do not add up to its length.
	n := make([]int, len(a.Phases))
	t, prev := a.StartMs, lo
	for k, ph := range a.Phases {
		end := hi
		if k < len(a.Phases)-1 && ph.Ms != nil {
			t += *ph.Ms
			end = min(max(cell(t), prev), hi)
		}
		n[k] = end - prev
		prev = end
	}
	if hi-lo == 1 && len(a.Phases) > 0 {
		// A single cell goes to the phase that took longest (the last of equals: where the
		// attempt ended), rather than to whichever the rounding picked.
		clear(n)
		n[longestPhase(a.Phases)] = 1
	}
	for k, ph := range a.Phases {
		if n[k] > 0 || (ph.Ms != nil && *ph.Ms <= 0) {
			continue
		}
		widest := 0
		for j := range n {
			if n[j] > n[widest] {
				widest = j
			}
		}
		if n[widest] > 1 {
			n[widest]--
			n[k] = 1
		}
	}

	i := lo
	for k, ph := range a.Phases {
		c, ok := phaseChars[string(ph.Phase)]
		if !ok {
			c = '?'
		}
		for range n[k] {
			cells[i] = c
			i++
		}
	}
	switch {
	case a.EndMs == nil:
		cells[hi-1] = '>'
	case a.Outcome != vocab.OK:
		cells[hi-1] = '!'
	}
	return string(cells)
}

// longestPhase returns the index of the phase that took longest, a phase that never ends
// counting as longest; of equals it returns the last.
func longestPhase(phases []results.PhaseSpan) int {
	best := 0
	for k, ph := range phases {
		b := phases[best]
		switch {
		case ph.Ms == nil:
			best = k
		case b.Ms != nil && *ph.Ms >= *b.Ms:
			best = k
		}
	}
	return best
}
