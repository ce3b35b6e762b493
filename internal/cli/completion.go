package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/probe"
	"github.com/labrun/labrun/report"
)

// Shell completion. Each script asks labrun itself what fits (the hidden command
// __complete, given the words typed so far, the last one being the word under the cursor),
// so that the candidates always match the commands and flags of the binary in use: commands,
// the flags of the command typed (after it, not only at the top level), the values of flags
// that take one of a few words, and nothing for a value labrun cannot guess, where the shell
// falls back to file names.

const bashCompletion = `# labrun bash completion: eval "$(labrun completion bash)"
_labrun_complete() {
  local IFS=$'\n'
  COMPREPLY=($(labrun __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _labrun_complete labrun
`

const zshCompletion = `# labrun zsh completion: eval "$(labrun completion zsh)"
_labrun_complete() {
  local -a cands
  cands=("${(@f)$(labrun __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ -n "${cands[1]}" ]]; then
    compadd -- "${cands[@]}"
  else
    _files
  fi
}
compdef _labrun_complete labrun
`

const fishCompletion = `# labrun fish completion: labrun completion fish | source
function __labrun_complete
    set -l words (commandline -opc) (commandline -ct)
    labrun __complete $words[2..-1] 2>/dev/null
end
complete -c labrun -a '(__labrun_complete)'
`

// shells are the completion scripts by shell name.
var shells = []struct{ name, script string }{
	{"bash", bashCompletion}, {"zsh", zshCompletion}, {"fish", fishCompletion},
}

func shellNames() []string {
	var names []string
	for _, s := range shells {
		names = append(names, s.name)
	}
	return names
}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: "Examples:\n   eval \"$(labrun completion bash)\"   # in ~/.bashrc\n" +
			"   eval \"$(labrun completion zsh)\"    # in ~/.zshrc, after compinit\n" +
			"   labrun completion fish | source     # in ~/.config/fish/config.fish",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("completion takes one shell, %s, got %d arguments", strings.Join(shellNames(), ", "), c.NArg())
			}
			for _, s := range shells {
				if s.name == c.Args().First() {
					fmt.Fprint(c.App.Writer, s.script)
					return nil
				}
			}
			return usagef("completion takes %s, got %q", strings.Join(shellNames(), ", "), c.Args().First())
		},
	}
}

// choices lists, per command, the flags that take one of a few words, and those words.
type choices map[string]map[string]choice

// choice is the words a flag takes; list: several, comma-separated; with: other words when
// the command line has the flag named by the key (probe --only's gRPC scenarios with --grpc).
type choice struct {
	words []string
	list  bool
	with  map[string][]string
}

// newChoices gathers the words of the common flags for every command that has them:
// --format's, and --client's profiles that the command accepts (clients, by command); of
// every parameter with Choices, from the parameters themselves; and probe --only's scenarios.
func newChoices(cmds []*cli.Command, params map[string][]param.Param, clients map[string][]string) choices {
	ch := choices{}
	var formats []string
	for _, f := range report.Formats() {
		formats = append(formats, string(f))
	}
	for _, c := range cmds {
		ch[c.Name] = map[string]choice{}
		for _, f := range c.Flags {
			if !visible(f) {
				continue
			}
			switch f.Names()[0] {
			case "client":
				ch[c.Name]["client"] = choice{words: clients[c.Name]}
			case "format":
				ch[c.Name]["format"] = choice{words: formats}
			}
		}
		for _, p := range params[c.Name] {
			if len(p.Choices) > 0 {
				ch[c.Name][p.Name] = choice{words: p.Choices}
			}
		}
	}
	var scenarios []string
	for _, sc := range probe.Scenarios() {
		scenarios = append(scenarios, sc.Name)
	}
	ch["probe"]["only"] = choice{words: scenarios, list: true, with: map[string][]string{"--grpc": probe.GRPCScenarioNames()}}
	return ch
}

// candidates are the words of ch that may complete cur, given the words before it: for a
// list, the item after cur's last comma, each offered with what precedes it.
func (ch choice) candidates(cur string, before []string) []string {
	words := ch.words
	for flag, alt := range ch.with {
		if slices.Contains(before, flag) {
			words = alt
		}
	}
	if !ch.list {
		return withPrefix(words, cur)
	}
	done, last := "", cur
	if i := strings.LastIndexByte(cur, ','); i >= 0 {
		done, last = cur[:i+1], cur[i+1:]
	}
	var out []string
	for _, w := range withPrefix(words, last) {
		if !slices.Contains(strings.Split(done, ","), w) {
			out = append(out, done+w)
		}
	}
	return out
}

// completeCommand is the hidden command the scripts call.
func completeCommand(ch choices) *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		SkipFlagParsing: true,
		HideHelp:        true,
		Action: func(c *cli.Context) error {
			for _, cand := range complete(c.App, ch, c.Args().Slice()) {
				fmt.Fprintln(c.App.Writer, cand)
			}
			return nil
		},
	}
}

// complete returns the candidates for the last of words (the word under the cursor, "" for
// a new word), given the words before it. Nothing means "no idea": the shell then completes
// file names.
func complete(app *cli.App, ch choices, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var cmd *cli.Command
	if len(before) > 0 {
		cmd = app.Command(before[0])
	}
	if cmd == nil {
		if len(before) > 0 {
			return nil // an unknown command: nothing fits
		}
		var cands []string
		for _, c := range app.VisibleCommands() {
			cands = append(cands, c.Names()...)
		}
		if strings.HasPrefix(cur, "-") {
			cands = []string{"--help", "--version"}
		}
		return withPrefix(cands, cur)
	}
	if len(before) > 1 {
		if f := findFlag(cmd, before[len(before)-1]); f != nil && takesValue(f) {
			return ch[cmd.Name][f.Names()[0]].candidates(cur, before)
		}
	}
	switch {
	case strings.HasPrefix(cur, "-"):
		var cands []string
		for _, f := range cmd.Flags {
			name := "--" + f.Names()[0]
			if visible(f) && !slices.Contains(before, name) {
				cands = append(cands, name)
			}
		}
		return withPrefix(append(cands, "--help"), cur)
	case cmd.Name == "completion" && len(before) == 1:
		return withPrefix(shellNames(), cur)
	}
	return nil
}

// visible reports whether help lists f: a hidden flag (--client of an experiment that
// refuses it) is not offered either.
func visible(f cli.Flag) bool {
	v, ok := f.(cli.VisibleFlag)
	return !ok || v.IsVisible()
}

// findFlag returns cmd's flag named by word ("--client", "-q"), or nil.
func findFlag(cmd *cli.Command, word string) cli.Flag {
	name := strings.TrimLeft(word, "-")
	if name == word || strings.Contains(name, "=") {
		return nil
	}
	return flagNamed(cmd.Flags, name)
}

func takesValue(f cli.Flag) bool {
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}

func withPrefix(cands []string, prefix string) []string {
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}
