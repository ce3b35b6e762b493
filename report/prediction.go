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

// barWidth is the cells of an attempt's bar; all bars of a prediction share one time scale.
const barWidth = 60

const legend = "legend: l lease  c connect  w wait for first byte  b body  ! ended by a limit or the kernel  > never ends"

// WritePrediction renders a prediction (labrun predict) in format f to w. The table form has a
// row per attempt with a 60-cell ASCII bar on one time scale, the phases, a legend and a
// summary; Markdown the same with the bars in a code block; JSON the results.Prediction; CSV a
// line per phase, an empty cell for a time that never comes. Nothing is written when
// rendering fails (an unknown format, a time that is NaN, infinite or negative).
func WritePrediction(w io.Writer, f Format, p results.Prediction) error {
	return render(w, Options{Format: f}, predictionDoc(p))
}

// checkPrediction rejects the times a timeline cannot place (JSON needs no such check).
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

// writePredictionTable renders the terminal view; on a terminal of width columns (0: unknown)
// the bars narrow down to minBarWidth and text lines wrap under their indent.
func writePredictionTable(buf *bytes.Buffer, p results.Prediction, width int) {
	lk := look{width: width}
	buf.WriteString(lk.fit(predictionHeading(p)) + "\n")

	scale := timelineScale(p)
	rows := [][]string{{"attempt", "start", "end", "outcome", "timeline 0 .. " + predictMs(scale)}}
	for i, a := range p.Attempts {
		rows = append(rows, []string{
			strconv.Itoa(i + 1), predictMs(a.StartMs), endCell(a.EndMs), orDash(string(a.Outcome)), ""})
	}
	// Columns are padded to their widest cell plus two spaces, but the last (no trailing spaces).
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
		cells = min(barWidth, max(minBarWidth, width-1-used-2))
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

// fitLegend breaks the legend between entries into lines shorter than width (0: one line).
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

const minBarWidth = 20

// writeExplanation writes the model's reasoning one step a line (--explain), wrapped to width.
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

// writePredictionMarkdown renders a level-3 heading, the attempts' pipe table, the bars in a
// fenced code block (to keep a monospaced font) and the summary.
func writePredictionMarkdown(buf *bytes.Buffer, p results.Prediction) {
	buf.WriteString("### " + predictionHeading(p) + "\n\n")

	var rows [][]string
	for i, a := range p.Attempts {
		rows = append(rows, []string{
			strconv.Itoa(i + 1), predictMs(a.StartMs), endCell(a.EndMs), orDash(string(a.Outcome)), phasesText(a), orDash(a.Why),
		})
	}
	writeMarkdownTable(buf, []string{"attempt", "start", "end", "outcome", "phases", "why"}, rows)

	// The bars hold only "lcwb!> |", digits and spaces: a plain fence is safe.
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

// predictionHeading is "predict · read-timeout=300ms retries=1", or "predict".
func predictionHeading(p results.Prediction) string {
	if len(p.Scenario) == 0 {
		return "predict"
	}
	// configLine's quoting keeps the line readable back, as a run's config.
	params := strings.TrimPrefix(configLine(results.Run{Config: p.Scenario}), "config: ")
	return "predict · " + params
}

// predictionSummary is the last line: "total 601 ms · read-timeout · server executed the
// request 2 times", "never ends" for a hang, and a retry layer's jitter band when it has one.
func predictionSummary(p results.Prediction) string {
	total := "never ends"
	if p.TotalMs != nil {
		total = "total " + predictMs(*p.TotalMs)
		if p.TotalMaxMs != nil {
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

// phasesText lists an attempt's phases: "connect 1 ms, wait 300 ms". A lease of 0 ms is left
// out unless it is the only phase; "wait 0 ms" stays, as it says the first byte came at once.
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

func endCell(end *float64) string {
	if end == nil {
		return "never"
	}
	return predictMs(*end)
}

// predictMs is formatMs with a hint in seconds from 10 s ("127000 ms (127 s)"), as predictions
// reach a quarter of an hour.
func predictMs(v float64) string {
	s := formatMs(v)
	if v >= 10000 {
		s += " (" + strconv.FormatFloat(math.Round(v/100)/10, 'f', -1, 64) + " s)"
	}
	return s
}

// timelineScale is the time the bars span: the call's total, or, for a hang, 1.25 times the
// latest finite time (1 s when none).
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

// phaseChars are the phases' bar characters; others show as "?".
var phaseChars = map[string]byte{"lease": 'l', "connect": 'c', "wait": 'w', "body": 'b'}

// bar draws attempt a as width cells from 0 to scale ms; times round to cell boundaries so
// successive attempts tile the line. A phase that took time gets at least one cell, taken from
// the widest phase, and every attempt at least one. A failed attempt's last cell is "!"; one
// that never ends runs to the edge and ends in ">".
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

	// n[k] is phase k's cells, up to its rounded end clamped to the attempt; the last phase
	// ends with the attempt.
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
		// A single cell goes to the longest phase (the last of equals).
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

// longestPhase is the index of the longest phase (never-ending counts longest; the last of
// equals).
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
