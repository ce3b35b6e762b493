package experiments

import (
	"testing"
)

// TestFollowUpsExperiment runs exp-d: every row must pass (the server's requests, methods,
// bodies and the outcomes are the model's), and a few counts are the libraries' documented
// figures whatever the model says.
func TestFollowUpsExperiment(t *testing.T) {
	t.Parallel()
	run := runScaledWith(t, NewFollowUps(), ProfileHC5) // no parameters: its documented figures always apply
	want := map[string]int{
		"okhttp: POST answered 408 twice": 2, "okhttp: POST answered 307": 1, "okhttp: redirect loop": 21,
		"okhttp: 401, an authenticator that always answers": 21, "go: POST answered 408": 1, "go: redirect loop": 10,
		"go: POST answered 307": 2, "hc5: redirect loop": 2, "hc5: 60 redirects": 51,
	}
	seen := 0
	for _, r := range run.Rows {
		if !r.Pass {
			t.Errorf("%s: %s (expected %s, got %s)", r.Name, r.Reason, r.ExpectedOutcome, r.Outcome)
		}
		if r.DocumentedExecutions != nil && *r.ServerExecutions != *r.DocumentedExecutions {
			t.Errorf("%s: server got %d requests, the library's source says %d", r.Name, *r.ServerExecutions, *r.DocumentedExecutions)
		}
		if n, ok := want[r.Name]; ok {
			seen++
			if *r.ServerExecutions != n {
				t.Errorf("%s: server got %d requests, want %d", r.Name, *r.ServerExecutions, n)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d rows checked by name", seen, len(want))
	}
}
