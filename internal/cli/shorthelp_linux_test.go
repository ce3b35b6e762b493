package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments"
)

// TestShortHelpOneScreen: labrun CMD -h fits a terminal of 80x24 for every command, its
// examples whole on their lines, and points at the full help.
func TestShortHelpOneScreen(t *testing.T) {
	for _, c := range newApp(nil, nil, terminals{}, experiments.All()).Commands {
		if c.Hidden {
			continue
		}
		for _, cols := range []int{80, 120} {
			lines := screenLines(t, cols, experiments.All(), c.Name, "-h")
			if len(lines) > 24 {
				t.Errorf("%s -h at %d columns: %d lines:\n%s", c.Name, cols, len(lines), strings.Join(lines, "\n"))
			}
			checkScreen(t, cols, lines)
			text := strings.Join(lines, "\n")
			if !strings.Contains(text, "labrun "+c.Name+" --help") {
				t.Errorf("%s -h: no pointer to --help:\n%s", c.Name, text)
			}
			want := min(2, len(helpExamples(c.Description, 1000)))
			got := 0
			for _, l := range lines {
				if strings.HasPrefix(l, "  labrun ") {
					got++
				}
			}
			if got < want {
				t.Errorf("%s -h: %d examples, want %d:\n%s", c.Name, got, want, text)
			}
		}
	}
}

// TestShortAppHelpOneScreen: bare labrun, labrun -h and labrun help fit 80x24 with the usage
// at the top, every command named, and a pointer to the full list.
func TestShortAppHelpOneScreen(t *testing.T) {
	app := newApp(nil, nil, terminals{}, experiments.All())
	for _, args := range [][]string{{}, {"-h"}, {"help"}} {
		for _, cols := range []int{80, 120} {
			lines := screenLines(t, cols, experiments.All(), args...)
			text := strings.Join(lines, "\n")
			if len(lines) > 24 {
				t.Errorf("%v at %d columns: %d lines:\n%s", args, cols, len(lines), text)
			}
			checkScreen(t, cols, lines)
			if !strings.HasPrefix(lines[0], "labrun: ") || !strings.Contains(text, "\nUsage: labrun COMMAND") || !strings.Contains(text, "labrun help --all") {
				t.Errorf("%v at %d columns: no name, usage or pointer to help --all:\n%s", args, cols, text)
			}
			for _, c := range app.Commands {
				for _, name := range c.Names() {
					if !c.Hidden && !strings.Contains(text, name) {
						t.Errorf("%v at %d columns: %s not named:\n%s", args, cols, name, text)
					}
				}
			}
		}
	}
}

// TestShortHelpCutsAtWords: a description cut to fit ends at a whole word with "…", and a
// command's short help shows the flags its examples use (predict: --read-timeout, --bytes,
// --every) and no reference to a list it does not show.
func TestShortHelpCutsAtWords(t *testing.T) {
	words := regexp.MustCompile(`\S…`)
	for _, c := range newApp(nil, nil, terminals{}, experiments.All()).Commands {
		if c.Hidden {
			continue
		}
		text := runArgs(t, t.Context(), experiments.All(), false, c.Name, "-h").stdout
		if words.MatchString(text) {
			t.Errorf("%s -h: a description cut inside a word:\n%s", c.Name, text)
		}
		if strings.Contains(text, "listed above") {
			t.Errorf("%s -h: refers to a list above that -h does not show:\n%s", c.Name, text)
		}
		var used []string // the flags its examples use, the first shortHelpFlags of them
		for _, ex := range helpExamples(c.Description, 78) {
			for _, w := range strings.Fields(strings.SplitN(ex, " -- ", 2)[0]) {
				if flag, ok := strings.CutPrefix(w, "--"); ok && len(used) < shortHelpFlags {
					used = append(used, flag)
				}
			}
		}
		for _, flag := range used {
			if !strings.Contains(text, "\n  --"+flag+" ") && !strings.Contains(text, "\n  --"+flag+"\n") {
				t.Errorf("%s -h: its example uses --%s, which it does not list:\n%s", c.Name, flag, text)
			}
		}
	}
	if got := wrapCut("    ", "client profile: hc5, okhttp, go, okhttp@3.2, urlconnection", 40, 1); len(got) != 1 || got[0] != "    client profile: hc5, okhttp, go …" {
		t.Errorf("wrapCut: got %q", got)
	}
}

// TestHelpCommandAndSuggestions: labrun help [CMD] works, and a slip of the keyboard in a
// command's name gets a suggestion.
func TestHelpCommandAndSuggestions(t *testing.T) {
	if o := runArgs(t, t.Context(), experiments.All(), false, "help", "exp-a"); o.code != exitPass || !strings.Contains(o.stdout, "exp-a") {
		t.Errorf("help exp-a: exit %d, stdout %q", o.code, o.stdout)
	}
	if o := runArgs(t, t.Context(), experiments.All(), false, "help"); o.code != exitPass || !strings.Contains(o.stdout, "labrun help --all") {
		t.Errorf("help: exit %d", o.code)
	}
	if o := runArgs(t, t.Context(), experiments.All(), false, "help", "--all"); o.code != exitPass || !strings.Contains(o.stdout, "COMMANDS") {
		t.Errorf("help --all: exit %d", o.code)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"expa"}, "did you mean exp-a?"},
		{[]string{"predcit"}, "did you mean predict?"},
		{[]string{"help", "exp-z"}, "did you mean exp-a?"},
	}
	for _, tt := range tests {
		o := runArgs(t, t.Context(), experiments.All(), false, tt.args...)
		if o.code != exitUsage || !strings.Contains(o.stderr, tt.want) || o.stdout != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tt.args, o.code, o.stderr, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"exp-a", "exp-b", "predict", "read-timeout", "silent"}
	for s, want := range map[string]string{"expa": "exp-a", "read-timout": "read-timeout", "silnt": "silent", "zzzzzz": ""} {
		if got := suggest(s, names); got != want {
			t.Errorf("suggest(%q): got %q, want %q", s, got, want)
		}
	}
}
