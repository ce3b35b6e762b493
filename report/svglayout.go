package report

import (
	"math"
	"strconv"

	"github.com/labrun/labrun/results"
)

// svgLayout places the parts of a timeline.
type svgLayout struct {
	labelRight float64 // right edge of the call labels
	plotLeft   float64 // x of time 0
	plotRight  float64 // x of the axis end (ticks[len-1]); the right edge for attempts that never end
	outcomeX   float64 // left edge of the outcome column
	labelMaxW  float64 // widest label that fits
	outcomeW   float64 // widest outcome text that fits
	ticks      []float64
	bottom     float64 // y of the time axis
	height     float64
	axis       string // what the time axis counts from
}

func (l svgLayout) x(ms float64) float64 {
	end := l.ticks[len(l.ticks)-1]
	return l.plotLeft + ms/end*(l.plotRight-l.plotLeft)
}

// layoutSVG places the columns for the items' labels and outcomes (headings span the width
// and take no part), wraps the texts to them, gives each item its height and place from
// svgTop down, and puts the time axis under the last item. Items are placed in place.
func layoutSVG(run results.Run, items []svgItem) svgLayout {
	var l svgLayout
	widest := 0.0
	for _, it := range items {
		if it.kind != svgItemHeading {
			widest = max(widest, textWidth(it.label, svgLabelFont))
		}
	}
	labelCol := min(max(widest+svgColumnSpace, svgLabelMin), svgLabelMax)
	l.labelMaxW = labelCol - svgColumnSpace
	l.labelRight = svgMargin + labelCol
	l.plotLeft = l.labelRight + svgColumnSpace

	widest = textWidth("outcome", svgLabelFont-1)
	for _, it := range items {
		if it.kind != svgItemHeading {
			widest = max(widest, textWidth(it.outcome, svgLabelFont-1))
		}
	}
	outcomeCol := min(max(widest, svgOutcomeMin), svgOutcomeMax)
	l.outcomeW = outcomeCol
	l.outcomeX = svgWidth - svgMargin - outcomeCol
	// Room between the plot and the outcome column for the arrow of an attempt that never
	// ends and for half of the last tick label.
	l.plotRight = l.outcomeX - 28

	l.axis = run.Axis
	if l.axis == "" {
		l.axis = "from the start of each call"
	}
	rowTimes := 0.0
	for _, it := range items {
		if it.kind == svgItemRow {
			if ms, ok := rowTime(run.Rows[it.row]); ok {
				rowTimes = max(rowTimes, ms)
			}
		}
	}
	l.ticks = axisTicks(max(timelineEnd(run.Calls), rowTimes))
	placeItems(items, l)
	l.bottom = svgTop + svgRowHeight // room for "no calls recorded"
	if n := len(items); n > 0 {
		l.bottom = items[n-1].top + items[n-1].height
	}
	l.height = l.bottom + 46
	return l
}

// svgLineHeight is the distance between the baselines of a wrapped text's lines.
const svgLineHeight = 14

// placeItems wraps the items' texts to l's columns and gives each item its height and top:
// a call's or a row's line is as tall as its wrapped label or outcome needs, a call's height
// at least; the fullest lane of the run gets at most svgLaneMax px for its streams, and every
// track the same height.
func placeItems(items []svgItem, l svgLayout) {
	most := 0
	for _, it := range items {
		if it.kind == svgItemLane {
			most = max(most, it.tracks)
		}
	}
	unit := float64(svgLaneUnitMax)
	if most > 0 {
		unit = min(unit, svgLaneMax/float64(most))
	}
	y, n := float64(svgTop), 0
	for k := range items {
		it := &items[k]
		if it.kind == svgItemHeading {
			it.labelLines = wrapPx(it.label, svgWidth-2*svgMargin, 11*1.05)
			it.height = svgHeadingHeight + float64(len(it.labelLines)-1)*svgLineHeight
		} else {
			it.labelLines = wrapPx(it.label, l.labelMaxW, svgLabelFont)
			it.outcomeLines = wrapPx(it.outcome, l.outcomeW, svgLabelFont-1)
			text := float64(max(len(it.labelLines), len(it.outcomeLines))*svgLineHeight + 10)
			it.height = max(svgRowHeight, text)
			if it.kind == svgItemLane {
				it.height = max(max(float64(it.tracks)*unit, svgBarHeight)+2*svgLanePad, text)
			}
			it.stripe = n%2 == 1
			n++
		}
		it.top = y
		y += it.height
	}
}

// timelineEnd is the time the axis must reach: the latest finite time of any attempt, or for
// a run with an attempt that never ends 1.25 times that, leaving room to show it running on
// (as timelineScale does for a prediction); 1 s when there is no time at all.
func timelineEnd(calls []results.Call) float64 {
	var latest float64
	open := false
	for _, c := range calls {
		for _, a := range c.Attempts {
			t := a.StartMs
			latest = max(latest, t)
			if a.EndMs != nil {
				latest = max(latest, *a.EndMs)
			} else {
				open = true
			}
			for _, ph := range a.Phases {
				if ph.Ms == nil {
					break
				}
				t += *ph.Ms
				latest = max(latest, t)
			}
		}
	}
	switch {
	case latest <= 0:
		return 1000
	case latest < minTimelineEnd:
		// A run of microseconds (or of 1e-300 ms) still gets a readable axis: without a
		// floor, the scale would divide by next to nothing and place bars at NaN.
		latest = minTimelineEnd
	}
	if open {
		return latest * 1.25
	}
	return latest
}

// minTimelineEnd is the shortest time axis, in ms.
const minTimelineEnd = 1.0

// axisTicks returns the ticks of a time axis from 0 to at least end: evenly spaced by a round
// step (1, 2 or 5 times a power of ten) chosen as the smallest giving at most 10 intervals,
// the last tick the first multiple of the step at or after end. An end of 0 or less (or
// NaN, ±Inf) gives the ticks of a 1 s axis.
func axisTicks(end float64) []float64 {
	if !(end > 0) || math.IsInf(end, 0) {
		end = 1000
	}
	exp := math.Floor(math.Log10(end / svgMaxTicks))
	var step float64
	var n int
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * math.Pow(10, exp)
		// The small slack keeps 4000 from becoming 4000.0000001 / 500 -> 9 intervals.
		n = int(math.Ceil(end/step - 1e-9))
		if n <= svgMaxTicks {
			break
		}
	}
	ticks := make([]float64, n+1)
	for i := range ticks {
		// Round away the float noise of i*step (3*0.1 = 0.30000000000000004).
		ticks[i] = roundTo(float64(i)*step, 9)
	}
	return ticks
}

func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// tickLabel formats a tick in ms, or in s when the axis reaches 10 s, where milliseconds get
// too long to read ("924600"): the caller says which with inSeconds.
func tickLabel(ms float64, inSeconds bool) string {
	if inSeconds {
		ms /= 1000
	}
	return strconv.FormatFloat(roundTo(ms, 6), 'f', -1, 64)
}
