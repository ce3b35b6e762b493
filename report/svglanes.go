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

// LaneSep separates the parts of a call label that makes the call a stream in a lane of the
// SVG timeline: "okhttp default › node 1 (127.0.8.1) › conn 1". The calls with the same such
// label share one lane, named by the part after the last separator ("conn 1"); the rest
// ("okhttp default › node 1 (127.0.8.1)") is the heading of the lanes that follow one another
// under it. An experiment of many concurrent calls on few connections (exp-h, HTTP/2) labels
// its calls so.
const LaneSep = " › "

// The lanes' geometry, in px.
const (
	svgHeadingHeight = 20 // a heading above lanes
	svgLanePad       = 6  // above and below a lane's streams: a lane of one stream is a call's height
	svgLaneMax       = 96 // the most height the streams of the fullest lane take
	svgLaneUnitMax   = 4  // the most height of one track of streams
)

type svgItemKind int

const (
	svgItemCall    svgItemKind = iota // one call, its attempts on one line
	svgItemLane                       // the streams of one lane, stacked in tracks
	svgItemHeading                    // the heading of the lanes below it
	svgItemRow                        // a row of the table that no call stands for
)

// svgItem is one line of a timeline, from top to bottom.
type svgItem struct {
	kind        svgItemKind
	top, height float64
	label       string // the call's label, the lane's name, the heading or the row's name
	outcome     string // the outcome column
	alarm       bool   // the outcome is a timeout or an error: the outcome column is red
	calls       []int  // svgItemCall: the call; svgItemLane: its streams, in order of start
	track       []int  // svgItemLane: the track of each of calls
	tracks      int
	row         int // svgItemRow: the row's index
	// executions, on a call's line, says how often the server executed the call ("executed
	// 2×"), from a row of its group (withExecutions); "" when no row says.
	executions string
	stripe     bool // drawn on a grey stripe
	// labelLines and outcomeLines are the label and the outcome wrapped to their columns
	// (layoutSVG sets them).
	labelLines, outcomeLines []string
}

// svgItems returns the lines of the run's timeline, from top to bottom, without their
// geometry (layoutSVG places them).
//
// When calls are the table's rows (a call's label is a row's name), the timeline follows the
// table: a line per row, in order, the call of the same name drawn on it, and its outcome
// column saying the row's outcome; a row without a call (a count, a state, a time the kernel
// measured) gets its line too, with a bar of its measured time when it has one. The calls
// that no row names follow, as in a run whose calls are not its rows: each call on a line of
// its own, in order, except the streams of lanes (LaneSep): a lane appears where its first
// stream does, under its heading, which gathers every lane that names it where the first
// appears. Within a lane, streams go in tracks, each in the first whose last stream ended by
// its start.
//
// In a run whose calls are not its rows, a call's outcome column adds how often
// the server executed it, from the row of the call's group (the part of the names before ":")
// that counts executions, and the timed rows of groups without calls follow the calls, under
// a heading, each a bar of its measured time.
func svgItems(run results.Run) []svgItem {
	calls := run.Calls
	var items []svgItem
	var rest []int // the calls no row stands for
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

// callItems lays out the calls idx of calls that no row stands for, as svgItems says.
func callItems(calls []results.Call, idx []int) []svgItem {
	type group struct {
		head  svgItem   // a call, or a heading
		lanes []svgItem // under a heading
	}
	var groups []*group
	heads := map[string]*group{} // heading -> its group
	lanes := map[string][2]int{} // full label -> its group's index and its index in the group
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

// rowCallOutcome is the outcome column of a call that a row stands for: the call's attempt
// outcomes when the last is the row's outcome ("read-timeout → ok"), else the row's, with
// the attempts counted ("error (21 attempts)": a redirect loop whose every hop answered),
// so that the picture says what the table says; and whether it is a timeout or an error.
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

// rowOutcome is the outcome column of a row without a call: its outcome or state, or "not
// measured"; and whether it is a timeout or an error.
func rowOutcome(r results.Row) (string, bool) {
	if r.Skipped != "" {
		return "not measured", false
	}
	return orDash(oneLine(string(r.Outcome))), alarming(r.Outcome)
}

// alarming reports whether o is a call's outcome other than ok (a state is not).
func alarming(o vocab.Outcome) bool { return o.Valid() && o != vocab.OK }

// callSpan is when a call starts and ends on the timeline; a call that never ends, or has no
// attempts, ends at +Inf.
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

// stack orders the lane's streams by start and puts each in a track.
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
	var ends []float64 // per track, the end of its last stream
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

// laneOutcome counts a lane's streams by the outcome of their last attempt, in the order of
// vocab.Outcomes: "180 ok", "10 ok · 15 deadline".
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

// writeSVGHeading draws a heading across the timeline, over the lanes below it.
func writeSVGHeading(buf *bytes.Buffer, it svgItem) {
	last := it.top + it.height - 6 // the last line's baseline
	svgTextLines(buf, svgMargin, last-4-float64(len(it.labelLines)-1)*svgLineHeight/2, it.labelLines,
		fmt.Sprintf(` font-size="11" font-weight="bold" fill="%s"`, svgMutedColour))
}

// writeSVGLane draws a lane: its name, its streams stacked in tracks, each split into its
// phases, a red tick at the end of each that did not end ok, and the count of streams by
// outcome. Streams are thin when a lane holds many at once, so they are drawn without
// crisp edges; a stream that never ends runs to the plot's right edge, with an arrow when its
// track is tall enough to show one.
func writeSVGLane(buf *bytes.Buffer, l svgLayout, calls []results.Call, it svgItem) {
	inner := it.height - 2*svgLanePad
	h := inner / float64(max(it.tracks, 1))
	bar := h // a stream's height: a 1 px gap between tracks when they are tall enough to spare it
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
	for _, m := range marks { // after every bar, so that none hides one
		fmt.Fprintf(buf, "<rect x=\"%s\" y=\"%s\" width=\"2\" height=\"%s\" fill=\"%s\"/>\n", px(m.x), px(m.y), px(bar), svgMarkerColour)
	}
	writeSVGOutcome(buf, l, it)
	buf.WriteString("</g>\n")
}

// onlyOK reports whether every stream's last attempt ended ok.
func onlyOK(calls []results.Call, idx []int) bool {
	for _, i := range idx {
		a := calls[i].Attempts
		if len(a) == 0 || a[len(a)-1].Outcome != vocab.OK {
			return false
		}
	}
	return true
}
