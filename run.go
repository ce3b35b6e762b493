package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

// settings are the common flags, read and checked.
type settings struct {
	client         string // the client profile
	format         report.Format
	tol            time.Duration
	repeat, warmup int
	out            string // directory for run.json, REPORT.md and the SVGs; "" = none
	live           bool   // a live status line on stderr
	color          bool   // colour the verdicts
	version        string
}

// runExperiments runs exps with s, prints the report (one run when single, else a suite), writes
// the files of --out, and returns errChecksFailed when a row failed.
func runExperiments(c *cli.Context, s settings, exps []experiments.Experiment, single bool) error {
	meta := &results.Meta{
		Labrun: s.version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), Start: time.Now().UTC().Truncate(time.Second),
		ToleranceMs: *results.Ms(s.tol), Repeat: s.repeat, Warmup: s.warmup,
	}
	var st *status
	if s.live {
		st = startStatus(c.App.ErrWriter)
		defer st.stop()
	}
	var runs []results.Run
	for _, e := range exps {
		run, err := repeatRun(c, e, s, st)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Info().Name, err)
		}
		runs = append(runs, run)
	}
	if st != nil {
		st.stop()
	}
	suite := results.NewSuite(runs)
	suite.Meta = meta
	var buf bytes.Buffer
	var err error
	if single {
		run := runs[0]
		run.Meta = meta
		err = report.WriteRun(&buf, s.format, run)
	} else {
		err = report.WriteSuite(&buf, s.format, suite)
	}
	if err != nil {
		return err
	}
	var files []outFile
	if s.out != "" { // rendered before anything is written: an error leaves no half output
		if files, err = renderOut(suite); err != nil {
			return err
		}
	}
	out := buf.Bytes()
	if s.color && s.format == report.FormatTable {
		out = report.Colorize(out)
	}
	if _, err := c.App.Writer.Write(out); err != nil {
		return err
	}
	if s.out != "" {
		if err := writeOut(s.out, files); err != nil {
			return err
		}
	}
	if !suite.Pass {
		return errChecksFailed
	}
	return nil
}

// repeatRun runs e warmup+repeat times and aggregates the measured runs.
func repeatRun(c *cli.Context, e experiments.Experiment, s settings, st *status) (results.Run, error) {
	var runs []results.Run
	total := s.warmup + s.repeat
	for i := 0; i < total; i++ {
		opt := experiments.Options{Tolerance: s.tol, Client: s.client}
		if st != nil {
			label := ""
			switch {
			case i < s.warmup:
				label = fmt.Sprintf(" (warm-up %d/%d)", i+1, s.warmup)
			case s.repeat > 1:
				label = fmt.Sprintf(" (run %d/%d)", i-s.warmup+1, s.repeat)
			}
			opt.Progress = func(step string, expected time.Duration) { st.set(step+label, expected) }
		}
		run, err := e.Run(c.Context, opt)
		if err != nil {
			return results.Run{}, err
		}
		if i >= s.warmup {
			runs = append(runs, run)
		}
	}
	if len(runs) == 1 {
		return runs[0], nil
	}
	return results.Aggregate(runs, s.tol)
}

// outFile is one file of --out, rendered.
type outFile struct {
	name string
	data []byte
}

// renderOut renders the files of --out: run.json, REPORT.md and one SVG per experiment.
func renderOut(suite results.Suite) ([]outFile, error) {
	var files []outFile
	add := func(name string, render func(*bytes.Buffer) error) error {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			return fmt.Errorf("render %s: %w", name, err)
		}
		files = append(files, outFile{name, b.Bytes()})
		return nil
	}
	if err := add("run.json", func(b *bytes.Buffer) error { return report.WriteSuite(b, report.FormatJSON, suite) }); err != nil {
		return nil, err
	}
	if err := add("REPORT.md", func(b *bytes.Buffer) error { return report.WriteSuite(b, report.FormatMarkdown, suite) }); err != nil {
		return nil, err
	}
	for _, run := range suite.Experiments {
		if err := add(run.Experiment+".svg", func(b *bytes.Buffer) error { return report.WriteSVG(b, run) }); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// writeOut writes rendered files into dir, each under a temporary name renamed into place, so
// an interrupted run never leaves a half-written file behind.
func writeOut(dir string, files []outFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	for _, f := range files {
		if err := writeAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return nil
}

// writeAtomic writes data to a temporary file beside path and renames it into place.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
