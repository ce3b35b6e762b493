package report

import (
	"bytes"
	"fmt"
	"io"

	"github.com/labrun/labrun/results"
)

// Streams reports whether f prints a suite run by run (WriteSuiteRun, then WriteSuiteEnd).
func Streams(f Format) bool { return f == FormatTable }

// WriteSuiteRun writes run as a suite's table shows it.
func WriteSuiteRun(w io.Writer, o Options, run results.Run) error {
	if !Streams(o.Format) {
		return fmt.Errorf("report: the %s format is not streamed", o.Format)
	}
	var buf bytes.Buffer
	if err := writeRunTable(&buf, run, look{palette{on: o.Color}, o.Width, o.Explain}); err != nil {
		return fmt.Errorf("render %s: %w", orDash(run.Experiment), err)
	}
	buf.WriteString("\n")
	return flush(w, &buf)
}

// WriteSuiteEnd writes the recap, meta and summary of s's table.
func WriteSuiteEnd(w io.Writer, o Options, s results.Suite) error {
	if !Streams(o.Format) {
		return fmt.Errorf("report: the %s format is not streamed", o.Format)
	}
	var buf bytes.Buffer
	writeSuiteEnd(&buf, s, look{palette{on: o.Color}, o.Width, o.Explain}, false)
	return flush(w, &buf)
}
