package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

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
			"SVG timelines into a directory.\n\n" +
			"Flags go before the file.\n\n" +
			"Examples:\n   labrun report results/reference/run.json\n" +
			"   labrun report --out review/ run.json\n   labrun report --format table run.json",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: string(report.FormatMarkdown), Usage: "output format: " + formatList()},
			&cli.StringFlag{Name: "out", Usage: "write run.json, REPORT.md and the SVG timelines into this directory"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("report takes one saved run (run.json), got %d arguments", c.NArg())
			}
			f, err := report.ParseFormat(c.String("format"))
			if err != nil {
				return usagef("--format: %v", err)
			}
			path := c.Args().First()
			suite, err := readRun(path)
			if err != nil {
				return usageError{fmt.Errorf("%s: %w", path, err)}
			}
			// Everything is rendered before anything is written: a saved run that cannot be
			// rendered is bad input, reported on one line, with nothing on stdout.
			var buf bytes.Buffer
			if err := report.WriteSuite(&buf, f, suite); err != nil {
				return usageError{fmt.Errorf("%s: %w", path, err)}
			}
			dir := c.String("out")
			var files []outFile
			if dir != "" {
				if files, err = renderOut(suite); err != nil {
					return usageError{fmt.Errorf("%s: %w", path, err)}
				}
			}
			if _, err := c.App.Writer.Write(buf.Bytes()); err != nil {
				return err
			}
			if dir != "" {
				return writeOut(dir, files)
			}
			return nil
		},
	}
}

// readRun reads a saved suite (labrun all) or a single run (labrun exp-a --format json).
func readRun(path string) (results.Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return results.Suite{}, fmt.Errorf("cannot read: %w", err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return results.Suite{}, fmt.Errorf("not JSON: %w", err)
	}
	var suite results.Suite
	switch {
	case probe["experiments"] != nil:
		if err := json.Unmarshal(data, &suite); err != nil {
			return results.Suite{}, fmt.Errorf("not a labrun run: %w", err)
		}
	case probe["experiment"] != nil:
		var run results.Run
		if err := json.Unmarshal(data, &run); err != nil {
			return results.Suite{}, fmt.Errorf("not a labrun run: %w", err)
		}
		suite = results.Suite{Pass: run.Pass, Meta: run.Meta, Experiments: []results.Run{run}}
		suite.Experiments[0].Meta = nil
	default:
		return results.Suite{}, errors.New(`not a labrun run: no "experiments" or "experiment" field`)
	}
	for i, run := range suite.Experiments {
		if run.Experiment == "" || run.Rows == nil {
			return results.Suite{}, fmt.Errorf("not a labrun run: experiment %d has no name or no rows", i+1)
		}
	}
	return suite, nil
}
