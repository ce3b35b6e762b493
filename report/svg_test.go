package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// attempt builds a measured attempt; an end below 0 stands for nil (never ended).
func attempt(start, end float64, outcome vocab.Outcome, phases ...results.PhaseSpan) results.Attempt {
	a := results.Attempt{StartMs: start, Outcome: outcome, Phases: phases}
	if end >= 0 {
		a.EndMs = &end
	}
	return a
}

// timelineA is experiment A: a trickled body that completes inside its read timeout, and two
// stalls cut by a deadline and by a read timeout.
func timelineA() results.Run {
	return results.Run{
		Experiment: "exp-a",
		Title:      "trickle vs read timeout",
		Calls: []results.Call{
			{Label: "trickle 20 B, read-timeout 1s", Attempts: []results.Attempt{
				attempt(0, 3999.5, "ok", span("lease", 0), span("wait", 0.5), span("body", 3999)),
			}},
			{Label: "stall, deadline 1.5s", Attempts: []results.Attempt{
				attempt(0, 1500, "deadline", span("lease", 0), span("wait", 1500)),
			}},
			{Label: "stall, read-timeout 1s", Attempts: []results.Attempt{
				attempt(0, 1000, "read-timeout", span("lease", 0), span("wait", 1000)),
			}},
		},
	}
}

// timelineB is experiment B: 40 calls on a pool of 5. Twenty queue in four batches of five
// (lease waits 0, 500, 1000 and 1500 ms, then 500 ms for the answer), fifteen give up at a
// 300 ms lease timeout, and five run on connections of their own.
func timelineB() results.Run {
	run := results.Run{Experiment: "exp-b", Title: "pool of 5, 40 calls, lease timeout 300ms"}
	for b := range 4 {
		lease := float64(b) * 500
		for k := range 5 {
			run.Calls = append(run.Calls, results.Call{
				Label: fmt.Sprintf("queued, batch %d, call %d", b+1, k+1),
				Attempts: []results.Attempt{
					attempt(0, lease+500, "ok", span("lease", lease), span("wait", 500), span("body", 0)),
				},
			})
		}
	}
	for k := range 15 {
		run.Calls = append(run.Calls, results.Call{
			Label:    fmt.Sprintf("lease timeout %d", k+1),
			Attempts: []results.Attempt{attempt(0, 300, "lease-timeout", span("lease", 300))},
		})
	}
	for k := range 5 {
		run.Calls = append(run.Calls, results.Call{
			Label:    fmt.Sprintf("own connection %d", k+1),
			Attempts: []results.Attempt{attempt(0, 500, "ok", span("lease", 0), span("wait", 500))},
		})
	}
	return run
}

// timelineC is experiment C: a read timeout, then a retry on a new connection that times out
// the same way.
func timelineC() results.Run {
	return results.Run{
		Experiment: "exp-c",
		Title:      "retry after read timeout",
		Calls: []results.Call{
			{Label: "read-timeout 300ms, 1 retry", Attempts: []results.Attempt{
				attempt(0, 300, "read-timeout", span("lease", 0), span("wait", 300)),
				attempt(300, 601, "read-timeout", span("lease", 0), span("connect", 1), span("wait", 300)),
			}},
		},
	}
}

// timelineEdges holds what the experiments rarely produce: a label too long for its column
// with characters XML must escape, a call without a label, an attempt that never ends, an
// unknown phase, an attempt without phases, a call without attempts and a lease timeout
// followed by a success.
func timelineEdges() results.Run {
	return results.Run{
		Experiment: "exp-edge",
		Title:      `odd calls <&> "quoted"`,
		Calls: []results.Call{
			{Label: "a label far too long for its column: trickle 20 B at 1 B/200ms <read-timeout> & deadline 5s", Attempts: []results.Attempt{
				attempt(0, 250, "ok", span("lease", 10), span("connect", 40), span("wait", 100), span("body", 100)),
			}},
			{Attempts: []results.Attempt{
				attempt(0, 200, "lease-timeout", span("lease", 200)),
				attempt(200, -1, "hang", span("lease", 100), span("wait", -1)),
			}},
			{Label: "tls handshake", Attempts: []results.Attempt{
				attempt(0, 120, "ok", span("lease", 0), span("tls", 20), span("wait", 50), span("body", 50)),
			}},
			{Label: "no phases", Attempts: []results.Attempt{attempt(50, 150, "error")}},
			{Label: "no attempts"},
			{Label: "lease, then ok", Attempts: []results.Attempt{
				attempt(0, 200, "lease-timeout", span("lease", 200)),
				attempt(200, 330, "ok", span("lease", 0), span("connect", 30), span("wait", 50), span("body", 50)),
			}},
		},
	}
}

func TestSVGGolden(t *testing.T) {
	cases := []struct {
		name string
		run  results.Run
	}{
		{"timeline-a", timelineA()},
		{"timeline-b", timelineB()},
		{"timeline-c", timelineC()},
		{"timeline-edges", timelineEdges()},
		{"timeline-lanes", timelineLanes()},
		{"timeline-groups", timelineGroups()},
		{"timeline-empty", results.Run{Experiment: "exp-x", Title: "nothing measured"}},
	}
	for _, c := range cases {
		name := c.name + ".svg.golden"
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			if err := WriteSVG(&got, c.run); err != nil {
				t.Fatalf("render: %v", err)
			}
			checkGolden(t, name, got.String())
			checkXML(t, got.Bytes())
		})
	}
}

// checkXML decodes every token of doc and checks the root is an svg element in the SVG
// namespace.
func checkXML(t *testing.T, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var root *xml.StartElement
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == nil {
			root = &se
		}
	}
	if root == nil || root.Name.Local != "svg" || root.Name.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("got root %v, want svg in the SVG namespace", root)
	}
}

func TestSVGParsesAsXML(t *testing.T) {
	run := timelineEdges()
	run.Title = "control \x01 chars\tand ]]> and <!-- comments -->"
	run.Calls[0].Label = "quote \" apostrophe ' amp & lt < gt > newline \n end"
	var buf bytes.Buffer
	if err := WriteSVG(&buf, run); err != nil {
		t.Fatal(err)
	}
	checkXML(t, buf.Bytes())
}

func TestSVGIsDeterministic(t *testing.T) {
	render := func() string {
		var buf bytes.Buffer
		if err := WriteSVG(&buf, timelineB()); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	first := render()
	for range 5 {
		if got := render(); got != first {
			t.Fatalf("second rendering differs:\n%s", lineDiff(first, got))
		}
	}
}

func TestSVGErrorsWriteNothing(t *testing.T) {
	nan := timelineC()
	nan.Calls[0].Attempts[1].Phases[1].Ms = msPtr(math.NaN())
	negative := timelineA()
	negative.Calls[2].Attempts[0].StartMs = -5
	inf := timelineA()
	inf.Calls[0].Attempts[0].EndMs = msPtr(math.Inf(1))
	tests := []struct {
		name    string
		run     results.Run
		wantErr string
	}{
		{"NaN phase", nan, "render exp-c timeline: call 1 (read-timeout 300ms, 1 retry): attempt 2 connect phase is NaN ms, want a finite time >= 0"},
		{"negative start", negative, "render exp-a timeline: call 3 (stall, read-timeout 1s): attempt 1 start is -5 ms, want a finite time >= 0"},
		{"infinite end", inf, "render exp-a timeline: call 1 (trickle 20 B, read-timeout 1s): attempt 1 end is +Inf ms, want a finite time >= 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteSVG(&buf, tt.run)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("got error %v, want %q", err, tt.wantErr)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error, want none", buf.Len())
			}
		})
	}
	boom := errors.New("disk full")
	if err := WriteSVG(failingWriter{boom}, timelineA()); !errors.Is(err, boom) {
		t.Errorf("failing writer: got %v, want it to wrap %v", err, boom)
	}
}

func TestAxisTicks(t *testing.T) {
	seq := func(step float64, n int) []float64 {
		var ts []float64
		for i := range n + 1 {
			ts = append(ts, roundTo(float64(i)*step, 9))
		}
		return ts
	}
	tests := []struct {
		name string
		end  float64
		want []float64
	}{
		{"trickle 4000 ms: steps of 500", 4000, seq(500, 8)},
		{"just past a tick rounds up", 3999.5, seq(500, 8)},
		{"pool 2000 ms: steps of 200", 2000, seq(200, 10)},
		{"retry 601 ms: steps of 100 to 700", 601, seq(100, 7)},
		{"1500 ms: steps of 200 to 1600", 1500, seq(200, 8)},
		{"exactly ten steps of 1", 10, seq(1, 10)},
		{"eleven steps of 1 become six of 2", 11, seq(2, 6)},
		{"kernel timeout 924.6 s: steps of 100 s", 924600, seq(100000, 10)},
		{"under a millisecond", 0.35, seq(0.05, 7)},
		{"a tenth of a ms", 0.3, seq(0.05, 6)},
		{"zero falls back to 1 s", 0, seq(100, 10)},
		{"negative falls back to 1 s", -3, seq(100, 10)},
		{"NaN falls back to 1 s", math.NaN(), seq(100, 10)},
		{"+Inf falls back to 1 s", math.Inf(1), seq(100, 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := axisTicks(tt.end)
			if !slices.Equal(got, tt.want) {
				t.Errorf("axisTicks(%v): got %v, want %v", tt.end, got, tt.want)
			}
			if len(got) > svgMaxTicks+1 {
				t.Errorf("got %d ticks, want at most %d", len(got), svgMaxTicks+1)
			}
		})
	}
}

func TestTickLabel(t *testing.T) {
	tests := []struct {
		ms        float64
		inSeconds bool
		want      string
	}{
		{0, false, "0"},
		{500, false, "500"},
		{0.15, false, "0.15"},
		{roundTo(3*0.1, 9), false, "0.3"},
		{100000, true, "100"},
		{2500, true, "2.5"},
	}
	for _, tt := range tests {
		if got := tickLabel(tt.ms, tt.inSeconds); got != tt.want {
			t.Errorf("tickLabel(%v, %v): got %q, want %q", tt.ms, tt.inSeconds, got, tt.want)
		}
	}
}

func TestTruncateText(t *testing.T) {
	long := "trickle 20 B at 1 B/200ms, read-timeout 1s, deadline 5s"
	tests := []struct {
		name  string
		in    string
		width float64
		want  string
	}{
		{"fits", "batch 2", 100, "batch 2"},
		{"empty", "", 10, ""},
		{"cut with an ellipsis", long, 150, "trickle 20 B at 1 B/20…"},
		{"no space before the ellipsis", "abc defghijklmnop", 40, "abc…"},
		{"keeps one character", "Wide", 1, "W…"},
		{"cuts between runes, not bytes", "délai de lecture dépassé", 60, "délai d…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truncateText(tt.in, tt.width, svgLabelFont)
			if got != tt.want {
				t.Errorf("truncateText(%q, %v): got %q, want %q", tt.in, tt.width, got, tt.want)
			}
			if got != tt.in && len(got) > 4 && textWidth(got, svgLabelFont) > tt.width {
				t.Errorf("%q is %.1f px wide, want at most %v", got, textWidth(got, svgLabelFont), tt.width)
			}
		})
	}
}

func TestTextWidth(t *testing.T) {
	// Narrow letters are narrower than wide ones, and width scales with the font size.
	if a, b := textWidth("iiii", 12), textWidth("MMMM", 12); a >= b {
		t.Errorf("iiii is %.1f px, MMMM %.1f px: want iiii narrower", a, b)
	}
	if a, b := textWidth("batch", 12), textWidth("batch", 24); b != 2*a {
		t.Errorf("at 24 px got %.1f, want twice %.1f", b, a)
	}
}

func TestOutcomeText(t *testing.T) {
	tests := []struct {
		name string
		call results.Call
		want string
	}{
		{"one", timelineA().Calls[1], "deadline"},
		{"repeated", timelineC().Calls[0], "read-timeout ×2"},
		{"changes", timelineEdges().Calls[5], "lease-timeout → ok"},
		{"none", results.Call{}, "—"},
		{"empty outcome", results.Call{Attempts: []results.Attempt{{}}}, "—"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outcomeText(tt.call); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPhaseSpans(t *testing.T) {
	// A 1000 ms axis 500 px wide: 0.5 px per ms.
	l := svgLayout{plotLeft: 0, plotRight: 500, ticks: []float64{0, 1000}}
	tests := []struct {
		name   string
		a      results.Attempt
		x0, x1 float64
		want   []svgSpan
	}{
		{
			name: "phases in proportion, zero lease left out",
			a:    attempt(0, 1000, "ok", span("lease", 0), span("wait", 400), span("body", 600)),
			x0:   0, x1: 500,
			want: []svgSpan{{0, 200, "#56b4e9"}, {200, 500, "#0072b2"}},
		},
		{
			name: "a 1 ms connect gets 2 px",
			a:    attempt(300, 601, "read-timeout", span("lease", 0), span("connect", 1), span("wait", 300)),
			x0:   153, x1: 300.5,
			want: []svgSpan{{153, 155, "#e69f00"}, {155, 300.5, "#56b4e9"}},
		},
		{
			name: "the last phase fills the attempt",
			a:    attempt(0, 1000, "deadline", span("lease", 100), span("wait", 100)),
			x0:   0, x1: 500,
			want: []svgSpan{{0, 50, "#cc79a7"}, {50, 500, "#56b4e9"}},
		},
		{
			name: "a phase that never ends stops the attempt's phases",
			a:    attempt(200, -1, "hang", span("lease", 100), span("wait", -1), span("body", 10)),
			x0:   100, x1: 500,
			want: []svgSpan{{100, 150, "#cc79a7"}, {150, 500, "#56b4e9"}},
		},
		{
			name: "no phases: one grey span",
			a:    attempt(0, 100, "error"),
			x0:   0, x1: 50,
			want: []svgSpan{{0, 50, svgUnknownColour}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := phaseSpans(l, tt.a, tt.x0, tt.x1); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPx(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{12, "12"}, {12.25, "12.3"}, {12.04, "12"}, {-0.04, "0"}, {0.5, "0.5"}, {959.95, "960"},
	}
	for _, tt := range tests {
		if got := px(tt.in); got != tt.want {
			t.Errorf("px(%v): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSVGLabelsStayLeftOfBars checks, for every golden case, that each label's estimated
// right edge is left of the plot and that every label is within its column.
func TestSVGLabelsStayLeftOfBars(t *testing.T) {
	for _, run := range []results.Run{timelineA(), timelineB(), timelineC(), timelineEdges(), timelineLanes()} {
		checkSVGGeometry(t, run)
	}
}

// checkSVGGeometry checks the timeline of run: every label and outcome line within its
// column and never cut, items one below the other without overlapping and tall enough for
// their lines, and every bar within the plot.
func checkSVGGeometry(t *testing.T, run results.Run) {
	t.Helper()
	items := svgItems(run)
	l := layoutSVG(run, items)
	if l.labelRight >= l.plotLeft {
		t.Errorf("%s: labels end at %.1f, plot starts at %.1f", run.Experiment, l.labelRight, l.plotLeft)
	}
	y := float64(svgTop)
	for _, it := range items {
		if it.top < y-0.01 {
			t.Errorf("%s: %q starts at y=%.1f, over the item above (ends at %.1f)", run.Experiment, it.label, it.top, y)
		}
		y = it.top + it.height
		squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
		if squeeze(strings.Join(it.labelLines, "")) != squeeze(it.label) {
			t.Errorf("%s: label %q shown as %q", run.Experiment, it.label, it.labelLines)
		}
		lines := max(len(it.labelLines), len(it.outcomeLines))
		if it.height < float64(lines*svgLineHeight) {
			t.Errorf("%s: %q: %d lines in %.1f px", run.Experiment, it.label, lines, it.height)
		}
		for _, line := range it.labelLines {
			if strings.Contains(line, "…") && !strings.Contains(it.label, "…") {
				t.Errorf("%s: label %q cut: %q", run.Experiment, it.label, line)
			}
			width := l.labelMaxW
			if it.kind == svgItemHeading {
				width = svgWidth - 2*svgMargin
			}
			if textWidth(line, svgLabelFont) > width+0.01 {
				t.Errorf("%s: label line %q wider than its column", run.Experiment, line)
			}
		}
		for _, line := range it.outcomeLines {
			if right := l.outcomeX + textWidth(line, svgLabelFont-1); right > svgWidth-svgMargin+0.01 {
				t.Errorf("%s: outcome %q ends at x=%.1f, past the margin", run.Experiment, line, right)
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, run); err != nil {
		t.Fatal(err)
	}
	// Every bar (a rect in the plot's rows, stripes and the background aside) ends by the
	// axis's end.
	bar := regexp.MustCompile(`<rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="[0-9.]+" fill="(#[0-9a-f]+)"`)
	for _, m := range bar.FindAllStringSubmatch(buf.String(), -1) {
		if y, _ := strconv.ParseFloat(m[2], 64); m[4] == svgStripeColour || y < svgTop {
			continue // a stripe, or the legend
		}
		m[2] = m[3]
		x, _ := strconv.ParseFloat(m[1], 64)
		w, _ := strconv.ParseFloat(m[2], 64)
		if x+w > l.plotRight+0.1 || x < l.plotLeft-0.1 {
			t.Errorf("%s: a bar from x=%.1f to %.1f, outside the plot (%.1f to %.1f)", run.Experiment, x, x+w, l.plotLeft, l.plotRight)
		}
	}
}

// TestSVGReference draws every experiment of the reference run: each row gets its line where
// the calls are the table's rows (exp-i: all 23), the outcome column says what the table
// says, and nothing is cut or overlaps.
func TestSVGReference(t *testing.T) {
	suite := referenceSuite(t)
	for _, run := range suite.Experiments {
		checkSVGGeometry(t, run)
		items := svgItems(run)
		rowLines := 0
		for _, it := range items {
			if it.kind == svgItemRow || it.kind == svgItemCall && slices.ContainsFunc(run.Rows, func(r results.Row) bool { return r.Name == it.label }) {
				rowLines++
			}
		}
		switch run.Experiment {
		case "exp-i", "exp-d", "exp-f", "exp-a", "demo":
			if rowLines != len(run.Rows) {
				t.Errorf("%s: %d of %d rows have a line", run.Experiment, rowLines, len(run.Rows))
			}
		}
		for _, it := range items {
			for _, r := range run.Rows {
				if it.label == r.Name && r.Skipped == "" && r.Outcome != "" && !strings.HasPrefix(it.outcome, string(r.Outcome)) && !strings.Contains(it.outcome, "→ "+string(r.Outcome)) {
					t.Errorf("%s: %q says %q, the table %q", run.Experiment, it.label, it.outcome, r.Outcome)
				}
			}
		}
	}
}

// timelineLanes is HTTP/2's streams (exp-h): a call of its own, then two lanes on node 1, one
// of three streams at once and one with a stream that never ends, and a lane on node 2 whose
// streams follow one another, one of them cut by a deadline.
func timelineLanes() results.Run {
	stream := func(label string, start, end float64, outcome vocab.Outcome) results.Call {
		return results.Call{Label: label, Attempts: []results.Attempt{attempt(start, end, outcome, span("wait", end-start))}}
	}
	const n1, n2 = "burst" + LaneSep + "node 1 (127.0.8.1)", "burst" + LaneSep + "node 2 (127.0.8.2)"
	return results.Run{
		Experiment: "exp-h",
		Title:      "HTTP/2: one connection carries everything",
		Axis:       "from the start of each scenario",
		Calls: []results.Call{
			{Label: "warm-up", Attempts: []results.Attempt{attempt(0, 20, "ok", span("connect", 1), span("wait", 19))}},
			{Label: n1 + LaneSep + "conn 1", Attempts: []results.Attempt{attempt(0, 300, "ok", span("connect", 1), span("wait", 299))}},
			stream(n1+LaneSep+"conn 1", 0, 300, "ok"),
			stream(n2+LaneSep+"conn 3", 0, 100, "ok"),
			stream(n1+LaneSep+"conn 1", 5, 300, "ok"),
			stream(n1+LaneSep+"conn 1", 300, 400, "ok"), // after the first ended: its track again
			stream(n2+LaneSep+"conn 3", 100, 200, "deadline"),
			{Label: n1 + LaneSep + "conn 2", Attempts: []results.Attempt{attempt(50, -1, "hang", span("wait", -1))}},
			stream(n2+LaneSep+"conn 3", 200, 250, "ok"),
		},
	}
}

// TestSVGLanes: streams gather in their lane, in tracks; lanes of one node share a heading.
func TestSVGLanes(t *testing.T) {
	run := timelineLanes()
	items := svgItems(run)
	layoutSVG(run, items)
	type line struct {
		kind           svgItemKind
		label, outcome string
		calls          []int
		tracks         int
	}
	var got []line
	for _, it := range items {
		got = append(got, line{it.kind, it.label, it.outcome, it.calls, it.tracks})
	}
	want := []line{
		{svgItemCall, "warm-up", "ok", []int{0}, 0},
		{svgItemHeading, "burst › node 1 (127.0.8.1)", "", nil, 0},
		{svgItemLane, "conn 1", "4 ok", []int{1, 2, 4, 5}, 3},
		{svgItemLane, "conn 2", "1 hang", []int{7}, 1},
		{svgItemHeading, "burst › node 2 (127.0.8.2)", "", nil, 0},
		{svgItemLane, "conn 3", "2 ok · 1 deadline", []int{3, 6, 8}, 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("items:\ngot  %v\nwant %v", got, want)
	}
	if tr := items[2].track; !slices.Equal(tr, []int{0, 1, 2, 0}) {
		t.Errorf("tracks of conn 1: got %v, want [0 1 2 0]", tr)
	}
	// The fullest lane (3 tracks) gets 3 x 4 px, the others a call's height.
	for k, h := range map[int]float64{0: svgRowHeight, 1: svgHeadingHeight, 2: svgBarHeight + 2*svgLanePad, 3: svgBarHeight + 2*svgLanePad} {
		if items[k].height != h {
			t.Errorf("item %d: height %v, want %v", k, items[k].height, h)
		}
	}
}
