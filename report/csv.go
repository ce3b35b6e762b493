package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"

	"github.com/labrun/labrun/results"
)

// csvColumns are the CSV header for runs and suites: the results types' JSON tags (Stats fields
// without "stats.").
var csvColumns = []string{
	"experiment", "row", "calls", "expected_calls", "documented", "documented_ms",
	"expected_ms", "measured_ms", "n", "median_ms", "min_ms", "max_ms", "stddev_ms",
	"expected_outcome", "outcome", "expected_server_executions", "server_executions",
	"expected_status", "status", "expected_new_connections", "new_connections",
	"server", "pass", "reason", "warning", "skipped",
	"expected_server_executions_max", "expected_new_connections_max", "range_reason",
	"inconclusive", "noise_ms",
}

// writeRowsCSV writes the header and a line per row of every run: an empty cell for what does
// not apply, times in ms unrounded ("4000.4", "1500"). A NaN or infinite time is an error.
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

func rowCSV(experiment string, r results.Row) ([]string, error) {
	var err error
	// num formats a time, remembering the first CSV cannot hold.
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

var predictionCSVColumns = []string{"attempt", "attempt_start_ms", "attempt_end_ms", "attempt_outcome", "phase", "phase_ms"}

// writePredictionCSV writes a line per phase of every attempt (from 1), an empty cell for a
// time that never comes; an attempt without phases still gets a line.
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

// writeCSV writes lines with encoding/csv, escaping control characters and bidi overrides as
// the other formats do ("\x1b"): a probe's stderr is input, and CSVs are shown in terminals.
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

// csvFloat formats v with the fewest digits that read back as v.
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
