package cli

import (
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

// TestHelpCommandAndSuggestions: labrun help [CMD] works, and a slip of the keyboard in a
// command's name gets a suggestion.
func TestHelpCommandAndSuggestions(t *testing.T) {
	if o := runArgs(t, t.Context(), experiments.All(), false, "help", "exp-a"); o.code != exitPass || !strings.Contains(o.stdout, "exp-a") {
		t.Errorf("help exp-a: exit %d, stdout %q", o.code, o.stdout)
	}
	if o := runArgs(t, t.Context(), experiments.All(), false, "help"); o.code != exitPass || !strings.Contains(o.stdout, "COMMANDS") {
		t.Errorf("help: exit %d", o.code)
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
