package results_test

import (
	"bytes"
	"testing"

	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

// FuzzDecode: whatever a saved run holds, decoding it and rendering what was accepted never
// panics, and every file name --out would write stays a plain name.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"experiment": "exp-a", "rows": [{"name": "r", "measured_ms": 1}]}`))
	f.Add([]byte(`{"experiments": [{"experiment": "../x", "rows": [], "calls": [{"label": "c", "attempts": [{"start_ms": 0, "end_ms": 1e-300, "phases": [{"phase": "wait", "ms": 1e-300}]}]}]}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := results.Decode(data)
		if err != nil {
			return
		}
		for _, format := range report.Formats() {
			report.Render(&bytes.Buffer{}, report.Options{Format: format}, s)
		}
		files, err := report.OutFiles(s)
		if err != nil {
			return
		}
		for _, f := range files {
			if bytes.ContainsAny([]byte(f.Name), "/\\") || f.Name == ".." || f.Name == "." {
				t.Fatalf("file name %q is not a plain name", f.Name)
			}
		}
	})
}
