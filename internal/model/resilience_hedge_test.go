package model

import (
	"testing"
	"time"
)

func TestHedges(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name       string
		took       []time.Duration
		late       time.Duration
		wantLo, wh int
	}{
		{"fast calls send none", ms(10, 11, 12), 0, 0, 0},
		{"slow ones send one each", ms(10, 40, 150), 0, 2, 2},
		{"an answer at the edge may have", ms(10, 31, 150), 0, 1, 2},
		{"a late machine widens the edge", ms(10, 35, 150), 10 * time.Millisecond, 1, 2},
	}
	for _, tt := range tests {
		lo, hi := Hedges(tt.took, 30*time.Millisecond, tt.late)
		if lo != tt.wantLo || hi != tt.wh {
			t.Errorf("%s: %d-%d, want %d-%d", tt.name, lo, hi, tt.wantLo, tt.wh)
		}
	}
}

func TestStormConnsReturnsAConnectionWhenItsCallEnds(t *testing.T) {
	ms := time.Millisecond
	// Calls 40 ms apart; the first two time out, the rest answer.
	calls := []BreakerCall{{0, 60 * ms, true}, {40 * ms, 60 * ms, true}, {80 * ms, 2 * ms, false}, {120 * ms, 2 * ms, false}}
	if d, c := StormConns(calls, nil, 1); d != 2 || c != 2 {
		t.Errorf("answers before the next call: %d dials, %d closes, want 2 and 2", d, c)
	}
	// The third call's answer takes 50 ms: the fourth finds no idle connection and dials.
	calls[2].Took = 50 * ms
	if d, _ := StormConns(calls, nil, 1); d != 3 {
		t.Errorf("an answer after the next call's start: %d dials, want 3", d)
	}
	// A shed call takes none.
	if d, _ := StormConns(calls, []bool{false, true, false, false}, 1); d != 2 {
		t.Errorf("with the second call shed: %d dials, want 2", d)
	}
}
