package report

import (
	"bytes"
	"fmt"
	"io"

	"github.com/labrun/labrun/results"
)

// A suite's table form, streamed: each run's table as the run finishes (WriteSuiteRun), then
// the recap in the suite's order, the meta line and the summary (WriteSuiteEnd). The two
// together are the suite's table form with its runs in the order they finished. The other
// formats are documents of the whole suite (Markdown opens with the summary): they are not
// streamed.

// Streams reports whether format f is streamed run by run.
func Streams(f Format) bool { return f == FormatTable }

// WriteSuiteRun writes run as the table form of a suite shows it, in one write.
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

// WriteSuiteEnd writes what follows the runs in s's table form, in one write.
func WriteSuiteEnd(w io.Writer, o Options, s results.Suite) error {
	if !Streams(o.Format) {
		return fmt.Errorf("report: the %s format is not streamed", o.Format)
	}
	var buf bytes.Buffer
	writeSuiteEnd(&buf, s, look{palette{on: o.Color}, o.Width, o.Explain}, false)
	return flush(w, &buf)
}
