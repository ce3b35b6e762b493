package report

import (
	"strings"

	"github.com/labrun/labrun/results"
)

// ANSI colours for verdicts on a terminal.
const (
	green  = "\033[32m"
	red    = "\033[31m"
	yellow = "\033[33m"
	reset  = "\033[0m"
)

// palette colours the table form's verdicts when on, chosen from the row's verdict, never by
// reading rendered text back.
type palette struct{ on bool }

func (p palette) paint(colour, s string) string {
	if !p.on || colour == "" {
		return s
	}
	return colour + s + reset
}

// verdict colours a verdict cell: pass green, warning or skipped yellow, FAIL red.
func (p palette) verdict(r results.Row, cell string) string {
	switch {
	case r.Skipped != "" || (r.Pass && r.Warning != "") || (!r.Pass && r.Inconclusive != ""):
		return p.paint(yellow, cell)
	case r.Pass:
		return p.paint(green, cell)
	}
	return p.paint(red, cell)
}

// footer colours the footer's verdict (PASS, FAIL, INCONCLUSIVE): the part between " · "
// that is the verdict alone, the line's last or, in a fitted footer, one before others.
func (p palette) footer(line string, pass bool) string {
	colours := map[string]string{"PASS": green, "FAIL": red, "INCONCLUSIVE": yellow}
	lines := strings.Split(line, "\n")
	for i, l := range lines {
		parts := strings.Split(l, " · ")
		for j, part := range parts {
			if c, ok := colours[part]; ok {
				parts[j] = p.paint(c, part)
				lines[i] = strings.Join(parts, " · ")
				return strings.Join(lines, "\n")
			}
		}
	}
	return line
}

// summary colours a suite's summary: green when every experiment passed, else red.
func (p palette) summary(line string, pass bool) string {
	if pass {
		return p.paint(green, line)
	}
	return p.paint(red, line)
}
