package results

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// MaxSavedRun is the largest saved run Read accepts (a run of every experiment repeated 100
// times is a few MiB).
const MaxSavedRun = 64 << 20

// MaxMs is the largest time a saved run may hold, in ms: a year.
const MaxMs = 365 * 24 * 3600 * 1000.0

// Read decodes a saved run, a suite or a single run (returned as a suite of one), reading at
// most MaxSavedRun bytes until ctx is done, and checks it (Check).
func Read(ctx context.Context, r io.Reader) (Suite, error) {
	data, err := readLimited(ctx, r, MaxSavedRun)
	if err != nil {
		return Suite{}, err
	}
	return Decode(data)
}

func readLimited(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	chunk := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if int64(buf.Len()) > limit {
			return nil, fmt.Errorf("larger than %d MiB: not a saved run", limit>>20)
		}
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("cannot read: %w", err)
		}
	}
}

// Decode decodes a saved run from data, as Read does.
func Decode(data []byte) (Suite, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Suite{}, errors.New("empty: not a saved run")
	}
	// Top level only: decoding into interface values costs many times the size.
	if !json.Valid(data) {
		err := json.Unmarshal(data, new(json.RawMessage))
		return Suite{}, fmt.Errorf("not JSON: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return Suite{}, fmt.Errorf("not a labrun run: the JSON is %s, want an object", jsonKind(data))
	}
	present := func(key string) bool { v, ok := top[key]; return ok && string(v) != "null" }
	var suite Suite
	switch {
	case present("experiments"):
		if err := json.Unmarshal(data, &suite); err != nil {
			return Suite{}, fmt.Errorf("not a labrun run: %w", err)
		}
	case present("experiment"):
		var run Run
		if err := json.Unmarshal(data, &run); err != nil {
			return Suite{}, fmt.Errorf("not a labrun run: %w", err)
		}
		suite = Suite{SchemaVersion: run.SchemaVersion, Pass: run.Pass, Meta: run.Meta, Experiments: []Run{run}}
		suite.Experiments[0].Meta = nil
		suite.Experiments[0].SchemaVersion = 0
	default:
		return Suite{}, errors.New(`not a labrun run: no "experiments" or "experiment" field`)
	}
	if suite.SchemaVersion < 0 {
		return Suite{}, fmt.Errorf("not a labrun run: schema_version %d is not a version (want 0 to %d)", suite.SchemaVersion, SchemaVersion)
	}
	if suite.SchemaVersion > SchemaVersion {
		return Suite{}, fmt.Errorf("schema_version %d is newer than this labrun's %d: read it with a newer labrun", suite.SchemaVersion, SchemaVersion)
	}
	for i := range suite.Experiments {
		suite.Experiments[i].SchemaVersion = 0
	}
	if err := suite.Check(); err != nil {
		return Suite{}, fmt.Errorf("not a labrun run: %w", err)
	}
	// Runs saved before row IDs get the IDs their labrun would have given.
	for i := range suite.Experiments {
		suite.Experiments[i].fillIDs()
	}
	suite.SchemaVersion = SchemaVersion
	return suite, nil
}

func jsonKind(data []byte) string {
	switch b := bytes.TrimSpace(data); b[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	}
	return "a number"
}

// Check reports what makes a suite unfit to render, what no run of labrun's can hold: sizes
// beyond MaxText, MaxRows or MaxItems, a run without name or rows, a time not finite within
// ±MaxMs, an experiment name that cannot name a file or comes twice, a call's time or a
// tolerance below 0, a count below 0, a range whose max is below its
// expected count, statistics out of order, two rows of one id. Names in its error are quoted
// and cut.
func (s Suite) Check() error {
	if err := s.checkSizes(); err != nil {
		return err
	}
	seen := make(map[string]bool, len(s.Experiments))
	for i, run := range s.Experiments {
		switch {
		case run.Experiment == "" || run.Rows == nil:
			return fmt.Errorf("experiment %d has no name or no rows", i+1)
		case !PlainName(run.Experiment):
			return fmt.Errorf("experiment name %s cannot name a file (want letters, digits, '.', '_' or '-', at most 64)", quoted(run.Experiment))
		case seen[run.Experiment]:
			return fmt.Errorf("experiment %s appears twice", quoted(run.Experiment))
		}
		seen[run.Experiment] = true
		if err := run.checkTimes(); err != nil {
			return fmt.Errorf("%s: %w", quoted(run.Experiment), err)
		}
		if err := run.checkCounts(); err != nil {
			return fmt.Errorf("%s: %w", quoted(run.Experiment), err)
		}
	}
	return nil
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// PlainName reports whether an experiment name can name --out's files: letters, digits, '.',
// '_' and '-', at most 64, no separator, ".." or hidden file.
func PlainName(name string) bool { return plainName.MatchString(name) }

// quoted is s for an error message: quoted, escaped, at most 64 bytes of it.
func quoted(s string) string {
	const n = 64
	if len(s) <= n {
		return strconv.Quote(s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("… (%d bytes)", len(s))
}

func (run Run) checkCounts() error {
	if run.ToleranceMs < 0 {
		return fmt.Errorf("tolerance_ms is %g, want at least 0", run.ToleranceMs)
	}
	ids := make(map[string]bool, len(run.Rows))
	for _, r := range run.Rows {
		if err := r.checkCounts(); err != nil {
			return fmt.Errorf("row %s: %w", quoted(r.Name), err)
		}
		if r.ID != "" && ids[r.ID] {
			return fmt.Errorf("two rows have the id %s, want each once", quoted(r.ID))
		}
		ids[r.ID] = true
	}
	return nil
}

func (r Row) checkCounts() error {
	counts := []struct {
		name string
		v    *int
	}{{"expected_calls", &r.ExpectedCalls}, {"calls", &r.Calls},
		{"documented_server_executions", r.DocumentedExecutions}, {"expected_server_executions", r.ExpectedExecutions},
		{"server_executions", r.ServerExecutions}, {"expected_server_executions_max", r.ExpectedExecutionsMax},
		{"expected_new_connections", r.ExpectedNewConnections}, {"new_connections", r.NewConnections},
		{"expected_new_connections_max", r.ExpectedNewConnectionsMax}}
	for _, c := range counts {
		if c.v != nil && *c.v < 0 {
			return fmt.Errorf("%s is %d, want a count of at least 0", c.name, *c.v)
		}
	}
	for _, st := range []struct {
		name string
		v    *int
	}{{"expected_status", r.ExpectedStatus}, {"status", r.Status}} {
		if st.v != nil && (*st.v < 0 || *st.v > 999) {
			return fmt.Errorf("%s is %d, want an HTTP status (0 to 999)", st.name, *st.v)
		}
	}
	for _, rg := range []struct {
		name     string
		min, max *int
	}{{"expected_server_executions", r.ExpectedExecutions, r.ExpectedExecutionsMax},
		{"expected_new_connections", r.ExpectedNewConnections, r.ExpectedNewConnectionsMax}} {
		switch {
		case rg.max != nil && rg.min == nil:
			return fmt.Errorf("%s_max without %s", rg.name, rg.name)
		case rg.max != nil && *rg.max < *rg.min:
			return fmt.Errorf("%s_max %d is below %s %d", rg.name, *rg.max, rg.name, *rg.min)
		}
	}
	if r.ToleranceMs != nil && *r.ToleranceMs < 0 {
		return fmt.Errorf("tolerance_ms is %g, want at least 0", *r.ToleranceMs)
	}
	switch lo, hi := r.ExpectedMinMs, r.ExpectedMaxMs; {
	case (lo == nil) != (hi == nil):
		return errors.New("expected_min_ms and expected_max_ms come together")
	case lo != nil && r.ExpectedMs == nil:
		return errors.New("expected_min_ms and expected_max_ms without expected_ms")
	case lo != nil && !(*lo <= *r.ExpectedMs && *r.ExpectedMs <= *hi):
		return fmt.Errorf("expected_min_ms %g, expected_ms %g, expected_max_ms %g: want them in order", *lo, *r.ExpectedMs, *hi)
	}
	// medianSlack is half the median's rounding step: a run saved before the median was kept
	// within [min, max] may have it that far outside.
	const medianSlack = 0.005
	if st := r.Stats; st != nil {
		switch {
		case st.N < 1:
			return fmt.Errorf("stats n is %d, want at least 1", st.N)
		case !(st.MinMs-medianSlack <= st.MedianMs && st.MedianMs <= st.MaxMs+medianSlack):
			return fmt.Errorf("stats min %g, median %g, max %g: want them in order", st.MinMs, st.MedianMs, st.MaxMs)
		case st.StddevMs < 0:
			return fmt.Errorf("stats stddev_ms is %g, want at least 0", st.StddevMs)
		}
	}
	return nil
}

func (run Run) checkTimes() error {
	for _, r := range run.Rows {
		for _, t := range []struct {
			name string
			v    *float64
		}{{"documented_ms", r.DocumentedMs}, {"expected_ms", r.ExpectedMs}, {"measured_ms", r.MeasuredMs},
			{"expected_min_ms", r.ExpectedMinMs}, {"expected_max_ms", r.ExpectedMaxMs}} {
			if err := checkMs(t.v); err != nil {
				return fmt.Errorf("row %s: %s %w", quoted(r.Name), t.name, err)
			}
		}
		if st := r.Stats; st != nil {
			for _, v := range []float64{st.MedianMs, st.MinMs, st.MaxMs, st.StddevMs} {
				if err := checkMs(&v); err != nil {
					return fmt.Errorf("row %s: stats %w", quoted(r.Name), err)
				}
			}
		}
	}
	// A call's times place it on a timeline, which starts at 0.
	for _, c := range run.Calls {
		for k, a := range c.Attempts {
			if err := checkSpan(&a.StartMs); err != nil {
				return fmt.Errorf("call %s attempt %d: start_ms %w", quoted(c.Label), k+1, err)
			}
			if err := checkSpan(a.EndMs); err != nil {
				return fmt.Errorf("call %s attempt %d: end_ms %w", quoted(c.Label), k+1, err)
			}
			for _, ph := range a.Phases {
				if err := checkSpan(ph.Ms); err != nil {
					return fmt.Errorf("call %s attempt %d: phase %s %w", quoted(c.Label), k+1, quoted(string(ph.Phase)), err)
				}
			}
		}
	}
	if err := checkMs(&run.ToleranceMs); err != nil {
		return fmt.Errorf("tolerance_ms %w", err)
	}
	return nil
}

func checkSpan(v *float64) error {
	if v != nil && *v < 0 {
		return fmt.Errorf("is %g, want a time of at least 0", *v)
	}
	return checkMs(v)
}

func checkMs(v *float64) error {
	if v == nil {
		return nil
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) || math.Abs(*v) > MaxMs {
		return fmt.Errorf("is %g, want a time within ±%g ms", *v, MaxMs)
	}
	return nil
}
