package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/probe"
)

// The documentation's runnable examples. A fenced code block whose info string is
// "sh runnable" holds command lines that TestDocsExamples runs in-process through run, one
// per line:
//
//	labrun ARGS               # a comment: exit 0 is expected
//	labrun ARGS               # exit N: why (N is the expected exit code)
//
// Blank lines and lines that are only a comment are skipped; anything else fails the test,
// so that a block marked runnable never holds a line nobody checks. Arguments are split on
// spaces, with single or double quotes around an argument that holds spaces; pipes,
// redirections, variables and the like are refused, since nothing here runs a shell.
// The convention is documented in docs/design.md.

// docExample is one runnable command line of the documentation.
type docExample struct {
	file string // path relative to the module root
	line int    // 1-based line number in file
	text string // the line as written
	args []string
	exit int // the expected exit code
}

// docPages returns the pages whose runnable examples are checked: README.md and docs/*.md.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, pages...)
}

// isRunnableFence reports whether a fence's info string marks the block runnable: its words
// include "runnable" (the first word is the language, "sh").
func isRunnableFence(info string) bool {
	for _, w := range strings.Fields(info) {
		if w == "runnable" {
			return true
		}
	}
	return false
}

// parseDocExamples returns the runnable examples of a Markdown page.
func parseDocExamples(file string, src []byte) ([]docExample, error) {
	var (
		out      []docExample
		fence    string // the opening fence of the block we are in, "" outside blocks
		runnable bool
	)
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence == "" {
			if f := fenceOf(trimmed); f != "" {
				fence, runnable = f, isRunnableFence(strings.TrimLeft(trimmed, f[:1]))
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			fence, runnable = "", false
			continue
		}
		if !runnable || trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		ex, err := parseDocLine(trimmed)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, n, err)
		}
		ex.file, ex.line = file, n
		out = append(out, ex)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if fence != "" {
		return nil, fmt.Errorf("%s: code block opened with %s never closed", file, fence)
	}
	return out, nil
}

// fenceOf returns the fence (``` or ~~~, three or more) that opens a code block on line, or "".
func fenceOf(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// parseDocLine reads one line of a runnable block: "labrun ARGS [# exit N ...]".
func parseDocLine(line string) (docExample, error) {
	cmd, comment, _ := strings.Cut(line, " #")
	ex := docExample{text: line}
	if c := strings.TrimSpace(comment); strings.HasPrefix(c, "exit ") {
		word := strings.TrimRight(strings.Fields(c)[1], ":,;.")
		n, err := strconv.Atoi(word)
		if err != nil {
			return docExample{}, fmt.Errorf("%q: bad exit code %q after # exit", line, word)
		}
		ex.exit = n
	}
	words, err := splitDocArgs(cmd)
	if err != nil {
		return docExample{}, fmt.Errorf("%q: %v", line, err)
	}
	if len(words) == 0 || words[0] != "labrun" {
		return docExample{}, fmt.Errorf("%q: a runnable line must start with labrun", line)
	}
	ex.args = words
	return ex, nil
}

// splitDocArgs splits a command line on spaces, honouring single and double quotes. It refuses
// what only a shell could run.
func splitDocArgs(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		quote rune
		in    bool // inside a word
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words, in = append(words, cur.String()), false
				cur.Reset()
			}
		case strings.ContainsRune("|&;<>$`(){}*?\\", r):
			return nil, fmt.Errorf("%q needs a shell; runnable examples run without one", r)
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// TestDocsExamples runs every runnable example of README.md and docs/*.md in-process and
// checks its exit code; a usage error (exit 2) must also print nothing on stdout and one
// "labrun: " line on stderr, as the README's exit codes promise.
func TestDocsExamples(t *testing.T) {
	var all []docExample
	for _, page := range docPages(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		exs, err := parseDocExamples(page, src)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, exs...)
	}
	// The convention must not rot silently: pages without a single runnable example mean the
	// marking changed, or this test stopped finding it.
	const atLeast = 10
	if len(all) < atLeast {
		t.Fatalf("found %d runnable examples in README.md and docs/*.md, want at least %d (blocks marked ```sh runnable)", len(all), atLeast)
	}
	for _, ex := range all {
		t.Run(fmt.Sprintf("%s:%d", ex.file, ex.line), func(t *testing.T) {
			if ex.exit != exitUsage && runsSomething(ex.args) {
				testenv.Slow(t, "a docs example that runs an experiment or a probe")
			}
			var stdout, stderr bytes.Buffer
			got := run(ex.args, &stdout, &stderr)
			if got != ex.exit {
				t.Fatalf("%s:%d: %s\nexit %d, want %d\nstderr:\n%s", ex.file, ex.line, ex.text, got, ex.exit, stderr.String())
			}
			if ex.exit != exitUsage {
				return
			}
			if stdout.Len() != 0 {
				t.Errorf("%s:%d: %s\nexit 2 wrote to stdout:\n%s", ex.file, ex.line, ex.text, stdout.String())
			}
			if msg := stderr.String(); !strings.HasPrefix(msg, "labrun: ") || strings.Count(msg, "\n") != 1 {
				t.Errorf("%s:%d: %s\nstderr %q, want one line starting with \"labrun: \"", ex.file, ex.line, ex.text, msg)
			}
		})
	}
}

// runsSomething reports whether a labrun command line runs an experiment, a probe or a
// server, rather than answering at once (predict, defaults, list, help).
func runsSomething(args []string) bool {
	if len(args) < 2 {
		return false
	}
	switch cmd := args[1]; {
	case cmd == "all", cmd == "demo", cmd == "probe", cmd == "serve", strings.HasPrefix(cmd, "exp-"):
		return true
	}
	return false
}

func TestDocsParseExamples(t *testing.T) {
	page := "# title\n\n" +
		"```sh runnable\n" +
		"labrun list\n" +
		"# a comment line\n" +
		"\n" +
		"labrun exp-b --pool 0           # exit 2: the flag is named\n" +
		"labrun predict --defaults 'hc5' # the kernel gives up\n" +
		"```\n\n" +
		"```sh\n" +
		"labrun all   # not marked: never run\n" +
		"```\n" +
		"````sh runnable\n" +
		"labrun defaults --format \"json\"  # exit 0\n" +
		"````\n"
	got, err := parseDocExamples("page.md", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	want := []docExample{
		{line: 4, args: []string{"labrun", "list"}, exit: 0},
		{line: 7, args: []string{"labrun", "exp-b", "--pool", "0"}, exit: 2},
		{line: 8, args: []string{"labrun", "predict", "--defaults", "hc5"}, exit: 0},
		{line: 15, args: []string{"labrun", "defaults", "--format", "json"}, exit: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d examples, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.line != w.line || strings.Join(g.args, "|") != strings.Join(w.args, "|") || g.exit != w.exit {
			t.Errorf("example %d: got line %d args %q exit %d, want line %d args %q exit %d", i, g.line, g.args, g.exit, w.line, w.args, w.exit)
		}
	}

	bad := []struct{ name, block string }{
		{"not labrun", "```sh runnable\ncurl http://127.0.0.1/\n```\n"},
		{"a pipe", "```sh runnable\nlabrun list | head -1\n```\n"},
		{"a variable", "```sh runnable\nlabrun report $RUN\n```\n"},
		{"bad exit", "```sh runnable\nlabrun list # exit two\n```\n"},
		{"unclosed quote", "```sh runnable\nlabrun report 'run.json\n```\n"},
		{"unclosed block", "```sh runnable\nlabrun list\n"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := parseDocExamples("bad.md", []byte(tt.block)); err == nil {
				t.Errorf("got %+v, nil error; want an error", got)
			}
		})
	}
}

// TestReadmeDurations: the times README.md quotes for exp-a and the range of labrun list
// are experiments.Takes, the figures labrun list prints.
func TestReadmeDurations(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(data)), " ")
	secs := func(name string) string { return strconv.FormatFloat(experiments.Takes(name).Seconds(), 'f', 1, 64) }
	shortest, longest := "exp-a", "exp-a"
	for _, e := range experiments.All() {
		n := e.Info().Name
		if experiments.Takes(n) < experiments.Takes(shortest) {
			shortest = n
		}
		if experiments.Takes(n) > experiments.Takes(longest) {
			longest = n
		}
	}
	for _, want := range []string{
		"labrun exp-a # about " + secs("exp-a") + " s",
		"`labrun exp-a` takes about " + secs("exp-a") + " s",
		"(" + secs(shortest) + " s for " + shortest + " to " + secs(longest) + " s for " + longest + ")",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q (experiments.Takes)", want)
		}
	}
}

// TestShortHelpExamples runs every example a command's -h prints, as printed, through run:
// each must exit 0 (or 3, inconclusive on a loaded machine). What labrun does not run itself is left out, saying why: a shell's part of
// a line (after a pipe), a server that serves until a signal, and `all`, the whole suite,
// which make report runs. Examples that answer at once run in -short; those that run an
// experiment or a probe run in the conformance tier.
func TestShortHelpExamples(t *testing.T) {
	skip := map[string]string{
		"serve": "it serves until a signal (TestServe* start it)",
		"all":   "the whole suite (make report runs it)",
	}
	for _, c := range newApp(nil, nil, terminals{}, experiments.All()).Commands {
		if c.Hidden {
			continue
		}
		for _, line := range helpExamples(c.Description, helpWidth-3) {
			t.Run(line, func(t *testing.T) {
				if why := skip[c.Name]; why != "" {
					t.Skipf("%s: %s", c.Name, why)
				}
				cmd, _, _ := strings.Cut(line, " #")
				cmd, _, piped := strings.Cut(cmd, " | ") // the shell's part is not labrun's
				if piped {
					t.Logf("running %q, labrun's part of the line", cmd)
				}
				args, err := splitDocArgs(strings.ReplaceAll(cmd, probe.Placeholder, "URL\x00"))
				if err != nil {
					t.Fatalf("%s -h: %q: %v", c.Name, line, err)
				}
				for i := range args {
					args[i] = strings.ReplaceAll(args[i], "URL\x00", probe.Placeholder)
				}
				if runsSomething(args) {
					testenv.Slow(t, "an example that runs an experiment or a probe")
				}
				if len(args) == 2 && runsSomething(args) {
					t.Skipf("%s at its defaults: TestRowsPinned runs every experiment so", c.Name)
				}
				if runsSomething(args) {
					t.Parallel() // two at a time (GOMAXPROCS): exit 3 allows what noise explains
				}
				for i, a := range args {
					if a == "--out" && i+1 < len(args) {
						if _, err := os.Stat(args[i+1]); os.IsNotExist(err) {
							t.Cleanup(func() { os.RemoveAll(args[i+1]) })
						}
					}
				}
				var stdout, stderr bytes.Buffer
				// 3: no row failed, the machine's noise explains a miss (a loaded machine).
				if got := run(args, &stdout, &stderr); got != exitPass && got != exitInconclusive {
					t.Errorf("%s -h prints %q, which exits %d, want 0:\n%s%s", c.Name, line, got, stdout.String(), stderr.String())
				}
			})
		}
	}
}
