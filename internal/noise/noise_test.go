package noise

import (
	"testing"
	"time"
)

// fake returns a sentinel that samples nothing by itself, with its start at t0.
func fake(t0 time.Time) *Sentinel {
	return &Sentinel{start: t0, stop: make(chan struct{}), done: make(chan struct{})}
}

func TestOverSumsLatenessAboveTheFloor(t *testing.T) {
	t0 := time.Now()
	s := fake(t0)
	// A quiet second: every wake-up late by half the floor, which counts for nothing.
	for i := range 1000 {
		s.record(t0.Add(time.Duration(i)*time.Millisecond), Floor/2)
	}
	// Then 100 ms in which ten wake-ups came 10 ms late.
	for i := range 10 {
		s.record(t0.Add(time.Second+time.Duration(i)*10*time.Millisecond), 10*time.Millisecond)
	}
	quiet := s.Over(t0, t0.Add(time.Second-bucketSpan))
	if quiet.Stolen != 0 || quiet.Wakeups < 990 {
		t.Errorf("quiet second: stolen %v over %d wake-ups, want 0 over about 1000", quiet.Stolen, quiet.Wakeups)
	}
	busy := s.Over(t0.Add(time.Second), t0.Add(1100*time.Millisecond))
	if want := 10 * (10*time.Millisecond - Floor); busy.Stolen != want || busy.MaxLate != 10*time.Millisecond {
		t.Errorf("busy stretch: stolen %v, max %v, want %v and 10ms", busy.Stolen, busy.MaxLate, want)
	}
	if got := busy.Share(); got < 0.8 || got > 1 {
		t.Errorf("busy share %.2f, want about 0.9", got)
	}
}

func TestWorstFindsTheBusiestStretch(t *testing.T) {
	t0 := time.Now()
	s := fake(t0)
	for i := range 2000 {
		late := time.Duration(0)
		if i >= 1200 && i < 1300 { // 100 ms in which each wake-up is 3 ms late
			late = 3 * time.Millisecond
		}
		s.record(t0.Add(time.Duration(i)*time.Millisecond), late)
	}
	end := t0.Add(2 * time.Second)
	per := 3*time.Millisecond - Floor
	if got, want := s.Worst(t0, end, 100*time.Millisecond), 100*per; got != want {
		t.Errorf("worst 100 ms: %v, want %v", got, want)
	}
	if got, want := s.Worst(t0, end, 20*time.Millisecond), 30*per; got < 20*per || got > want {
		t.Errorf("worst 20 ms: %v, want 20 to 30 wake-ups' worth (a stretch straddles buckets), %v at most", got, want)
	}
	if got := s.Worst(t0, t0.Add(time.Second), time.Second); got != 0 {
		t.Errorf("worst of a quiet second: %v, want 0", got)
	}
}

func TestEmptySentinel(t *testing.T) {
	s := fake(time.Now())
	if f := s.Over(time.Now(), time.Now().Add(time.Second)); f.Wakeups != 0 || f.Stolen != 0 {
		t.Errorf("no samples: %+v", f)
	}
	if got := s.Worst(time.Now(), time.Now().Add(time.Second), time.Second); got != 0 {
		t.Errorf("no samples: worst %v", got)
	}
}

func TestSentinelSamples(t *testing.T) {
	s := Start()
	from := time.Now()
	time.Sleep(200 * time.Millisecond)
	s.Stop()
	s.Stop() // twice is fine
	f := s.Over(from, time.Now())
	// Wake-ups every millisecond; on a loaded machine fewer, never none in 200 ms.
	if f.Wakeups < 10 || f.Wakeups > 250 {
		t.Errorf("%d wake-ups in 200 ms, want about 200", f.Wakeups)
	}
}
