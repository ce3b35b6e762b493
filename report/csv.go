package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"

	"github.com/labrun/labrun/results"
)

// csvColumns are the header of the CSV form of runs and suites. The names are the JSON tags
// of the results types where there is one (the Stats fields lose their "stats." level), so
// that a column means the same as the JSON field of that name.
var csvColumns = []string{
	"experiment", "row", "calls", "expected_calls", "documented", "documented_ms",
	"expected_ms", "measured_ms", "n", "median_ms", "min_ms", "max_ms", "stddev_ms",
	"expected_outcome", "outcome", "expected_server_executions", "server_executions",
	"expected_status", "status", "expected_new_connections", "new_connections",
	"server", "pass", "reason", "warning", "skipped",
	"expected_server_executions_max", "expected_new_connections_max", "range_reason",
	"inconclusive", "noise_ms",
}

// writeRowsCSV writes the header and one line per row of every run. A value that does not
// apply (a nil pointer, no stats) is an empty cell; times are in ms with as many decimals as
// they have ("4000.4", "1500"), never rounded, since CSV is for programs. A time that is NaN
// or infinite is an error, as in JSON: a spreadsheet would read it as text.
func writeRowsCSV(buf *bytes.Buffer, runs []results.Run) error {
	lines := [][]string{csvColumns}
	for _, run := range runs {
		for _, r := range run.Rows {
			line, err := rowCSV(run.Experiment, r)
			if err != nil {
				return fmt.Errorf("row %q: %w", r.Name, err)
			}
			lines = append(lines, line)
		}
	}
	return writeCSV(buf, lines)
}

// rowCSV returns the cells of one row in the order of csvColumns.
func rowCSV(experiment string, r results.Row) ([]string, error) {
	var err error
	// num formats a time, remembering the first one that CSV cannot hold.
	num := func(name string, v *float64) string {
		if v == nil {
			return ""
		}
		if math.IsNaN(*v) || math.IsInf(*v, 0) {
			if err == nil {
				err = fmt.Errorf("%s is %v, want a finite number", name, *v)
			}
			return ""
		}
		return csvFloat(*v)
	}
	var n, median, lo, hi, sd string
	if st := r.Stats; st != nil {
		n = strconv.Itoa(st.N)
		median = num("median_ms", &st.MedianMs)
		lo = num("min_ms", &st.MinMs)
		hi = num("max_ms", &st.MaxMs)
		sd = num("stddev_ms", &st.StddevMs)
	}
	line := []string{
		experiment, r.Name, strconv.Itoa(r.Calls), strconv.Itoa(r.ExpectedCalls),
		r.Documented, num("documented_ms", r.DocumentedMs),
		num("expected_ms", r.ExpectedMs), num("measured_ms", r.MeasuredMs),
		n, median, lo, hi, sd,
		string(r.ExpectedOutcome), string(r.Outcome),
		csvInt(r.ExpectedExecutions), csvInt(r.ServerExecutions),
		csvInt(r.ExpectedStatus), csvInt(r.Status),
		csvInt(r.ExpectedNewConnections), csvInt(r.NewConnections),
		r.Server, strconv.FormatBool(r.Pass), r.Reason, r.Warning, r.Skipped,
		csvInt(r.ExpectedExecutionsMax), csvInt(r.ExpectedNewConnectionsMax), r.RangeReason,
		r.Inconclusive, num("noise_ms", r.NoiseMs),
	}
	return line, err
}

// predictionCSVColumns are the header of the CSV form of a prediction.
var predictionCSVColumns = []string{"attempt", "attempt_start_ms", "attempt_end_ms", "attempt_outcome", "phase", "phase_ms"}

// writePredictionCSV writes the header and one line per phase of every attempt, attempts
// numbered from 1. An end or phase that never ends is an empty cell. An attempt without
// phases still gets a line, with empty phase cells, so that no attempt goes missing.
func writePredictionCSV(buf *bytes.Buffer, p results.Prediction) error {
	lines := [][]string{predictionCSVColumns}
	for i, a := range p.Attempts {
		head := []string{strconv.Itoa(i + 1), csvFloat(a.StartMs), csvFloatPtr(a.EndMs), string(a.Outcome)}
		if len(a.Phases) == 0 {
			lines = append(lines, append(head, "", ""))
		}
		for _, ph := range a.Phases {
			lines = append(lines, append(head[:len(head):len(head)], string(ph.Phase), csvFloatPtr(ph.Ms)))
		}
	}
	return writeCSV(buf, lines)
}

// writeCSV writes lines with encoding/csv: comma-separated, fields quoted only when they hold
// a comma or a quote, lines ending in "\n". Control characters (a line break, ESC, BEL, NUL)
// and bidirectional overrides in a field are escaped as the other formats escape them
// ("\x1b"): a probe's command writes what it likes on stderr, and a CSV is shown in
// terminals too.
func writeCSV(buf *bytes.Buffer, lines [][]string) error {
	for _, line := range lines {
		for i, cell := range line {
			line[i] = termSafe(cell)
		}
	}
	w := csv.NewWriter(buf)
	if err := w.WriteAll(lines); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// csvFloat formats v with the fewest digits that read back as v: "4000.4", "1500", "0.5".
func csvFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func csvFloatPtr(v *float64) string {
	if v == nil {
		return ""
	}
	return csvFloat(*v)
}

func csvInt(v *int) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(*v)
}
