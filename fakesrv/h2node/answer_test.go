package h2node

import (
	"testing"
	"time"
)

// TestScheduleOrder checks that answers come due in due order, ties in the order they were
// scheduled, and that a removed (reset) stream never comes due.
func TestScheduleOrder(t *testing.T) {
	s := newSchedule()
	t0 := time.Now()
	mk := func(id uint32, due time.Duration) *stream {
		st := &stream{id: id, index: -1, due: t0.Add(due)}
		s.add(st)
		return st
	}
	mk(1, 30*time.Millisecond)
	mk(2, 10*time.Millisecond)
	mk(3, 10*time.Millisecond)
	reset := mk(4, 5*time.Millisecond)
	mk(5, time.Hour)
	s.remove(reset)
	s.remove(reset) // twice: a no-op

	batch, next := s.due(t0.Add(30 * time.Millisecond))
	var got []uint32
	for _, st := range batch {
		got = append(got, st.id)
	}
	if want := []uint32{2, 3, 1}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("due by 30ms: %v, want %v", got, want)
	}
	if !next.Equal(t0.Add(time.Hour)) {
		t.Errorf("next due at %v after t0, want 1h", next.Sub(t0))
	}
	if batch, _ := s.due(t0.Add(time.Minute)); len(batch) != 0 {
		t.Errorf("due by 1m: %d answers, want none", len(batch))
	}
	select {
	case <-s.kick:
	default:
		t.Error("scheduling an earlier answer did not kick the loop")
	}
}
