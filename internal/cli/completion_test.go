package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/rules"
)

// completions asks labrun for the candidates of the last word, as the scripts do.
func completions(t *testing.T, words ...string) []string {
	t.Helper()
	got := runArgs(t, context.Background(), experiments.All(), false, append([]string{"__complete"}, words...)...)
	if got.code != 0 || got.stderr != "" {
		t.Fatalf("__complete %q: exit %d, stderr %q", words, got.code, got.stderr)
	}
	return strings.Fields(got.stdout)
}

func TestComplete(t *testing.T) {
	tests := []struct {
		words []string
		want  string // candidates joined by spaces; "" for none
	}{
		{[]string{"exp-"}, prefixed(experimentNames(), "exp-")},
		{[]string{"co"}, "completion"},
		{[]string{"h"}, "http2"}, // exp-h's alias; no help command
		{[]string{"tri"}, "trickle"},
		{[]string{"probe", "--expect", "ok"}, prefixed(rules.Names(rules.Presets()), "ok")},
		{[]string{"probe", "--expect", ""}, strings.Join(rules.Names(rules.Presets()), " ")},
		{[]string{"probe", "--only", "tri"}, "trickle"},
		{[]string{"probe", "--only", "silent,tri"}, "silent,trickle"},
		{[]string{"probe", "--only", "silent,sil"}, ""}, // a scenario given is not offered again
		{[]string{"probe", "--only", "tls-st"}, "tls-stall"},
		{[]string{"probe", "--grpc", "--only", "grpc-h"}, "grpc-hang"},
		{[]string{"probe", "--only", "grpc-h"}, ""},
		{[]string{"help"}, ""},
		{[]string{"exp-b", "--po"}, "--pool"},
		{[]string{"exp-b", "--cl"}, "--client"},
		{[]string{"exp-b", "--client", ""}, strings.Join(experiments.ProfileNames(), " ")},
		{[]string{"exp-b", "--client", "ok"}, prefixed(experiments.ProfileNames(), "ok")},
		{[]string{"exp-d", "--cl"}, ""}, // exp-d compares profiles by design: no --client
		{[]string{"exp-h", "--client", ""}, ""},
		{[]string{"all", "--format", ""}, "table json markdown csv junit"},
		{[]string{"predict", "--defaults", "h"}, prefixed(rules.Names(rules.Presets()), "h")},
		{[]string{"predict", "--format", "j"}, "json junit"},
		{[]string{"completion", ""}, "bash zsh fish"},
		{[]string{"exp-a", "--read-timeout", ""}, ""}, // a duration: nothing to offer
		{[]string{"report", ""}, ""},                  // a file: the shell's own completion
		{[]string{"nope", "--"}, ""},
		{[]string{"-"}, "--help --version"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.words, " "), func(t *testing.T) {
			if got := strings.Join(completions(t, tt.words...), " "); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	// A flag already given is not offered again.
	for _, c := range completions(t, "exp-b", "--pool", "3", "--") {
		if c == "--pool" {
			t.Errorf("--pool offered again")
		}
	}
}

// TestCompletionScripts runs each generated script in its shell, with this test binary on
// PATH as labrun, and checks what the shell would offer.
func TestCompletionScripts(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "labrun")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), beMain+"=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	script := func(shell string) string {
		got := runArgs(t, context.Background(), experiments.All(), false, "completion", shell)
		if got.code != 0 {
			t.Fatalf("completion %s: exit %d", shell, got.code)
		}
		return got.stdout
	}

	t.Run("bash", func(t *testing.T) {
		if _, err := exec.LookPath("bash"); err != nil {
			t.Skip("no bash here")
		}
		for _, tt := range []struct{ line, want string }{
			{"labrun exp-b --cl", "--client"},
			{"labrun exp-b --client okhttp@", prefixed(experiments.ProfileNames(), "okhttp@")},
			{"labrun all --format ", "table json markdown csv junit"},
			{"labrun comp", "completion"},
			{"labrun tri", "trickle"},
			{"labrun probe --expect netty", "netty"},
			{"labrun probe --only silent,tric", "silent,trickle"},
		} {
			words := strings.Split(tt.line, " ")
			prog := script("bash") + `
COMP_WORDS=(` + quoteWords(words) + `)
COMP_CWORD=` + strconv.Itoa(len(words)-1) + `
_labrun_complete
echo "${COMPREPLY[*]}"
complete -p labrun
`
			cmd := exec.Command("bash", "--norc", "--noprofile", "-c", prog)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%q: %v\n%s", tt.line, err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if lines[0] != tt.want {
				t.Errorf("%q: bash offers %q, want %q", tt.line, lines[0], tt.want)
			}
			// No -o nospace: a completed word is followed by a space.
			if spec := lines[len(lines)-1]; strings.Contains(spec, "nospace") || !strings.Contains(spec, "_labrun_complete") {
				t.Errorf("completion spec %q, want the function without nospace", spec)
			}
		}
	})

	t.Run("zsh", func(t *testing.T) {
		if _, err := exec.LookPath("zsh"); err != nil {
			t.Skip("no zsh here")
		}
		cmd := exec.Command("zsh", "-f", "-c", "autoload -U compinit && compinit -u && "+script("zsh")+"\nwhence -w _labrun_complete")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "function") {
			t.Errorf("zsh did not load the script: %v\n%s", err, out)
		}
	})

	t.Run("fish", func(t *testing.T) {
		if _, err := exec.LookPath("fish"); err != nil {
			t.Skip("no fish here")
		}
		for _, tt := range []struct{ line, want string }{
			{"labrun exp-b --client o", "okhttp"},
			{"labrun tri", "trickle"},
			{"labrun probe --expect net", "netty"},
			{"labrun probe --only silent,tri", "silent,trickle"},
		} {
			cmd := exec.Command("fish", "--no-config", "-c", script("fish")+"\ncomplete -C '"+tt.line+"'")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tt.want) {
				t.Errorf("%q: fish offers %q (%v), want %s", tt.line, out, err, tt.want)
			}
		}
	})
}

func quoteWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + w + "'"
	}
	return strings.Join(q, " ")
}

// prefixed lists the names that start with prefix, space-separated, as completion offers them.
func prefixed(names []string, prefix string) string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return strings.Join(out, " ")
}

// experimentNames lists the experiments' commands.
func experimentNames() []string {
	var out []string
	for _, e := range experiments.All() {
		out = append(out, e.Info().Name)
	}
	return out
}
