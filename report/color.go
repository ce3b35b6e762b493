package report

import (
	"bytes"
	"strings"
)

// ANSI colours for verdicts on a terminal.
const (
	green  = "\033[32m"
	red    = "\033[31m"
	yellow = "\033[33m"
	reset  = "\033[0m"
)

// Colorize colours the verdicts of a rendered table (FormatTable): pass green, a pass with a
// warning yellow, FAIL red, in the verdict column and in the footer and summary lines. The
// escape codes take no width on a terminal, so the table's alignment is kept. Call it only
// when the output goes to a terminal that wants colour.
func Colorize(table []byte) []byte {
	lines := strings.SplitAfter(string(table), "\n")
	var b bytes.Buffer
	for _, line := range lines {
		body := strings.TrimRight(line, "\n")
		nl := line[len(body):]
		switch {
		case strings.HasPrefix(body, "| ") && strings.HasSuffix(body, " |"):
			i := strings.LastIndex(body[:len(body)-2], "| ")
			cell := body[i+2 : len(body)-2]
			trimmed := strings.TrimRight(cell, " ")
			if c := verdictColor(trimmed); c != "" {
				body = body[:i+2] + c + trimmed + reset + cell[len(trimmed):] + " |"
			}
		case strings.HasSuffix(body, "· PASS"):
			body = strings.TrimSuffix(body, "PASS") + green + "PASS" + reset
		case strings.HasSuffix(body, "· FAIL"):
			body = strings.TrimSuffix(body, "FAIL") + red + "FAIL" + reset
		case strings.HasPrefix(body, "all: ") && strings.Contains(body, "failed"):
			body = red + body + reset
		case strings.HasPrefix(body, "all: "):
			body = green + body + reset
		}
		b.WriteString(body + nl)
	}
	return b.Bytes()
}

func verdictColor(cell string) string {
	switch {
	case strings.HasPrefix(cell, "pass (warning"):
		return yellow
	case cell == "pass":
		return green
	case strings.HasPrefix(cell, "FAIL"):
		return red
	}
	return ""
}
