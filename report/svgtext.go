package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// px formats a coordinate with at most one decimal ("12", "12.5"), never "-0".
func px(v float64) string {
	v = math.Round(v*10) / 10
	if v == 0 {
		v = 0 // turns -0 into 0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// xmlText escapes s for XML character data and attribute values; characters XML cannot hold
// become U+FFFD.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails to write
	return b.String()
}

// textWidth estimates the width of s in px at the given font size. The renderer's font is not
// known here (the SVG names a list of system fonts), so the estimate uses rough per-character
// widths a little above those of common sans-serif fonts (DejaVu Sans, the widest usual
// fallback, included): text estimated to fit, fits.
func textWidth(s string, fontSize float64) float64 {
	var em float64
	for _, r := range s {
		em += runeWidth(r)
	}
	return em * fontSize
}

// runeWidth is a character's estimated width in em.
func runeWidth(r rune) float64 {
	switch {
	case strings.ContainsRune("il.,:;|!'`ijI", r):
		return 0.3
	case strings.ContainsRune(" frt()[]-/", r):
		return 0.38
	case strings.ContainsRune("mwMW@%", r):
		return 0.95
	case r >= '0' && r <= '9':
		return 0.64
	case r >= 'A' && r <= 'Z':
		return 0.74
	case r < utf8.RuneSelf:
		return 0.62
	case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hangul, r) ||
		unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
		return 1.0
	}
	return 0.8
}

// wrapPx breaks s into lines that fit width px at fontSize, at spaces; a word wider than a
// line is broken between characters. It returns at least one line.
func wrapPx(s string, width, fontSize float64) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && textWidth(line+" "+word, fontSize) <= width {
			line += " " + word
			continue
		}
		if line != "" {
			lines = append(lines, line)
		}
		line = word
		for textWidth(line, fontSize) > width {
			cut, w := 0, 0.0
			for i, r := range line {
				w += runeWidth(r) * fontSize
				if w > width && cut > 0 {
					break
				}
				cut = i + utf8.RuneLen(r)
			}
			if cut >= len(line) {
				break
			}
			lines = append(lines, line[:cut])
			line = line[cut:]
		}
	}
	return append(lines, line)
}

// svgTextLines writes lines as one <text> element centred on y: the first line's baseline
// at y+4 less half the block's height, each next line svgLineHeight below, at x; attrs are
// the element's further attributes (" text-anchor=\"end\"").
func svgTextLines(buf *bytes.Buffer, x, y float64, lines []string, attrs string) {
	base := y + 4 - float64(len(lines)-1)*svgLineHeight/2
	fmt.Fprintf(buf, "<text x=\"%s\" y=\"%s\"%s>", px(x), px(base), attrs)
	for k, line := range lines {
		if k == 0 {
			buf.WriteString(xmlText(line))
			continue
		}
		fmt.Fprintf(buf, "<tspan x=\"%s\" dy=\"%d\">%s</tspan>", px(x), svgLineHeight, xmlText(line))
	}
	buf.WriteString("</text>\n")
}

// truncateText returns s if it fits in width px at fontSize, or else its longest prefix that
// fits with an ellipsis after it ("trickle 20 B, read-tim…"), trailing spaces dropped. At
// least one character is kept, so that a label never disappears altogether.
func truncateText(s string, width, fontSize float64) string {
	if textWidth(s, fontSize) <= width {
		return s
	}
	room := width - textWidth("…", fontSize)
	var w float64
	cut := 0
	for i, r := range s {
		w += runeWidth(r) * fontSize
		if w > room {
			break
		}
		cut = i + utf8.RuneLen(r)
	}
	if cut == 0 {
		_, size := utf8.DecodeRuneInString(s)
		cut = size
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}
