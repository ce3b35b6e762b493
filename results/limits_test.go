package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDecodeBoundsSizes: a text longer than MaxText, more rows than MaxRows or more list
// entries than MaxItems is refused, naming where it is, so that nothing rendered from a saved
// run grows beyond it (a 10 MB row name once made a 397 MB report).
func TestDecodeBoundsSizes(t *testing.T) {
	long := strings.Repeat("x", MaxText+1)
	row := func(name string) string {
		return `{"name": "` + name + `", "expected_outcome": "ok", "outcome": "ok"}`
	}
	rows := func(n int) string {
		rs := make([]string, n)
		for i := range rs {
			rs[i] = row("r")
		}
		return strings.Join(rs, ",")
	}
	for _, tt := range []struct{ name, doc, want string }{
		{"row name", `{"experiments": [{"experiment": "exp-a", "rows": [` + row("ok") + `,` + row(long) + `]}]}`,
			"experiments[0].rows[1].name is 1025 bytes long, want at most 1024"},
		{"server note", `{"experiment": "exp-a", "rows": [{"name": "r", "server": "` + long + `"}]}`, "rows[0].server is 1025 bytes"},
		{"label", `{"experiment": "exp-a", "rows": [], "calls": [{"label": "` + long + `", "attempts": []}]}`, "calls[0].label is 1025 bytes"},
		{"config", `{"experiment": "exp-a", "rows": [], "config": [{"name": "a", "value": "` + long + `"}]}`, "config[0].value is 1025 bytes"},
		{"rows", `{"experiments": [{"experiment": "exp-a", "rows": [` + rows(MaxRows/2+1) + `]}, {"experiment": "exp-b", "rows": [` + rows(MaxRows/2) + `]}]}`,
			"10001 rows, want at most 10000"},
		{"items", `{"experiment": "exp-a", "rows": [], "config": [` + strings.Repeat(`{},`, MaxItems) + `{}]}`, "more than 1000000 list entries"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
	// At the bounds, a run is accepted.
	at := `{"experiment": "exp-a", "rows": [` + row(strings.Repeat("x", MaxText)) + `]}`
	if _, err := Decode([]byte(at)); err != nil {
		t.Errorf("a name of MaxText bytes: %v", err)
	}
}

// TestDecodeMemory: decoding a saved run allocates a small multiple of its size, not a tree
// of interface values many times larger.
func TestDecodeMemory(t *testing.T) {
	var calls []Call
	for i := range 20000 {
		var atts []Attempt
		for k := range 5 {
			end := float64(k + 1)
			atts = append(atts, Attempt{StartMs: float64(k), EndMs: &end, Outcome: "ok",
				Phases: []PhaseSpan{{Phase: "connect", Ms: &end}, {Phase: "body", Ms: &end}}})
		}
		calls = append(calls, Call{Label: fmt.Sprint("call ", i), Attempts: atts})
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(Run{Experiment: "exp-a", Rows: []Row{}, Calls: calls}); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := Decode(data); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(data))
	t.Logf("decoding %d MB allocated %.1f times its size", len(data)>>20, ratio)
	if ratio > 6 {
		t.Errorf("decoding %d bytes allocated %.1f times their size, want at most 6", len(data), ratio)
	}
}

// TestFinishClipsTexts: a run labrun makes is one it reads back, even when a note carries a
// long error: Finish cuts texts beyond MaxText at a character boundary.
func TestFinishClipsTexts(t *testing.T) {
	long := strings.Repeat("é", MaxText) // two bytes each
	run := Run{Experiment: "exp-a", Rows: []Row{{Name: "r", Server: "short", Skipped: long}},
		Calls: []Call{{Label: long}}, Config: []Param{{Name: "p", Value: long}}}
	run.Finish(0)
	for _, s := range []string{run.Rows[0].Skipped, run.Calls[0].Label, run.Config[0].Value} {
		if len(s) > MaxText || !strings.HasSuffix(s, "…") || !utf8.ValidString(s) {
			t.Errorf("got %d bytes ending %q, want at most %d ending in …", len(s), s[len(s)-8:], MaxText)
		}
	}
	if run.Rows[0].Server != "short" {
		t.Errorf("a short text changed: %q", run.Rows[0].Server)
	}
	if err := NewSuite([]Run{run}).Check(); err != nil {
		t.Errorf("a finished run does not pass Check: %v", err)
	}
}
