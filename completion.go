package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// bashCompletion completes labrun's commands and flags through urfave/cli's own
// --generate-bash-completion.
const bashCompletion = `# labrun bash completion: eval "$(labrun completion bash)"
_labrun_complete() {
  local cur opts
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == "-"* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -o nospace -F _labrun_complete labrun
`

// zshCompletion does the same for zsh through bashcompinit.
const zshCompletion = `# labrun zsh completion: eval "$(labrun completion zsh)"
autoload -U +X bashcompinit && bashcompinit
` + bashCompletion

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:         "completion",
		Usage:        "print a shell completion script (bash or zsh)",
		ArgsUsage:    "bash|zsh",
		Description:  "Examples:\n   eval \"$(labrun completion bash)\"   # in ~/.bashrc\n   eval \"$(labrun completion zsh)\"    # in ~/.zshrc",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("completion takes one shell, bash or zsh, got %d arguments", c.NArg())
			}
			switch c.Args().First() {
			case "bash":
				fmt.Fprint(c.App.Writer, bashCompletion)
			case "zsh":
				fmt.Fprint(c.App.Writer, zshCompletion)
			default:
				return usagef("completion takes bash or zsh, got %q", c.Args().First())
			}
			return nil
		},
	}
}
