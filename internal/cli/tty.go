package cli

import (
	"io"
	"os"
	"strconv"
)

// detectTerminals says which of stdout and stderr are terminals, and how wide.
func detectTerminals(stdout, stderr io.Writer) terminals {
	return terminals{
		stdout: isTerminal(stdout), stderr: isTerminal(stderr),
		outWidth: termWidth(stdout), errWidth: termWidth(stderr),
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// termWidth returns the columns of the terminal behind w, 0 when w is no terminal (output
// to a pipe or a file keeps the full layout, whatever COLUMNS says) or its width is
// unknown. On a terminal, COLUMNS, when set to a number, wins, as it does for other tools.
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return 0
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return ttyColumns(f)
}
