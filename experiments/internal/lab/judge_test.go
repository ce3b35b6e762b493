package lab

import (
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// TestJudges: each judge sets its pair of the row and nothing else, a later judge overrides
// an earlier one, and a nil judge is skipped.
func TestJudges(t *testing.T) {
	one, two := results.Count(1), results.Count(2)
	p := model.Prediction{Total: 300 * time.Millisecond, Outcome: vocab.ReadTimeout}
	res := &client.Result{Elapsed: 301 * time.Millisecond, Outcome: vocab.ReadTimeout}
	tests := []struct {
		name string
		j    Judge
		want results.Row
	}{
		{"Lasted", Lasted(results.Ms(time.Second), nil), results.Row{ExpectedMs: results.Ms(time.Second)}},
		{"LastedD, a hang", LastedD(model.Forever, time.Second), results.Row{MeasuredMs: results.Ms(time.Second)}},
		{"Ended", Ended(vocab.OK, vocab.Deadline), results.Row{ExpectedOutcome: vocab.OK, Outcome: vocab.Deadline}},
		{"Calls", Calls(3, 2), results.Row{ExpectedCalls: 3, Calls: 2}},
		{"Executions", Executions(one, two), results.Row{ExpectedExecutions: one, ServerExecutions: two}},
		{"ExecutionsUpTo", ExecutionsUpTo(two, "why"), results.Row{ExpectedExecutionsMax: two, RangeReason: "why"}},
		{"Connections", Connections(one, two), results.Row{ExpectedNewConnections: one, NewConnections: two}},
		{"ConnectionsUpTo", ConnectionsUpTo(two, "why"), results.Row{ExpectedNewConnectionsMax: two, RangeReason: "why"}},
		{"Status", Status(one, two), results.Row{ExpectedStatus: one, Status: two}},
		{"Documented", Documented("4091 ms, ok", results.Ms(4091*time.Millisecond), one),
			results.Row{Documented: "4091 ms, ok", DocumentedMs: results.Ms(4091 * time.Millisecond), DocumentedExecutions: one}},
		{"Because", Because("why"), results.Row{RangeReason: "why"}},
		{"Saw", Saw("note"), results.Row{Server: "note"}},
		{"Skipped", Skipped("why"), results.Row{Skipped: "why"}},
		{"NoPool", NoPool(), results.Row{NoPool: true}},
		{"Called", Called(p, res), results.Row{ExpectedMs: results.Ms(300 * time.Millisecond), MeasuredMs: results.Ms(301 * time.Millisecond),
			ExpectedOutcome: vocab.ReadTimeout, Outcome: vocab.ReadTimeout, ExpectedCalls: 1, Calls: 1}},
		{"StillHung", StillHung(), results.Row{Outcome: vocab.Hang}},
		{"nil", nil, results.Row{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Name = "row"
			if got := Judged("row", tt.j); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := Judged("row", Saw("first"), Saw("second")); got.Server != "second" {
		t.Errorf("got server %q, want the later judge's", got.Server)
	}
}

// TestAttempt judges each attempt of a call, either side empty where it did not happen.
func TestAttempt(t *testing.T) {
	p := model.Prediction{Attempts: []model.Attempt{{End: 100 * time.Millisecond, Outcome: vocab.ReadTimeout, NewConnection: true}}}
	res := &client.Result{Attempts: []client.Attempt{{End: 101 * time.Millisecond, Outcome: vocab.ReadTimeout}, {End: 300 * time.Millisecond, Outcome: vocab.OK}}}
	first := Judged("a", Attempt(p, res, 0))
	if *first.ExpectedMs != 100 || *first.MeasuredMs != 101 || *first.ExpectedNewConnections != 1 || *first.NewConnections != 0 || first.ExpectedCalls != 1 || first.Calls != 1 {
		t.Errorf("attempt 1: got %+v", first)
	}
	second := Judged("b", Attempt(p, res, 1))
	if second.ExpectedMs != nil || second.ExpectedCalls != 0 || second.ExpectedOutcome != "" || *second.MeasuredMs != 300 || second.Outcome != vocab.OK {
		t.Errorf("attempt 2, which the model does not predict: got %+v", second)
	}
}
