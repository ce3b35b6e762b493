package results

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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

// Check reports what makes a suite unfit to render: sizes beyond MaxText, MaxRows or MaxItems,
// a run without name or rows, a time not finite within ±MaxMs.
func (s Suite) Check() error {
	if err := s.checkSizes(); err != nil {
		return err
	}
	for i, run := range s.Experiments {
		if run.Experiment == "" || run.Rows == nil {
			return fmt.Errorf("experiment %d has no name or no rows", i+1)
		}
		if err := run.checkTimes(); err != nil {
			return fmt.Errorf("%s: %w", run.Experiment, err)
		}
	}
	return nil
}

func (run Run) checkTimes() error {
	for _, r := range run.Rows {
		for _, t := range []struct {
			name string
			v    *float64
		}{{"documented_ms", r.DocumentedMs}, {"expected_ms", r.ExpectedMs}, {"measured_ms", r.MeasuredMs}} {
			if err := checkMs(t.v); err != nil {
				return fmt.Errorf("row %q: %s %w", r.Name, t.name, err)
			}
		}
		if st := r.Stats; st != nil {
			for _, v := range []float64{st.MedianMs, st.MinMs, st.MaxMs, st.StddevMs} {
				if err := checkMs(&v); err != nil {
					return fmt.Errorf("row %q: stats %w", r.Name, err)
				}
			}
		}
	}
	for _, c := range run.Calls {
		for k, a := range c.Attempts {
			if err := checkMs(&a.StartMs); err != nil {
				return fmt.Errorf("call %q attempt %d: start_ms %w", c.Label, k+1, err)
			}
			if err := checkMs(a.EndMs); err != nil {
				return fmt.Errorf("call %q attempt %d: end_ms %w", c.Label, k+1, err)
			}
			for _, ph := range a.Phases {
				if err := checkMs(ph.Ms); err != nil {
					return fmt.Errorf("call %q attempt %d: %s phase %w", c.Label, k+1, ph.Phase, err)
				}
			}
		}
	}
	if err := checkMs(&run.ToleranceMs); err != nil {
		return fmt.Errorf("tolerance_ms %w", err)
	}
	return nil
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
