package report

import (
	"bytes"
	"fmt"
	"math"
)

// writeSVGAxis draws the grid (when grid), the axis, its ticks and labels, and its caption.
func writeSVGAxis(buf *bytes.Buffer, l svgLayout, grid bool) {
	end := l.ticks[len(l.ticks)-1]
	inSeconds := end >= 10000
	if grid {
		fmt.Fprintf(buf, "<g stroke=\"%s\" stroke-width=\"1\">\n", svgGridColour)
		for _, t := range l.ticks {
			x := crisp(l.x(t))
			fmt.Fprintf(buf, "<line x1=\"%s\" y1=\"%d\" x2=\"%s\" y2=\"%s\"/>\n", px(x), svgTop, px(x), px(l.bottom))
		}
		buf.WriteString("</g>\n")
	}

	axisY := crisp(l.bottom)
	fmt.Fprintf(buf, "<g stroke=\"%s\" stroke-width=\"1\">\n", svgMutedColour)
	fmt.Fprintf(buf, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", px(crisp(l.plotLeft)), px(axisY), px(crisp(l.plotRight)), px(axisY))
	for _, t := range l.ticks {
		x := crisp(l.x(t))
		fmt.Fprintf(buf, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", px(x), px(axisY), px(x), px(axisY+4))
	}
	buf.WriteString("</g>\n")

	fmt.Fprintf(buf, "<g font-size=\"11\" fill=\"%s\" text-anchor=\"middle\">\n", svgMutedColour)
	for _, t := range l.ticks {
		fmt.Fprintf(buf, "<text x=\"%s\" y=\"%s\">%s</text>\n", px(l.x(t)), px(l.bottom+17), tickLabel(t, inSeconds))
	}
	unit := "ms"
	if inSeconds {
		unit = "s"
	}
	fmt.Fprintf(buf, "<text x=\"%s\" y=\"%s\">%s %s</text>\n",
		px((l.plotLeft+l.plotRight)/2), px(l.bottom+35), unit, xmlText(l.axis))
	if l.bottom-svgTop > svgTallChart {
		// A tall chart repeats the tick labels at the top.
		for _, t := range l.ticks[1:] { // not 0: it would run into the heading
			fmt.Fprintf(buf, "<text x=\"%s\" y=\"%d\">%s</text>\n", px(l.x(t)), svgTop-6, tickLabel(t, inSeconds))
		}
	}
	buf.WriteString("</g>\n")
	if l.bottom-svgTop > svgTallChart {
		fmt.Fprintf(buf, "<g stroke=\"%s\" stroke-width=\"1\">\n", svgMutedColour)
		for _, t := range l.ticks[1:] {
			x := crisp(l.x(t))
			fmt.Fprintf(buf, "<line x1=\"%s\" y1=\"%d\" x2=\"%s\" y2=\"%d\"/>\n", px(x), svgTop-4, px(x), svgTop)
		}
		buf.WriteString("</g>\n")
	}
}

// svgTallChart is the rows' height, in px, above which the axis labels repeat on top (more than
// a laptop's screen).
const svgTallChart = 600

// crisp centres a coordinate on a pixel, so a 1 px line does not blur over two.
func crisp(v float64) float64 { return math.Floor(v) + 0.5 }
