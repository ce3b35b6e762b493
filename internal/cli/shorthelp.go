package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

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

// writeShortHelp writes command c's help on one screen of width columns.
func writeShortHelp(w io.Writer, c *cli.Command, width int) {
	if width <= 0 {
		width = helpWidth
	}
	limit := width - 1
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
	if fs := mattering(c); len(fs) > 0 {
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
			usage = cutTo(usage, limit-4)
			lines = append(lines, cutTo("  "+name, limit), "    "+usage)
		}
	}
	if ex := helpExamples(c.Description, limit-2); len(ex) > 0 {
		lines = append(lines, "", "Examples:")
		for _, e := range ex {
			lines = append(lines, "  "+e)
		}
	}
	lines = append(lines, "")
	add("Every option: labrun "+c.Name+" --help · the manual: "+docsPage(c.Name), "")
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

// mattering returns the flags the short help of c shows: its own visible ones first, in
// their order, then the shared ones that matter to a first run (--format, --repeat, --out),
// at most shortHelpFlags.
func mattering(c *cli.Command) []cli.Flag {
	var out []cli.Flag
	visible := c.VisibleFlags()
	for _, name := range keyFlags[c.Name] {
		for _, f := range visible {
			if f.Names()[0] == name {
				out = append(out, f)
			}
		}
	}
	for _, f := range splitFlags(visible, false) {
		if len(out) < shortHelpFlags {
			out = append(out, f)
		}
	}
	for _, name := range []string{"format", "repeat", "out"} {
		for _, f := range visible {
			if f.Names()[0] == name && len(out) < shortHelpFlags && !containsFlag(out, name) {
				out = append(out, f)
			}
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
