package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/runner"
	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

// settings are the common flags, checked.
type settings struct {
	run    runner.Config
	render report.Options
	out    *report.OutDir // nil: no --out
	live   bool           // a live status line on stderr
	width  int            // the terminal's columns, 0 when unknown
}

// runExperiments runs exps with s, writes --out, prints the report (a suite's table run by
// run as they end) and returns errChecksFailed when a row failed.
func runExperiments(c *cli.Context, s settings, exps []experiments.Experiment, single bool) error {
	cfg := s.run
	var st *report.Status
	if s.live {
		st = report.StartStatus(c.App.ErrWriter, s.width)
		defer st.Stop()
		st.Plan(planned(exps, cfg)) // the run's progress: done, running, time left
		lanes, alone := runner.MaxShared(runtime.NumCPU()), []string{}
		if cfg.Serial {
			lanes = 1
		}
		for _, e := range exps {
			if e.Info().Alone && len(exps) > 1 {
				alone = append(alone, e.Info().Name)
			}
		}
		st.Lanes(lanes, alone)
		cfg.Progress = st.Set
	}
	var str *streamer
	if !single && report.Streams(s.render.Format) {
		str = &streamer{w: c.App.Writer, o: s.render, status: st}
		cfg.Finished = str.run
		// labrun all | head: EPIPE, not SIGPIPE, so that --out is still written.
		signal.Ignore(syscall.SIGPIPE)
		defer signal.Reset(syscall.SIGPIPE)
	}
	suite, err := runner.Run(c.Context, cfg, exps)
	if st != nil {
		// Cleared before stdout gets more: both show on one screen.
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
	var r rendered
	if str != nil {
		r, err = str.end(suite, s.out)
	} else {
		r, err = render(s.render, doc, s.out, suite)
	}
	if err != nil {
		return err
	}
	if err := r.write(c, true); err != nil {
		return err
	}
	return verdictErr(suite.Tally())
}

// streamer prints a suite's runs as they finish, above the status line; end renders the rest.
type streamer struct {
	w      io.Writer
	o      report.Options
	status *report.Status // nil: no status line
	mu     sync.Mutex     // guards err and the writes to w
	err    error          // the first failure to render or write a run
}

// run is runner.Config.Finished.
func (s *streamer) run(run results.Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	write := func() { s.err = report.WriteSuiteRun(s.w, s.o, run) }
	if s.status != nil {
		s.status.Above(write)
	} else {
		write()
	}
}

// end renders what follows the runs and, with out, the suite's files.
func (s *streamer) end(suite results.Suite, out *report.OutDir) (rendered, error) {
	r := rendered{out: out}
	if out != nil {
		var err error
		if r.files, err = report.OutFiles(suite); err != nil {
			return rendered{}, err
		}
	}
	var buf bytes.Buffer
	if err := report.WriteSuiteEnd(&buf, s.o, suite); err != nil {
		return rendered{}, err
	}
	r.stdout = buf.Bytes()
	s.mu.Lock()
	defer s.mu.Unlock()
	r.streamErr = s.err
	return r, nil
}

// planned is how long each of exps is expected to take, warm-ups and repeats included
// (experiments.Takes; 0: unknown).
func planned(exps []experiments.Experiment, cfg runner.Config) map[string]time.Duration {
	takes := map[string]time.Duration{}
	for _, e := range exps {
		takes[e.Info().Name] = experiments.Takes(e.Info().Name) * time.Duration(cfg.Warmup+cfg.Repeat)
	}
	return takes
}

// verdictErr is the error a run's tally exits with: errChecksFailed, errInconclusive or nil.
func verdictErr(t results.Tally) error {
	switch {
	case t.Failed > 0:
		return errChecksFailed
	case t.Inconclusive > 0:
		return errInconclusive
	}
	return nil
}

// rendered is a report for stdout and the --out files, in memory: rendering can fail on bad
// input, writing only on the system.
type rendered struct {
	stdout    []byte
	out       *report.OutDir
	files     []report.File
	streamErr error // a streamed run's failure: stdout's report is not whole
}

// render renders the --out files (whose checks refuse a bad saved run first), then doc.
func render(o report.Options, doc any, out *report.OutDir, suite results.Suite) (rendered, error) {
	r := rendered{out: out}
	if out != nil {
		var err error
		if r.files, err = report.OutFiles(suite); err != nil {
			return rendered{}, err
		}
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, o, doc); err != nil {
		return rendered{}, err
	}
	r.stdout = buf.Bytes()
	return r, nil
}

// write writes the --out files, then stdout (a reader that leaves early costs no file); with
// keepReport stdout gets the report even when the files fail. A failure is one line: exit 1.
func (r rendered) write(c *cli.Context, keepReport bool) error {
	var outErr error
	if r.out != nil {
		if outErr = r.out.Write(r.files); outErr != nil {
			outErr = fmt.Errorf("--out: %w; nothing in %s changed", outErr, r.out.Path())
			if !keepReport {
				return outErr
			}
		}
	}
	// EPIPE instead of SIGPIPE, so that labrun can say what happened.
	signal.Ignore(syscall.SIGPIPE)
	defer signal.Reset(syscall.SIGPIPE)
	err := r.streamErr
	if err == nil {
		_, err = c.App.Writer.Write(r.stdout)
	}
	if err != nil {
		what := "the report"
		if errors.Is(err, syscall.EPIPE) {
			what += " (stdout was closed before it was read in full)"
		}
		switch {
		case outErr != nil:
			return fmt.Errorf("%w; and cannot write %s to stdout: %w", outErr, what, err)
		case r.out != nil:
			return fmt.Errorf("cannot write %s to stdout: %w; the --out files are in %s", what, err, r.out.Path())
		}
		return fmt.Errorf("cannot write %s to stdout: %w", what, err)
	}
	if r.out != nil && outErr == nil {
		fmt.Fprintln(c.App.ErrWriter, "labrun: "+wroteLine(r.out.Path(), r.files))
	}
	return outErr
}

// wroteLine names the files --out wrote, timelines past three counted: "wrote run.json,
// REPORT.md, junit.xml and 13 timelines (exp-a.svg .. demo.svg) in out/".
func wroteLine(dir string, files []report.File) string {
	var names, svgs []string
	for _, f := range files {
		if strings.HasSuffix(f.Name, ".svg") {
			svgs = append(svgs, f.Name)
		} else {
			names = append(names, f.Name)
		}
	}
	if len(svgs) > 3 {
		names = append(names, fmt.Sprintf("%d timelines (%s .. %s)", len(svgs), svgs[0], svgs[len(svgs)-1]))
	} else {
		names = append(names, svgs...)
	}
	list := names[0]
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	return "wrote " + list + " in " + strings.TrimSuffix(dir, "/") + "/"
}
