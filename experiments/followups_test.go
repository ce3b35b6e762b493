package experiments

import (
	"testing"
)

func TestFollowUpsExperiment(t *testing.T) {
	t.Parallel()
	run := runScaledWith(t, NewFollowUps(), ProfileHC5) // no parameters: its documented figures always apply
	want := map[string]int{"okhttp: POST answered 408": 2, "go: POST answered 408": 1, "okhttp: redirect loop": 21, "go: redirect loop": 10}
	for _, r := range run.Rows {
		if n, ok := want[r.Name]; ok && *r.ServerExecutions != n {
			t.Errorf("%s: server got %d requests, want %d", r.Name, *r.ServerExecutions, n)
		}
	}
}
