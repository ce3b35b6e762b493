package cli

import (
	"bytes"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/runner"
	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

// settings are the common flags, read and checked.
type settings struct {
	run    runner.Config
	render report.Options
	out    *report.OutDir // nil: no --out
	live   bool           // a live status line on stderr
	width  int            // the terminal's columns, 0 when unknown
}

// runExperiments runs exps with s, prints the report (one run when single, else a suite), writes
// the files of --out, and returns errChecksFailed when a row failed.
func runExperiments(c *cli.Context, s settings, exps []experiments.Experiment, single bool) error {
	cfg := s.run
	var st *report.Status
	if s.live {
		st = report.StartStatus(c.App.ErrWriter, s.width)
		defer st.Stop()
		if !single {
			st.Plan(len(exps)) // the suite's progress: done, running, time left
		}
		cfg.Progress = st.Set
	}
	suite, err := runner.Run(c.Context, cfg, exps)
	if st != nil {
		// The line is cleared before anything goes to stdout: on a terminal both show on
		// one screen, and the report's first line would otherwise follow the last redraw.
		st.Stop()
	}
	if err != nil {
		return err
	}
	var doc any = suite
	if single {
		run := suite.Experiments[0]
		run.Meta = suite.Meta
		run.SchemaVersion = suite.SchemaVersion // a document of its own
		doc = run
	}
	if err := emit(c, s.render, doc, s.out, suite); err != nil {
		return err
	}
	if !suite.Pass {
		return errChecksFailed
	}
	return nil
}

// emit renders doc for stdout and, with an --out directory, the suite's files, all before
// anything is written: an error then leaves no half output. Then it writes both.
func emit(c *cli.Context, o report.Options, doc any, out *report.OutDir, suite results.Suite) error {
	var buf bytes.Buffer
	if err := report.Render(&buf, o, doc); err != nil {
		return err
	}
	var files []report.File
	if out != nil {
		var err error
		if files, err = report.OutFiles(suite); err != nil {
			return err
		}
	}
	if _, err := c.App.Writer.Write(buf.Bytes()); err != nil {
		return err
	}
	if out != nil {
		if err := out.Write(files); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return nil
}
