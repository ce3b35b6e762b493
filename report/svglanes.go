package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// LaneSep separates a stream's label parts: "okhttp default › node 1 (127.0.8.1) › conn 1".
// Calls with one such label share a lane named by the last part, under a heading of the rest
// (HTTP/2 experiments label their calls so).
const LaneSep = " › "

// The lanes' geometry, in px.
const (
	svgHeadingHeight = 20
	svgLanePad       = 6  // above and below a lane's streams
	svgLaneMax       = 96 // the fullest lane's streams
	svgLaneUnitMax   = 4  // one track
)

type svgItemKind int

const (
	svgItemCall svgItemKind = iota
	svgItemLane             // a lane's streams, stacked in tracks
	svgItemHeading
	svgItemRow // a table row no call stands for
)

// svgItem is one line of a timeline.
type svgItem struct {
	kind        svgItemKind
	top, height float64
	label       string
	outcome     string
	alarm       bool  // a timeout or an error: red
	calls       []int // a call, or a lane's streams by start
	track       []int // per call of a lane
	tracks      int
	row         int
	// executions is "executed 2×" on a call's line, from a row of its group; "" when none says.
	executions string
	stripe     bool
	// labelLines and outcomeLines are wrapped to their columns by layoutSVG.
	labelLines, outcomeLines []string
}

// svgItems returns the timeline's lines, top to bottom, for layoutSVG to place. When calls are
// the table's rows the lines follow the table, rows without a call included; the other calls
// follow, each on its line, but streams of a lane (LaneSep), gathered under their heading where
// the first appears, each in the first track free at its start. Where calls are not rows, a
// call shows its group's executions and the timed rows of groups without calls follow.
func svgItems(run results.Run) []svgItem {
	calls := run.Calls
	var items []svgItem
	var rest []int
	byName := map[string][]int{}
	for i, c := range calls {
		if !strings.Contains(c.Label, LaneSep) {
			byName[oneLine(c.Label)] = append(byName[oneLine(c.Label)], i)
		}
	}
	rowMode := false
	for _, r := range run.Rows {
		rowMode = rowMode || len(byName[oneLine(r.Name)]) > 0
	}
	used := make([]bool, len(calls))
	if rowMode {
		for k, r := range run.Rows {
			name := oneLine(r.Name)
			if q := byName[name]; len(q) > 0 {
				i := q[0]
				byName[name], used[i] = q[1:], true
				out, alarm := rowCallOutcome(calls[i], r)
				items = append(items, svgItem{kind: svgItemCall, label: callLabel(calls[i], i), outcome: out, alarm: alarm, calls: []int{i}})
				continue
			}
			out, alarm := rowOutcome(r)
			items = append(items, svgItem{kind: svgItemRow, label: orDash(name), outcome: out, alarm: alarm, row: k})
		}
	}
	for i := range calls {
		if !used[i] {
			rest = append(rest, i)
		}
	}
	items = append(items, callItems(calls, rest)...)
	if !rowMode {
		withExecutions(run, items)
		items = append(items, uncalledRows(run)...)
	}
	for k := range items {
		if it := &items[k]; it.kind == svgItemLane {
			it.stack(calls)
			it.outcome = laneOutcome(calls, it.calls)
			it.alarm = !onlyOK(calls, it.calls)
		}
	}
	return items
}

func callItems(calls []results.Call, idx []int) []svgItem {
	type group struct {
		head  svgItem
		lanes []svgItem
	}
	var groups []*group
	heads := map[string]*group{}
	lanes := map[string][2]int{} // full label -> group index, index in the group
	for _, i := range idx {
		c := calls[i]
		cut := strings.LastIndex(c.Label, LaneSep)
		if cut < 0 {
			n := len(c.Attempts)
			alarm := n > 0 && c.Attempts[n-1].Outcome != vocab.OK
			groups = append(groups, &group{head: svgItem{kind: svgItemCall, label: callLabel(c, i), outcome: outcomeText(c), alarm: alarm, calls: []int{i}}})
			continue
		}
		if at, ok := lanes[c.Label]; ok {
			g := groups[at[0]]
			g.lanes[at[1]].calls = append(g.lanes[at[1]].calls, i)
			continue
		}
		h := oneLine(c.Label[:cut])
		g := heads[h]
		if g == nil {
			g = &group{head: svgItem{kind: svgItemHeading, label: h}}
			heads[h] = g
			groups = append(groups, g)
		}
		lanes[c.Label] = [2]int{slices.Index(groups, g), len(g.lanes)}
		g.lanes = append(g.lanes, svgItem{kind: svgItemLane, label: orDash(oneLine(c.Label[cut+len(LaneSep):])), calls: []int{i}})
	}
	var items []svgItem
	for _, g := range groups {
		items = append(items, g.head)
		items = append(items, g.lanes...)
	}
	return items
}

// rowCallOutcome is the outcome column of a call a row stands for: its attempts' outcomes when
// the last is the row's, else the row's with the attempts counted ("error (21 attempts)"); and
// whether it is a timeout or an error.
func rowCallOutcome(c results.Call, r results.Row) (string, bool) {
	if r.Skipped != "" || r.Outcome == "" {
		return rowOutcome(r)
	}
	n := len(c.Attempts)
	if n > 0 && c.Attempts[n-1].Outcome == r.Outcome {
		return outcomeText(c), alarming(r.Outcome)
	}
	out := oneLine(string(r.Outcome))
	if n > 1 {
		out += " (" + strconv.Itoa(n) + " attempts)"
	}
	return out, alarming(r.Outcome)
}

// rowOutcome is a callless row's outcome column ("not measured" when none), and whether it
// alarms.
func rowOutcome(r results.Row) (string, bool) {
	if r.Skipped != "" {
		return "not measured", false
	}
	return orDash(oneLine(string(r.Outcome))), alarming(r.Outcome)
}

func alarming(o vocab.Outcome) bool { return o.Valid() && o != vocab.OK }

// callSpan is a call's start and end; +Inf when it never ends or has no attempts.
func callSpan(c results.Call) (start, end float64) {
	if len(c.Attempts) == 0 {
		return 0, math.Inf(1)
	}
	start, end = c.Attempts[0].StartMs, math.Inf(1)
	if e := c.Attempts[len(c.Attempts)-1].EndMs; e != nil {
		end = *e
	}
	return start, end
}

func (it *svgItem) stack(calls []results.Call) {
	slices.SortStableFunc(it.calls, func(a, b int) int {
		sa, _ := callSpan(calls[a])
		sb, _ := callSpan(calls[b])
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	var ends []float64 // per track, its last stream's end
	for _, i := range it.calls {
		s, e := callSpan(calls[i])
		t := slices.IndexFunc(ends, func(end float64) bool { return end <= s })
		if t < 0 {
			t = len(ends)
			ends = append(ends, e)
		} else {
			ends[t] = e
		}
		it.track = append(it.track, t)
	}
	it.tracks = len(ends)
}

// laneOutcome counts a lane's streams by last outcome: "10 ok · 15 deadline".
func laneOutcome(calls []results.Call, idx []int) string {
	count := map[string]int{}
	var words []string
	for _, i := range idx {
		w := "—"
		if a := calls[i].Attempts; len(a) > 0 {
			w = orDash(oneLine(string(a[len(a)-1].Outcome)))
		}
		if count[w] == 0 {
			words = append(words, w)
		}
		count[w]++
	}
	slices.SortStableFunc(words, func(a, b string) int { return vocab.Outcome(a).Rank() - vocab.Outcome(b).Rank() })
	var parts []string
	for _, w := range words {
		parts = append(parts, strconv.Itoa(count[w])+" "+w)
	}
	return strings.Join(parts, " · ")
}

func writeSVGHeading(buf *bytes.Buffer, it svgItem) {
	last := it.top + it.height - 6
	svgTextLines(buf, svgMargin, last-4-float64(len(it.labelLines)-1)*svgLineHeight/2, it.labelLines,
		fmt.Sprintf(` font-size="11" font-weight="bold" fill="%s"`, svgMutedColour))
}

// writeSVGLane draws a lane: name, streams in tracks split into phases (thin ones without crisp
// edges), a red tick on each not ended ok, an arrow where room allows, the outcome counts.
func writeSVGLane(buf *bytes.Buffer, l svgLayout, calls []results.Call, it svgItem) {
	inner := it.height - 2*svgLanePad
	h := inner / float64(max(it.tracks, 1))
	bar := h // a 1 px gap between tracks when they can spare it
	if h >= 3 {
		bar = h - 1
	}
	fmt.Fprintf(buf, "<g>\n<title>%s</title>\n", xmlText(fmt.Sprintf("%s: %d streams, %d at once at most; %s", it.label, len(it.calls), it.tracks, it.outcome)))
	svgTextLines(buf, l.labelRight, it.top+it.height/2, it.labelLines, ` text-anchor="end"`)
	type mark struct{ x, y float64 }
	var marks []mark
	for k, i := range it.calls {
		y := it.top + svgLanePad + float64(it.track[k])*h
		prevEnd := math.Inf(-1)
		for _, a := range calls[i].Attempts {
			x0 := min(max(l.x(a.StartMs), prevEnd), l.plotRight-svgMinPhase)
			x1 := l.plotRight
			if a.EndMs != nil {
				x1 = l.x(*a.EndMs)
			}
			x1 = min(max(x1, x0+svgMinPhase), l.plotRight)
			prevEnd = x1
			for _, s := range phaseSpans(l, a, x0, x1) {
				fmt.Fprintf(buf, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>\n",
					px(s.x0), px(y), px(s.x1-s.x0), px(bar), s.colour)
			}
			switch {
			case a.EndMs == nil && bar >= svgBarHeight/2:
				arrow(buf, x1, y, bar, svgTextColour)
			case a.EndMs != nil && a.Outcome != vocab.OK:
				marks = append(marks, mark{x1 - 2, y})
			}
		}
	}
	for _, m := range marks { // after every bar, so none hides one
		fmt.Fprintf(buf, "<rect x=\"%s\" y=\"%s\" width=\"2\" height=\"%s\" fill=\"%s\"/>\n", px(m.x), px(m.y), px(bar), svgMarkerColour)
	}
	writeSVGOutcome(buf, l, it)
	buf.WriteString("</g>\n")
}

func onlyOK(calls []results.Call, idx []int) bool {
	for _, i := range idx {
		a := calls[i].Attempts
		if len(a) == 0 || a[len(a)-1].Outcome != vocab.OK {
			return false
		}
	}
	return true
}
