package report

import (
	"math"
	"strconv"

	"github.com/labrun/labrun/results"
)

// svgLayout places the parts of a timeline.
type svgLayout struct {
	labelRight float64
	plotLeft   float64 // x of time 0
	plotRight  float64 // axis end; where never-ending attempts stop
	outcomeX   float64
	labelMaxW  float64
	outcomeW   float64
	ticks      []float64
	bottom     float64 // y of the time axis
	height     float64
	axis       string
}

func (l svgLayout) x(ms float64) float64 {
	end := l.ticks[len(l.ticks)-1]
	return l.plotLeft + ms/end*(l.plotRight-l.plotLeft)
}

// layoutSVG places the label and outcome columns, wraps the texts, places the items from svgTop
// down and the axis under the last.
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
	// Room for a never-ending attempt's arrow and half the last tick label.
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
	l.bottom = svgTop + svgRowHeight
	if n := len(items); n > 0 {
		l.bottom = items[n-1].top + items[n-1].height
	}
	l.height = l.bottom + 46
	return l
}

const svgLineHeight = 14

// placeItems wraps the items' texts and gives each its height and top: a line as tall as its
// text needs, a call's height at least; the fullest lane's streams at most svgLaneMax px.
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

// timelineEnd is the axis's end: the latest finite attempt time, 1.25 times that when an
// attempt never ends (as timelineScale), 1 s when there is none.
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
		// A floor keeps a run of microseconds from a scale that places bars at NaN.
		latest = minTimelineEnd
	}
	if open {
		return latest * 1.25
	}
	return latest
}

const minTimelineEnd = 1.0

// axisTicks returns ticks from 0 to at least end by the smallest round step (1, 2 or 5 times a
// power of ten) giving at most 10 intervals; end ≤ 0, NaN or ±Inf gives a 1 s axis.
func axisTicks(end float64) []float64 {
	if !(end > 0) || math.IsInf(end, 0) {
		end = 1000
	}
	exp := math.Floor(math.Log10(end / svgMaxTicks))
	var step float64
	var n int
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * math.Pow(10, exp)
		// The slack keeps 4000/500 from making 9 intervals.
		n = int(math.Ceil(end/step - 1e-9))
		if n <= svgMaxTicks {
			break
		}
	}
	ticks := make([]float64, n+1)
	for i := range ticks {
		// Round away float noise (3*0.1).
		ticks[i] = roundTo(float64(i)*step, 9)
	}
	return ticks
}

func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// tickLabel formats a tick in ms, or in s when inSeconds (axes reaching 10 s).
func tickLabel(ms float64, inSeconds bool) string {
	if inSeconds {
		ms /= 1000
	}
	return strconv.FormatFloat(roundTo(ms, 6), 'f', -1, 64)
}
