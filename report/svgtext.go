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

// px formats a coordinate with at most one decimal, never "-0".
func px(v float64) string {
	v = math.Round(v*10) / 10
	if v == 0 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// xmlText escapes s for XML; characters XML cannot hold become U+FFFD.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// textWidth estimates s's width in px: the renderer's font is unknown, so per-character widths
// are a little above common sans-serif fonts' (DejaVu Sans included): what is estimated to fit,
// fits.
func textWidth(s string, fontSize float64) float64 {
	var em float64
	for _, r := range s {
		em += runeWidth(r)
	}
	return em * fontSize
}

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

// wrapPx breaks s at spaces into lines fitting width px (over-wide words between characters);
// at least one line.
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

// svgTextLines writes lines as one <text> centred on y, svgLineHeight apart; attrs are extra
// attributes.
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

// truncateText returns s, or its longest prefix fitting width px with "…"; at least one
// character, so a label never disappears.
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
