package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

func reportCommand(tty terminals) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "re-render a saved run (run.json) without running anything",
		ArgsUsage: "[--format F] [--out DIR] RUN.json",
		Description: "Reads a run saved by --out (run.json) or printed by --format json, and renders " +
			"it again: on a terminal as the table the experiments print, to a pipe or a file as " +
			"Markdown (the REPORT.md of --out), and with --out the whole set of files into a " +
			"directory. A saved run is at most " +
			fmt.Sprint(results.MaxSavedRun>>20) + " MiB; use - to read standard input.\n\n" +
			"Flags go before the file.\n\n" +
			"Examples:\n   labrun report results/reference/run.json\n" +
			"   labrun report --out review/ results/reference/run.json\n   labrun report --format markdown run.json\n" +
			"   labrun all --format json | labrun report --format table -",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Usage: "output format: " + formatList() + " (default: table on a terminal, else markdown)"},
			&cli.StringFlag{Name: "out", Usage: "write run.json, REPORT.md, junit.xml and the SVG timelines into this directory"},
			&cli.BoolFlag{Name: "no-color", Usage: "no colour, even on a terminal (so does NO_COLOR)"},
			wideFlag(),
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := flagsAfterFile(c.Args().Slice()); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usagef("report takes one saved run (run.json), got %d arguments", c.NArg())
			}
			o := report.Options{Format: report.FormatMarkdown}
			if tty.stdout {
				o = report.Options{Format: report.FormatTable, Width: tableWidth(c, tty), Color: colorFor(c, tty)}
			}
			if c.IsSet("format") {
				f, err := parseFormat(c, true)
				if err != nil {
					return err
				}
				o.Format = f
			}
			var out *report.OutDir
			if c.IsSet("out") {
				var err error
				if out, err = prepareOut(c.String("out")); err != nil {
					return err
				}
			}
			path := c.Args().First()
			suite, err := readSaved(c.Context, path, c.App.Reader)
			if err != nil {
				if c.Context.Err() != nil {
					return c.Context.Err()
				}
				return usageError{errors.New(escaped(path + ": " + err.Error()))}
			}
			// A saved run is input: one that cannot be rendered or names files badly is bad
			// usage, reported on one line with nothing on stdout. A file system that cannot
			// take the files is a runtime failure, with nothing on stdout either.
			r, err := render(o, suite, out, suite)
			if err != nil {
				return usageError{errors.New(escaped(path + ": " + err.Error()))}
			}
			return r.write(c, false)
		},
	}
}

// flagsAfterFile refuses flags written after the saved run's file ("report run.json --format
// table"), which the command line would otherwise take for more files, and shows the command
// with the flags first. A lone "-" is standard input, not a flag.
func flagsAfterFile(args []string) error {
	if len(args) < 2 {
		return nil
	}
	var flags []string
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = args[1:]
			break
		}
	}
	if flags == nil {
		return nil
	}
	return usagef("flags go before the file: labrun report %s %s", strings.Join(flags, " "), args[0])
}

// maxEcho bounds an error line of report's: a path or a name may be of any length.
const maxEcho = 512

// escaped returns s as one line of at most maxEcho bytes, its control and bidi characters
// escaped as Go quotes them: a saved run and a path are the user's text.
func escaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxEcho {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Bidi_Control, r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// readSaved reads a saved run from path, or from stdin for "-". A FIFO waits for its writer
// (openFIFO) and a device is opened without blocking, so that neither hangs labrun before it
// can be interrupted; reading stops when ctx is done.
func readSaved(ctx context.Context, path string, stdin io.Reader) (results.Suite, error) {
	r := stdin
	if path != "-" {
		f, err := openSaved(ctx, path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return results.Suite{}, fmt.Errorf("cannot read: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return results.Suite{}, errors.New("cannot read: is a directory")
		}
		r = f
	}
	// A read blocked on a pipe ends when the file's deadline passes; a regular file's reads
	// never block for long, and Read checks ctx between them.
	if f, ok := r.(*os.File); ok {
		stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
		defer stop()
	}
	return results.Read(ctx, r)
}

func openSaved(ctx context.Context, path string) (*os.File, error) {
	if st, err := os.Stat(path); err == nil && st.Mode()&os.ModeNamedPipe != 0 {
		return openFIFO(ctx, path)
	}
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// openFIFO opens a FIFO for reading once a writer opened it (a FIFO opened without blocking
// reads as empty until then), or returns ctx's error, opening the FIFO for writing itself to
// end the wait.
func openFIFO(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_RDONLY, 0)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-ctx.Done():
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		// Fails (ENXIO) until the reader's open is under way.
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		select {
		case o := <-done:
			if o.f != nil {
				o.f.Close()
			}
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}
