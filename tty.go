package main

import (
	"io"
	"os"
	"strconv"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// termWidth returns the columns of the terminal behind w, 0 when w is no terminal or its
// width is unknown. COLUMNS, when set to a number, wins, as it does for other tools.
func termWidth(w io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return 0
	}
	return ttyColumns(f)
}
