package experiments

import (
	"reflect"
	"testing"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

func TestInventory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		v        *Inventory
		outcomes []vocab.Outcome
		reserved int
	}{
		// Scaled down: read 100 ms, deadline 150 ms, stuck server 400 ms, trickle 5 x 50 ms.
		{"as configured", &Inventory{Pool: 3, MaxTotal: 10, ConnectTimeout: 100 * ms, LeaseTimeout: 50 * ms,
			ReadTimeout: 100 * ms, Deadline: 150 * ms, Normal: 5 * ms, Stuck: 400 * ms, TrickleBytes: 5, TrickleEvery: 50 * ms},
			[]vocab.Outcome{vocab.OK, vocab.ReadTimeout, vocab.Deadline, results.State("leased 0, pending 0, available 0, max 10"), ""}, 2},
		{"propagated deadline", &Inventory{Pool: 3, MaxTotal: 10, ConnectTimeout: 100 * ms, LeaseTimeout: 50 * ms,
			ReadTimeout: 100 * ms, Deadline: 150 * ms, Normal: 5 * ms, Stuck: 400 * ms, TrickleBytes: 5, TrickleEvery: 50 * ms, PropagateDeadline: true},
			[]vocab.Outcome{vocab.OK, vocab.OK, vocab.Deadline, results.State("leased 0, pending 0, available 0, max 10"), ""}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := runScaled(t, tt.v)
			if got := outcomes(run); !reflect.DeepEqual(got, tt.outcomes) {
				t.Errorf("got outcomes %v, want %v", got, tt.outcomes)
			}
			if got := *run.Rows[4].ServerExecutions; got != tt.reserved {
				t.Errorf("got %d reservations, want %d", got, tt.reserved)
			}
		})
	}
}

func TestInventoryCheck(t *testing.T) {
	v := NewInventory()
	v.Pool = 200
	if err := v.Check(); err == nil || err.Error() != "--pool (200) must not exceed --max-total (100)" {
		t.Errorf("got %v, want the pool/max-total error", err)
	}
}

func TestInventoryProfile(t *testing.T) {
	v := NewInventory()
	v.PropagateDeadline = true
	tests := []struct {
		profile string
		want    string
	}{
		{ProfileHC5, ""},
		{ProfileOkHttp, "--propagate-deadline needs --client hc5: okhttp sends no budget"},
		{ProfileGo, "--propagate-deadline needs --client hc5: go sends no budget"},
	}
	for _, tt := range tests {
		p, err := LookupProfile(tt.profile)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if err := v.CheckProfile(p); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("--propagate-deadline under %s: got %q, want %q", tt.profile, got, tt.want)
		}
	}
	v.PropagateDeadline = false
	p, _ := LookupProfile(ProfileGo)
	if err := v.CheckProfile(p); err != nil {
		t.Errorf("without --propagate-deadline under go: got %v, want no error", err)
	}
}

// TestInventoryExercise runs the documentation's exercise 3, shortened: with a deadline
// shorter than the read timeout the stuck call ends on the deadline.
func TestInventoryExercise(t *testing.T) {
	t.Parallel()
	inv := &Inventory{Pool: 3, MaxTotal: 10, ConnectTimeout: 100 * ms, LeaseTimeout: 50 * ms,
		ReadTimeout: 150 * ms, Deadline: 100 * ms, Normal: 5 * ms, Stuck: 400 * ms, TrickleBytes: 5, TrickleEvery: 50 * ms}
	run := runScaled(t, inv)
	if got := run.Rows[1].Outcome; got != vocab.Deadline {
		t.Errorf("stuck call with a deadline shorter than the read timeout: got %s, want deadline", got)
	}
}
