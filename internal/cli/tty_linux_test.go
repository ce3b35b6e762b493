package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/labrun/labrun/experiments"
)

// openPTY opens a pseudo-terminal of cols columns and returns its controlling side (what a
// terminal emulator reads) and the terminal side (what labrun writes to).
func openPTY(t *testing.T, cols int) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: 40}); err != nil {
		t.Fatal(err)
	}
	return ptm, pts
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// screenLines runs labrun with stdout and stderr on a terminal of cols columns and returns
// what the terminal showed, split where the cursor goes back to the line's start (a newline,
// or the status line's carriage return), escape codes removed.
func screenLines(t *testing.T, cols int, exps []experiments.Experiment, args ...string) []string {
	t.Helper()
	t.Setenv("COLUMNS", "")
	ptm, pts := openPTY(t, cols)
	out := make(chan string)
	go func() {
		var b strings.Builder
		r := bufio.NewReader(ptm)
		for {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				break
			}
		}
		out <- b.String()
	}()
	code := runContext(context.Background(), append([]string{"labrun"}, args...), pts, pts, detectTerminals(pts, pts), exps)
	pts.Close()
	text := <-out
	if code != exitPass && code != exitFail && code != exitInconclusive { // 3: a loaded machine's noise
		t.Fatalf("%v: exit %d:\n%s", args, code, text)
	}
	text = ansi.ReplaceAllString(text, "")
	return strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' })
}

func TestTerminalWidth(t *testing.T) {
	for _, cols := range []int{80, 100, 120, 160, 200} {
		for _, args := range [][]string{{"exp-x"}, {"all"}, {"defaults"}} {
			t.Run(fmt.Sprintf("%d %v", cols, args), func(t *testing.T) {
				lines := screenLines(t, cols, fakes(), args...)
				if len(lines) < 5 {
					t.Fatalf("got %d lines: %q", len(lines), lines)
				}
				status := 0
				for _, line := range lines {
					if strings.HasPrefix(line, "labrun: ") {
						status++
					}
				}
				checkScreen(t, cols, lines, "exp-x · a fake")
				if args[0] != "defaults" && status == 0 {
					t.Errorf("no status line drawn")
				}
				text := strings.Join(lines, "\n")
				if args[0] != "defaults" && !strings.Contains(text, "| measured") {
					t.Errorf("no measured column at %d columns:\n%s", cols, text)
				}
				if cols >= 120 && args[0] != "defaults" && !strings.Contains(text, "| server") {
					t.Errorf("no server column at %d columns, where the table fits", cols)
				}
			})
		}
	}
}

// checkScreen checks that no line of a terminal of cols columns is cols wide or wider, and
// that every line holding one of headings is a table's top rule titled with it ("+- heading
// ---+"), or the heading alone when the table is too narrow for it.
func checkScreen(t *testing.T, cols int, lines []string, headings ...string) {
	t.Helper()
	for _, line := range lines {
		if n := utf8.RuneCountInString(line); n >= cols {
			t.Errorf("a line of %d columns on a %d-column terminal: %q", n, cols, line)
		}
		for _, h := range headings {
			if strings.Contains(line, h) && line != h && !titledWith(line, h) {
				t.Errorf("the heading %q is neither in a top rule nor a line of its own: %q", h, line)
			}
		}
	}
}

// titledWith reports whether line is a table's top rule titled with heading.
func titledWith(line, heading string) bool {
	rest, ok := strings.CutPrefix(line, "+- "+heading+" -")
	return ok && strings.Trim(rest, "-") == "+"
}

// TestTerminalWidthReal runs real experiments on terminals of two widths; the layout of
// every experiment at every width is tested on the reference run, in package report.
func TestTerminalWidthReal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs experiments for seconds")
	}
	for _, cols := range []int{80, 160} {
		lines := screenLines(t, cols, experiments.All(), "exp-b")
		heading := "exp-b · a small pool makes a healthy server slow"
		checkScreen(t, cols, lines, heading)
		if !slices.ContainsFunc(lines, func(l string) bool { return titledWith(l, heading) }) {
			t.Errorf("%d columns: no top rule titled with the heading: %q", cols, lines)
		}
	}
}

// TestHelpFitsTerminal prints every command's help on terminals of several widths: no line
// is as wide as the terminal.
func TestHelpFitsTerminal(t *testing.T) {
	var names []string
	for _, c := range newApp(nil, nil, terminals{}, experiments.All()).Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	for _, cols := range []int{80, 100, 120, 160, 200} {
		for _, name := range append(names, "") {
			args := []string{"--help"}
			if name != "" {
				args = []string{name, "--help"}
			}
			lines := screenLines(t, cols, experiments.All(), args...)
			if len(lines) < 5 {
				t.Errorf("%d columns, %v: %d lines", cols, args, len(lines))
			}
			checkScreen(t, cols, lines)
		}
	}
}

// TestTerminalDetection: a pseudo-terminal is one, of its size; /dev/null, a character
// device, is not, nor is a pipe or a buffer.
func TestTerminalDetection(t *testing.T) {
	t.Setenv("COLUMNS", "")
	_, pts := openPTY(t, 97)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if !isTerminal(pts) || termWidth(pts) != 97 {
		t.Errorf("a pseudo-terminal: terminal %v, width %d; want true, 97", isTerminal(pts), termWidth(pts))
	}
	for name, out := range map[string]io.Writer{"/dev/null": null, "a pipe": w, "a buffer": new(strings.Builder)} {
		if isTerminal(out) || termWidth(out) != 0 {
			t.Errorf("%s: terminal %v, width %d; want false, 0", name, isTerminal(out), termWidth(out))
		}
	}
	t.Setenv("COLUMNS", "132")
	if termWidth(pts) != 132 || termWidth(null) != 0 {
		t.Errorf("COLUMNS=132: pseudo-terminal %d, /dev/null %d; want 132, 0", termWidth(pts), termWidth(null))
	}
}
