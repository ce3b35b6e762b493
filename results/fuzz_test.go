package results_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

// FuzzDecode: whatever a saved run holds, decoding it never panics; a refusal is one escaped
// line of at most 1 KiB; what Decode accepts renders in every format and as --out's files
// (one verdict on both paths), and every file name --out would write stays a plain name.
// The seeds run in every go test; make fuzz runs it with random input for a bounded time.
func FuzzDecode(f *testing.F) {
	for _, seed := range decodeSeeds() {
		f.Add(seed)
	}
	f.Fuzz(decodeTakes)
}

// TestDecodeMutated: 2,000 random variations of FuzzDecode's seeds, in the conformance tier.
func TestDecodeMutated(t *testing.T) {
	testenv.Mutations(t, decodeSeeds(), 2000, decodeTakes)
}

func decodeSeeds() [][]byte {
	var seeds [][]byte
	for _, seed := range []string{
		`{"experiment": "exp-a", "rows": [{"name": "r", "measured_ms": 1}]}`,
		`{"experiments": [{"experiment": "../x", "rows": [], "calls": [{"label": "c", "attempts": [{"start_ms": 0, "end_ms": 1e-300, "phases": [{"phase": "wait", "ms": 1e-300}]}]}]}]}`,
		`[]`,
		`{"experiment": "e", "tolerance_ms": -5, "rows": [{"name": "r", "calls": -1}]}`,
		`{"experiment": "e", "rows": [{"name": "r", "stats": {"n": -1, "median_ms": 3, "min_ms": 5, "max_ms": 2}}]}`,
		`{"experiment": "e", "rows": [{"name": "r", "expected_server_executions": 5, "expected_server_executions_max": 2}]}`,
		`{"experiment": "e", "rows": [{"id": "a", "name": "r"}, {"id": "a", "name": "s"}]}`,
		`{"experiment": "e", "rows": [], "calls": [{"label": "c", "attempts": [{"start_ms": 0, "phases": [{"phase": "\u001b[2J", "ms": -3}]}]}]}`,
		`{"experiment": "\u001b]0;x\u0007", "rows": [{"name": "\u202e", "expected_ms": 1, "measured_ms": 2}]}`,
	} {
		seeds = append(seeds, []byte(seed))
	}
	return seeds
}

func decodeTakes(t *testing.T, data []byte) {
	s, err := results.Decode(data)
	if err != nil {
		msg := err.Error()
		if len(msg) > 1024 || strings.ContainsFunc(msg, unicode.IsControl) {
			t.Fatalf("the refusal %q is not one escaped line of at most 1 KiB", msg)
		}
		return
	}
	for _, format := range report.Formats() {
		if err := report.Render(&bytes.Buffer{}, report.Options{Format: format}, s); err != nil {
			t.Fatalf("Decode accepted the run, %s refuses it: %v", format, err)
		}
	}
	files, err := report.OutFiles(s)
	if err != nil {
		t.Fatalf("Decode accepted the run, --out refuses it: %v", err)
	}
	for _, f := range files {
		if bytes.ContainsAny([]byte(f.Name), "/\\") || f.Name == ".." || f.Name == "." {
			t.Fatalf("file name %q is not a plain name", f.Name)
		}
	}
}
