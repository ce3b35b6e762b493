package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/vocab"
)

// -h is help on one screen: what the command does, the flags that matter most, two examples
// whole, and where the rest is (--help, a page of docs/). --help is the full list.

// shortHelpFlags is how many flags the short help shows.
const shortHelpFlags = 4

// docsPage is the page of docs/ that documents a command.
func docsPage(name string) string {
	switch {
	case strings.HasPrefix(name, "exp-") || name == "demo" || name == "all" || name == "list":
		return "docs/experiments.md"
	case name == "predict" || name == "probe" || name == "serve":
		return "docs/" + name + ".md"
	case name == "report":
		return "docs/reports.md"
	case name == "defaults":
		return "docs/clients.md"
	}
	return "README.md"
}

// wantsShortHelp returns the command whose short help args ask for ("" for the app's), and
// whether they do: a -h before any "--".
func wantsShortHelp(app *cli.App, args []string) (string, bool) {
	cmd := ""
	for _, a := range args {
		switch {
		case a == "--":
			return "", false
		case a == "-h":
			return cmd, true
		case cmd == "" && !strings.HasPrefix(a, "-") && app.Command(a) != nil:
			cmd = a
		}
	}
	return "", false
}

const shortHelpLines = 23 // a 24-line screen less the prompt's

// writeShortHelp writes command c's help on one screen of width columns, each flag's
// description in two lines, or one where two do not fit.
func writeShortHelp(w io.Writer, c *cli.Command, width int) {
	if width <= 0 {
		width = helpWidth
	}
	var lines []string
	for _, usageLines := range []int{2, 1} {
		if lines = shortHelp(c, width-1, usageLines); len(lines) <= shortHelpLines {
			break
		}
	}
	io.WriteString(w, strings.Join(lines, "\n")+"\n")
}

// shortHelp is command c's short help within limit columns.
func shortHelp(c *cli.Command, limit, usageLines int) []string {
	var lines []string
	add := func(s, indent string) {
		lines = append(lines, wrapWords(indent, strings.Fields(s), limit, indent+"  ")...)
	}
	add("labrun "+c.Name+": "+c.Usage, "")
	lines = append(lines, "")
	usage := "labrun " + c.Name + " [options]"
	if c.ArgsUsage != "" {
		usage += " " + c.ArgsUsage
	}
	add("Usage: "+usage, "")
	ex := helpExamples(c.Description, limit-2)
	if fs := mattering(c, ex); len(fs) > 0 {
		lines = append(lines, "", "Options that matter most:")
		for _, f := range fs {
			name := "--" + f.Names()[0]
			if df, ok := f.(cli.DocGenerationFlag); ok && df.TakesValue() {
				name += " " + strings.ToUpper(strings.ReplaceAll(placeholder(f), "-", "_"))
			}
			usage := ""
			if df, ok := f.(cli.DocGenerationFlag); ok {
				usage = df.GetUsage()
			}
			lines = append(lines, cutTo("  "+name, limit))
			lines = append(lines, wrapCut("    ", usage, limit, usageLines)...)
		}
	}
	if len(ex) > 0 {
		lines = append(lines, "", "Examples:")
		for _, e := range ex {
			lines = append(lines, "  "+e)
		}
	}
	lines = append(lines, "")
	add("Every option: labrun "+c.Name+" --help · the manual: "+docsPage(c.Name), "")
	return lines
}

// wrapCut wraps s into at most n lines of limit columns after indent, cut at a word with "…".
func wrapCut(indent, s string, limit, n int) []string {
	lines := wrapWords(indent, strings.Fields(s), limit, indent)
	if len(lines) <= n {
		return lines
	}
	words := strings.Fields(strings.TrimPrefix(lines[n-1], indent))
	for len(words) > 1 && utf8.RuneCountInString(indent+strings.Join(words, " ")+" …") > limit {
		words = words[:len(words)-1]
	}
	last := strings.TrimRight(strings.Join(words, " "), ",;:(")
	return append(lines[:n-1:n-1], indent+last+" …")
}

// writeShortAppHelp writes labrun's own help on one screen of width columns.
func writeShortAppHelp(w io.Writer, app *cli.App, exps []experiments.Experiment, width int) {
	if width <= 0 {
		width = helpWidth
	}
	limit := width - 1
	var lines []string
	add := func(s, indent string) {
		lines = append(lines, wrapWords(indent, strings.Fields(s), limit, indent+"  ")...)
	}
	add("labrun: "+app.Usage, "")
	lines = append(lines, "", "Usage: labrun COMMAND [options]")
	for _, ex := range strings.SplitN(app.UsageText, "\n", 3)[:2] {
		lines = append(lines, cutTo("  "+ex, limit))
	}
	isExp := map[string]bool{}
	var names []string
	for _, e := range exps {
		isExp[e.Info().Name] = true
		names = append(names, strings.Join(app.Command(e.Info().Name).Names(), "\x1f"))
	}
	lines = append(lines, "", "Experiments (labrun list: what each shows and how long it takes):")
	for _, l := range wrapWords("  ", strings.Fields(strings.Join(names, ", ")), limit, "  ") {
		lines = append(lines, strings.ReplaceAll(l, "\x1f", " ")) // a name and its alias on one line
	}
	lines = append(lines, "", "Other commands:")
	col := 0
	for _, c := range app.Commands {
		if !c.Hidden && !isExp[c.Name] {
			col = max(col, len(c.Name))
		}
	}
	for _, c := range app.Commands {
		if !c.Hidden && !isExp[c.Name] {
			lines = append(lines, wrapCut(fmt.Sprintf("  %-*s  ", col, c.Name), c.Usage, limit, 1)...)
		}
	}
	lines = append(lines, "")
	add("One command: labrun CMD -h · every command and option: labrun help --all", "")
	io.WriteString(w, strings.Join(lines, "\n")+"\n")
}

// placeholder is a flag's value placeholder: its kind ("duration", "int", "string").
func placeholder(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "duration"
	case *cli.IntFlag:
		return "n"
	case *cli.Float64Flag:
		return "x"
	}
	return "value"
}

// keyFlags are the flags a command's short help shows first, where its own flags' order
// does not put them first.
var keyFlags = map[string][]string{
	"probe": {"expect", "only", "read-timeout", "format"},
}

// mattering returns the flags c's short help shows, at most shortHelpFlags: those its
// examples use, its key ones, its own, then --format, --repeat, --out.
func mattering(c *cli.Command, examples []string) []cli.Flag {
	var names []string
	for _, e := range examples {
		for _, word := range strings.Fields(e) {
			if word == "--" {
				break
			}
			if name, ok := strings.CutPrefix(word, "--"); ok {
				names = append(names, strings.SplitN(name, "=", 2)[0])
			}
		}
	}
	names = append(names, keyFlags[c.Name]...)
	visible := c.VisibleFlags()
	for _, f := range splitFlags(visible, false) {
		names = append(names, f.Names()[0])
	}
	names = append(names, "format", "repeat", "out")
	var out []cli.Flag
	for _, name := range names {
		if f := flagNamed(visible, name); f != nil && len(out) < shortHelpFlags && !containsFlag(out, name) {
			out = append(out, f)
		}
	}
	return out
}

func containsFlag(fs []cli.Flag, name string) bool {
	for _, f := range fs {
		if f.Names()[0] == name {
			return true
		}
	}
	return false
}

// helpExamples returns up to two example command lines from a description's "Examples:"
// block, each whole within limit columns: a longer one loses its comment, or is left out,
// never wrapped.
func helpExamples(desc string, limit int) []string {
	_, block, ok := strings.Cut(desc, "Examples:")
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "labrun ") {
			if line != "" && len(out) > 0 {
				break
			}
			continue
		}
		if cmd, _, ok := strings.Cut(line, "  #"); ok && utf8.RuneCountInString(line) > limit {
			line = strings.TrimSpace(cmd) // the command whole, without its comment
		}
		if utf8.RuneCountInString(line) <= limit && len(out) < 2 {
			out = append(out, line)
		}
	}
	return out
}

// cutTo cuts s to limit columns, ending it with "…" when cut.
func cutTo(s string, limit int) string {
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return strings.TrimRight(string(r[:limit-1]), " ") + "…"
}

// suggest returns the name of candidates closest to s, when one is close enough to be a
// slip of the keyboard ("expa" for exp-a, "read-timout" for read-timeout), else "".
func suggest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := vocab.EditDistance(strings.ToLower(s), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, min(3, utf8.RuneCountInString(s)/3)) {
		return ""
	}
	return best
}

// didYouMean is " (did you mean X?)" for the closest of candidates to s, or "".
func didYouMean(s string, candidates []string, prefix string) string {
	if c := suggest(s, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %s%s?)", prefix, c)
	}
	return ""
}

// commandNames are the names and aliases of app's visible commands.
func commandNames(app *cli.App) []string {
	var out []string
	for _, c := range app.Commands {
		if !c.Hidden {
			out = append(out, c.Names()...)
		}
	}
	return out
}
