package experiments

import (
	"testing"

	"github.com/labrun/labrun/internal/vocab"
)

// TestExecutedInTimelines: exp-c's plain server reserves on both attempts, and run.json says so
// per attempt (it used to say false for every measured attempt).
func TestExecutedInTimelines(t *testing.T) {
	run := runScaled(t, &Retry{ReadTimeout: 100 * ms, Delay: 300 * ms, Retries: 1})
	if len(run.Calls) == 0 {
		t.Fatal("no calls")
	}
	plain := run.Calls[0]
	if len(plain.Attempts) != 2 {
		t.Fatalf("got %d attempts, want 2", len(plain.Attempts))
	}
	for i, a := range plain.Attempts {
		if !a.Executed || a.Outcome != vocab.ReadTimeout {
			t.Errorf("attempt %d: executed %v, outcome %s; want executed, read-timeout", i+1, a.Executed, a.Outcome)
		}
	}
}
