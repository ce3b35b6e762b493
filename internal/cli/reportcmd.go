package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "re-render a saved run (run.json) without running anything",
		ArgsUsage: "[--format F] [--out DIR] RUN.json",
		Description: "Reads a run saved by --out (run.json) or printed by --format json, and renders " +
			"it again: Markdown on stdout by default, and with --out the Markdown report and the " +
			"SVG timelines into a directory. A saved run is at most " +
			fmt.Sprint(results.MaxSavedRun>>20) + " MiB; use - to read standard input.\n\n" +
			"Flags go before the file.\n\n" +
			"Examples:\n   labrun report results/reference/run.json\n" +
			"   labrun report --out review/ run.json\n   labrun report --format table run.json\n" +
			"   labrun all --format json | labrun report --format table -",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: string(report.FormatMarkdown), Usage: "output format: " + formatList()},
			&cli.StringFlag{Name: "out", Usage: "write run.json, REPORT.md and the SVG timelines into this directory"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("report takes one saved run (run.json), got %d arguments", c.NArg())
			}
			f, err := parseFormat(c, true)
			if err != nil {
				return err
			}
			var out *report.OutDir
			if c.IsSet("out") {
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
				return usageError{fmt.Errorf("%s: %w", path, err)}
			}
			// A saved run is input: one that cannot be rendered or names files badly is bad
			// usage, reported on one line with nothing on stdout. A file system that cannot
			// take the files is a runtime failure, with nothing on stdout either.
			r, err := render(report.Options{Format: f}, suite, out, suite)
			if err != nil {
				return usageError{fmt.Errorf("%s: %w", path, err)}
			}
			return r.write(c, false)
		},
	}
}

// readSaved reads a saved run from path, or from stdin for "-". A FIFO or a device is opened
// without blocking, so that one with no writer does not hang labrun before it can be
// interrupted; reading stops when ctx is done.
func readSaved(ctx context.Context, path string, stdin io.Reader) (results.Suite, error) {
	r := stdin
	if path != "-" {
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
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
