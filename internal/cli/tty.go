package cli

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/term"
)

// detectTerminals says which of stdout and stderr are terminals, and how wide.
func detectTerminals(stdout, stderr io.Writer) terminals {
	return terminals{
		stdout: isTerminal(stdout), stderr: isTerminal(stderr),
		outWidth: termWidth(stdout), errWidth: termWidth(stderr),
	}
}

// isTerminal reports whether w is a terminal: a file whose descriptor answers the terminal
// ioctl (x/term), not merely a character device, which /dev/null is too.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termWidth returns the columns of the terminal behind w, 0 when w is no terminal (output
// to a pipe or a file keeps the full layout, whatever COLUMNS says) or its width is
// unknown. On a terminal, COLUMNS, when set to a number, wins, as it does for other tools.
func termWidth(w io.Writer) int {
	if !isTerminal(w) {
		return 0
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	cols, _, err := term.GetSize(int(w.(*os.File).Fd()))
	if err != nil {
		return 0
	}
	return cols
}
