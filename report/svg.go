package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The timeline's geometry in px: a fixed width, so runs compare side by side.
const (
	svgWidth     = 960
	svgMargin    = 12
	svgRowHeight = 24
	svgBarHeight = 12
	svgTop       = 86 // below title, legend and headings
	svgGap       = 3  // between touching attempts
	svgMinPhase  = 2  // a phase that took time, at least

	svgLabelFont   = 12
	svgLabelMin    = 90 // label column bounds
	svgLabelMax    = 260
	svgOutcomeMin  = 80
	svgOutcomeMax  = 190
	svgColumnSpace = 10
	svgMaxTicks    = 10
)

// svgFont is the system sans-serif stack.
const svgFont = `system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif`

// Colours: the phases use four Okabe-Ito colours, which stay apart under common colour-vision
// deficiencies; the end marker is a dark red no phase uses.
const (
	svgMarkerColour  = "#c0392b"
	svgUnknownColour = "#999999"
	svgTextColour    = "#222222"
	svgMutedColour   = "#666666"
	svgGridColour    = "#dddddd"
	svgStripeColour  = "#f4f4f4"
	svgRowTimeColour = "#c8c8c8" // a row's time without phases
)

var svgPhases = []struct{ name, colour, legend string }{
	{"lease", "#cc79a7", "lease (wait for a connection)"},
	{"connect", "#e69f00", "connect"},
	{"wait", "#56b4e9", "wait for first byte"},
	{"body", "#0072b2", "body"},
}

// WriteSVG renders run.Calls as an SVG timeline to w (docs/reports.md): one line per call (or
// per table row, where calls are the rows), attempts as bars split into coloured phases on a
// shared time axis, a red marker on an attempt not ended "ok", an arrow for one that never
// ended, and an outcome column. Calls whose labels hold LaneSep are HTTP/2 streams, stacked in
// lanes. The output depends only on the run; nothing is written when rendering fails (a time
// that is NaN, infinite or negative).
func WriteSVG(w io.Writer, run results.Run) error {
	for i, c := range run.Calls {
		if err := checkPrediction(results.Prediction{Attempts: c.Attempts}); err != nil {
			return fmt.Errorf("render %s timeline: call %d (%s): %w", orDash(run.Experiment), i+1, callLabel(c, i), err)
		}
	}
	var buf bytes.Buffer
	writeSVG(&buf, run)
	return flush(w, &buf)
}

// callLabel is a call's label on one line, or "call N".
func callLabel(c results.Call, i int) string {
	if s := oneLine(c.Label); s != "" {
		return s
	}
	return "call " + strconv.Itoa(i+1)
}

// outcomeText lists a call's attempt outcomes: "read-timeout ×2", "lease-timeout → ok".
func outcomeText(c results.Call) string {
	var parts []string
	for i := 0; i < len(c.Attempts); {
		j := i
		for j < len(c.Attempts) && c.Attempts[j].Outcome == c.Attempts[i].Outcome {
			j++
		}
		s := orDash(oneLine(string(c.Attempts[i].Outcome)))
		if j-i > 1 {
			s += " ×" + strconv.Itoa(j-i)
		}
		parts = append(parts, s)
		i = j
	}
	return orDash(strings.Join(parts, " → "))
}

func writeSVG(buf *bytes.Buffer, run results.Run) {
	items := svgItems(run)
	l := layoutSVG(run, items)
	title := heading(run)

	fmt.Fprintf(buf, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	fmt.Fprintf(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%s\" viewBox=\"0 0 %d %s\" font-family=\"%s\" font-size=\"%d\" fill=\"%s\" role=\"img\">\n",
		svgWidth, px(l.height), svgWidth, px(l.height), xmlText(svgFont), svgLabelFont, svgTextColour)
	fmt.Fprintf(buf, "<title>%s</title>\n", xmlText(title))
	fmt.Fprintf(buf, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n")

	fmt.Fprintf(buf, "<text x=\"%d\" y=\"26\" font-size=\"16\" font-weight=\"bold\">%s</text>\n",
		svgMargin, xmlText(truncateText(title, svgWidth-2*svgMargin, 16*1.05)))
	writeSVGLegend(buf, run, items)

	fmt.Fprintf(buf, "<g font-size=\"11\" fill=\"%s\">\n", svgMutedColour)
	fmt.Fprintf(buf, "<text x=\"%s\" y=\"%d\" text-anchor=\"end\">%s</text>\n", px(l.labelRight), svgTop-6, columnHeading(items))
	fmt.Fprintf(buf, "<text x=\"%s\" y=\"%d\">outcome</text>\n", px(l.outcomeX), svgTop-6)
	buf.WriteString("</g>\n")

	// Stripes on every other row, for the eye to follow it.
	buf.WriteString("<g fill=\"" + svgStripeColour + "\">\n")
	for _, it := range items {
		if it.stripe {
			fmt.Fprintf(buf, "<rect x=\"%d\" y=\"%s\" width=\"%d\" height=\"%s\"/>\n",
				svgMargin/2, px(it.top), svgWidth-svgMargin, px(it.height))
		}
	}
	buf.WriteString("</g>\n")

	writeSVGAxis(buf, l, len(items) > 0)

	if len(items) == 0 {
		fmt.Fprintf(buf, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\" fill=\"%s\">no calls recorded</text>\n",
			px((l.plotLeft+l.plotRight)/2), px(svgTop+svgRowHeight/2+4), svgMutedColour)
	}
	for _, it := range items {
		switch it.kind {
		case svgItemCall:
			writeSVGCall(buf, l, run.Calls[it.calls[0]], it)
		case svgItemRow:
			writeSVGRow(buf, l, run.Rows[it.row], it)
		case svgItemLane:
			writeSVGLane(buf, l, run.Calls, it)
		case svgItemHeading:
			writeSVGHeading(buf, it)
		}
	}
	buf.WriteString("</svg>\n")
}

// columnHeading names the label column: "row", "call", "lane" or "call or lane".
func columnHeading(items []svgItem) string {
	calls, lanes := false, false
	for _, it := range items {
		if it.kind == svgItemRow {
			return "row"
		}
		calls = calls || it.kind == svgItemCall
		lanes = lanes || it.kind == svgItemLane
	}
	switch {
	case lanes && calls:
		return "call or lane"
	case lanes:
		return "lane"
	}
	return "call"
}

// writeSVGLegend draws the phase colours, end marker and arrow under the title, with "other
// phase" and "measured, no phases" swatches where needed.
func writeSVGLegend(buf *bytes.Buffer, run results.Run, items []svgItem) {
	calls := run.Calls
	const y = 50
	const font = 11
	x := float64(svgMargin)
	buf.WriteString("<g font-size=\"11\">\n")
	swatch := func(colour, text string) {
		fmt.Fprintf(buf, "<rect x=\"%s\" y=\"%d\" width=\"14\" height=\"10\" fill=\"%s\"/>\n", px(x), y-9, colour)
		fmt.Fprintf(buf, "<text x=\"%s\" y=\"%d\">%s</text>\n", px(x+19), y, xmlText(text))
		x += 19 + textWidth(text, font) + 16
	}
	for _, ph := range svgPhases {
		swatch(ph.colour, ph.legend)
	}
	if hasUnknownPhase(calls) {
		swatch(svgUnknownColour, "other phase")
	}
	if slices.ContainsFunc(items, func(it svgItem) bool { _, ok := rowBar(run, it); return ok }) {
		swatch(svgRowTimeColour, "measured, no phases")
	}
	marker(buf, x+4, y-9, 10)
	text := "ended by a timeout or error"
	fmt.Fprintf(buf, "<text x=\"%s\" y=\"%d\">%s</text>\n", px(x+13), y, xmlText(text))
	x += 13 + textWidth(text, font) + 16
	arrow(buf, x, y-9, 10, svgTextColour)
	fmt.Fprintf(buf, "<text x=\"%s\" y=\"%d\">never ended</text>\n", px(x+12), y)
	buf.WriteString("</g>\n")
}

func hasUnknownPhase(calls []results.Call) bool {
	for _, c := range calls {
		for _, a := range c.Attempts {
			for _, ph := range a.Phases {
				if phaseColour(string(ph.Phase)) == svgUnknownColour {
					return true
				}
			}
		}
	}
	return false
}

func phaseColour(phase string) string {
	for _, ph := range svgPhases {
		if ph.name == phase {
			return ph.colour
		}
	}
	return svgUnknownColour
}

// marker draws the end mark of an attempt not ended "ok", whose bar ends at x: a red tick and
// a triangle, within the row and never right of x.
func marker(buf *bytes.Buffer, x, y, h float64) {
	fmt.Fprintf(buf, "<g fill=\"%s\"><rect x=\"%s\" y=\"%s\" width=\"2\" height=\"%s\"/><path d=\"M%s %sh8l-4 5z\"/></g>\n",
		svgMarkerColour, px(x-2), px(y-3), px(h+6), px(x-5), px(y-8))
}

// arrow draws a right-pointing triangle, base at x, on a bar at y of height h.
func arrow(buf *bytes.Buffer, x, y, h float64, colour string) {
	fmt.Fprintf(buf, "<path d=\"M%s %sl8 %sl-8 %sz\" fill=\"%s\"/>\n",
		px(x), px(y-2), px(h/2+2), px(h/2+2), colour)
}

// writeSVGCall draws a call's line: label, attempts and outcome.
func writeSVGCall(buf *bytes.Buffer, l svgLayout, c results.Call, it svgItem) {
	barY := it.top + (it.height-svgBarHeight)/2
	mid := it.top + it.height/2

	fmt.Fprintf(buf, "<g>\n<title>%s</title>\n", xmlText(it.label+": "+it.outcome))
	svgTextLines(buf, l.labelRight, mid, it.labelLines, ` text-anchor="end"`)

	var marks []float64 // drawn after all bars so none hides one
	prevEnd := math.Inf(-1)
	for k, a := range c.Attempts {
		x0 := l.x(a.StartMs)
		if x0 < prevEnd+svgGap {
			x0 = prevEnd + svgGap
		}
		x0 = min(x0, l.plotRight-svgMinPhase)
		x1 := l.plotRight
		if a.EndMs != nil {
			x1 = l.x(*a.EndMs)
		}
		x1 = min(max(x1, x0+svgMinPhase), l.plotRight)
		prevEnd = x1

		fmt.Fprintf(buf, "<g shape-rendering=\"crispEdges\"><title>%s</title>\n", xmlText(attemptTitle(k, a)))
		for _, s := range phaseSpans(l, a, x0, x1) {
			fmt.Fprintf(buf, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%d\" fill=\"%s\"/>\n",
				px(s.x0), px(barY), px(s.x1-s.x0), svgBarHeight, s.colour)
		}
		buf.WriteString("</g>\n")
		switch {
		case a.EndMs == nil:
			arrow(buf, x1, barY, svgBarHeight, svgTextColour)
		case a.Outcome != vocab.OK:
			marks = append(marks, x1)
		}
	}
	for _, x := range marks {
		marker(buf, x, barY, svgBarHeight)
	}
	if it.executions != "" && prevEnd+8+textWidth(it.executions, 11) < l.outcomeX-8 {
		// The server's executions, where the bar leaves room.
		fmt.Fprintf(buf, "<text x=\"%s\" y=\"%s\" font-size=\"11\" fill=\"%s\">%s</text>\n",
			px(prevEnd+8), px(mid+4), svgMarkerColour, xmlText(it.executions))
	}
	writeSVGOutcome(buf, l, it)
	buf.WriteString("</g>\n")
}

// writeSVGOutcome writes an item's outcome, red for a timeout or an error.
func writeSVGOutcome(buf *bytes.Buffer, l svgLayout, it svgItem) {
	colour := svgMutedColour
	if it.alarm {
		colour = svgMarkerColour
	}
	svgTextLines(buf, l.outcomeX, it.top+it.height/2, it.outcomeLines, fmt.Sprintf(` font-size="%d" fill="%s"`, svgLabelFont-1, colour))
}

// rowTime is a row's measured time (the median with --repeat), when it has one.
func rowTime(r results.Row) (float64, bool) {
	switch {
	case r.Skipped != "":
		return 0, false
	case r.MeasuredMs != nil:
		return *r.MeasuredMs, true
	case r.Stats != nil:
		return r.Stats.MedianMs, true
	}
	return 0, false
}

func rowBar(run results.Run, it svgItem) (float64, bool) {
	if it.kind != svgItemRow {
		return 0, false
	}
	return rowTime(run.Rows[it.row])
}

// writeSVGRow draws a row no call stands for: its name, a light bar of its measured time (with
// the end marker for a timeout or error) or its value as text, and its outcome.
func writeSVGRow(buf *bytes.Buffer, l svgLayout, r results.Row, it svgItem) {
	barY := it.top + (it.height-svgBarHeight)/2
	fmt.Fprintf(buf, "<g>\n<title>%s</title>\n", xmlText(it.label+": "+it.outcome))
	svgTextLines(buf, l.labelRight, it.top+it.height/2, it.labelLines, ` text-anchor="end"`)
	if ms, ok := rowTime(r); ok {
		x0 := l.plotLeft
		x1 := min(max(l.x(ms), x0+svgMinPhase), l.plotRight)
		fmt.Fprintf(buf, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%d\" fill=\"%s\" shape-rendering=\"crispEdges\"><title>%s</title></rect>\n",
			px(x0), px(barY), px(x1-x0), svgBarHeight, svgRowTimeColour, xmlText("measured "+oneDecimal(ms)+" ms"))
		if it.alarm {
			marker(buf, x1, barY, svgBarHeight)
		}
	} else {
		fmt.Fprintf(buf, "<text x=\"%s\" y=\"%s\" font-size=\"11\" fill=\"%s\">%s</text>\n",
			px(l.plotLeft), px(it.top+it.height/2+4), svgMutedColour, xmlText(truncateText(rowValue(r), l.plotRight-l.plotLeft, 11)))
	}
	writeSVGOutcome(buf, l, it)
	buf.WriteString("</g>\n")
}

// attemptTitle is an attempt's tooltip: "attempt 2: 300 ms to 601 ms, read-timeout (...)".
func attemptTitle(k int, a results.Attempt) string {
	return fmt.Sprintf("attempt %d: %s to %s, %s (%s)", k+1, predictMs(a.StartMs), endCell(a.EndMs), orDash(string(a.Outcome)), phasesText(a))
}

type svgSpan struct {
	x0, x1 float64
	colour string
}

// phaseSpans splits an attempt drawn from x0 to x1 into phases, clamped to it; the last phase
// and one that never ends run to its end. A phase that took time gets svgMinPhase px, room
// allowing; an attempt without phases is one grey span.
func phaseSpans(l svgLayout, a results.Attempt, x0, x1 float64) []svgSpan {
	if len(a.Phases) == 0 {
		return []svgSpan{{x0, x1, svgUnknownColour}}
	}
	var spans []svgSpan
	t, cur := a.StartMs, x0
	for k, ph := range a.Phases {
		end := x1
		if k < len(a.Phases)-1 && ph.Ms != nil {
			t += *ph.Ms
			end = min(max(l.x(t), cur), x1)
			if *ph.Ms > 0 {
				end = min(max(end, cur+svgMinPhase), x1)
			}
		}
		if end > cur {
			spans = append(spans, svgSpan{cur, end, phaseColour(string(ph.Phase))})
		}
		cur = end
		if ph.Ms == nil {
			break
		}
	}
	return spans
}
