package cli

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// Help is urfave/cli's, printed through printHelp: wrapped to the terminal's width (80
// columns when there is no terminal), and, for the commands that run experiments, with the
// command's own parameters first and the flags every running command shares after them.

// helpWidth is the width help is wrapped to when stdout is no terminal.
const helpWidth = 80

var setHelpPrinter sync.Once

// useHelpPrinter makes urfave/cli print help with printHelp. urfave/cli v2 takes its help
// printer from a variable of its package, not from the App: it is set once, to a function
// that depends on nothing but its arguments, so every app may share it.
func useHelpPrinter() {
	setHelpPrinter.Do(func() { cli.HelpPrinter = printHelp })
}

// printHelp renders templ for data as urfave/cli would, lines unwrapped, then wraps them.
func printHelp(w io.Writer, templ string, data any) {
	var buf bytes.Buffer
	cli.HelpPrinterCustom(&buf, templ, data, map[string]any{
		"ownFlags":    func(fs []cli.Flag) []cli.Flag { return splitFlags(fs, false) },
		"sharedFlags": func(fs []cli.Flag) []cli.Flag { return splitFlags(fs, true) },
	})
	width := termWidth(w)
	if width <= 0 {
		width = helpWidth
	}
	io.WriteString(w, wrapHelp(layoutFlags(buf.String()), width))
}

// flagLine is a flag's line of help: its names and value placeholder, two spaces or more,
// its usage.
var flagLine = regexp.MustCompile(`^   (-\S.*?)  +(\S.*)$`)

// zeroDefault is the default urfave/cli appends to a flag whose default is its zero value,
// which says nothing the usage does not ("0 = none").
var zeroDefault = regexp.MustCompile(` \(default: (?:0s|0|false|"")\)$`)

// maxFlagColumn caps the column where flags' usages start: a longer name takes a line of
// its own, and its usage starts under the others', so that one long flag name does not
// narrow every usage.
const maxFlagColumn = 24

// layoutFlags lays out each block of consecutive flag lines again: zero defaults dropped,
// usages in a column at most maxFlagColumn wide.
func layoutFlags(text string) string {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && flagLine.MatchString(lines[j]) {
			j++
		}
		if j == i {
			out = append(out, lines[i])
			i++
			continue
		}
		col := 0
		for _, l := range lines[i:j] {
			if n := utf8.RuneCountInString(flagLine.FindStringSubmatch(l)[1]); n <= maxFlagColumn {
				col = max(col, n)
			}
		}
		for _, l := range lines[i:j] {
			m := flagLine.FindStringSubmatch(l)
			name, usage := m[1], zeroDefault.ReplaceAllString(m[2], "")
			if pad := col - utf8.RuneCountInString(name); pad >= 0 {
				out = append(out, "   "+name+strings.Repeat(" ", pad+2)+usage)
				continue
			}
			out = append(out, "   "+name, strings.Repeat(" ", col+5)+usage)
		}
		i = j
	}
	return strings.Join(out, "\n")
}

// splitFlags returns the flags of fs that every running command shares (shared), or the
// others, in their order.
func splitFlags(fs []cli.Flag, shared bool) []cli.Flag {
	names := map[string]bool{"help": true}
	for _, f := range sharedFlags() {
		names[f.Names()[0]] = true
	}
	var out []cli.Flag
	for _, f := range fs {
		if names[f.Names()[0]] == shared {
			out = append(out, f)
		}
	}
	return out
}

// runHelpTemplate is urfave/cli's CommandHelpTemplate with the flags in two groups.
const runHelpTemplate = `NAME:
   {{template "helpNameTemplate" .}}

USAGE:
   {{template "usageTemplate" .}}{{if .Description}}

DESCRIPTION:
   {{template "descriptionTemplate" .}}{{end}}{{with ownFlags .VisibleFlags}}

PARAMETERS:{{range .}}
   {{.String}}{{end}}{{end}}

SHARED OPTIONS:{{range sharedFlags .VisibleFlags}}
   {{.String}}{{end}}
`

// helpColumn finds the start of the second column of a help line: a flag or a command, two
// spaces or more, then its description.
var helpColumn = regexp.MustCompile(`^( +\S.*?  +)\S`)

// wrapHelp wraps every line of text longer than width-1 columns at spaces. A continued line
// keeps the line's indentation, and a flag's or command's description continues under its
// start (or four columns in, when that start is past the middle).
func wrapHelp(text string, width int) string {
	limit := width - 1 // the last column is left free: some terminals wrap when it is written
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if utf8.RuneCountInString(line) <= limit {
			out = append(out, line)
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		first, rest := line[:indent], line[indent:]
		hang := indent
		if m := helpColumn.FindStringSubmatch(line); m != nil && utf8.RuneCountInString(m[1]) < limit {
			first, rest = m[1], line[len(m[1]):]
			hang = utf8.RuneCountInString(m[1])
		}
		if hang > limit/2 {
			hang = min(indent+4, limit/2)
		}
		out = append(out, wrapWords(first, strings.Fields(rest), limit, strings.Repeat(" ", hang))...)
	}
	return strings.Join(out, "\n")
}

// wrapWords lays words out in lines of at most limit columns, the first starting with
// first, the others with pad (shorter than limit); a word too long for a line is cut.
func wrapWords(first string, words []string, limit int, pad string) []string {
	var lines []string
	line, empty := first, true
	if utf8.RuneCountInString(first) >= limit {
		lines, line = append(lines, strings.TrimRight(first, " ")), pad
	}
	for _, word := range words {
		if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > limit {
			lines = append(lines, line)
			line, empty = pad, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
		for utf8.RuneCountInString(line) > limit {
			r := []rune(line)
			cut := limit
			for k := limit - 1; k > len(pad)+(limit-len(pad))/2; k-- { // before a "[" in reach
				if r[k] == '[' {
					cut = k
					break
				}
			}
			lines = append(lines, string(r[:cut]))
			line = pad + string(r[cut:])
		}
	}
	return append(lines, line)
}
