package clock

import (
	"runtime"
	"sort"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitNone waits until no alarm is pending and the serving goroutine has ended (goleak
// retries until it has), or fails.
func waitNone(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for Pending() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("alarms pending: got %d, want 0", Pending())
		}
		time.Sleep(time.Millisecond)
	}
	goleak.VerifyNone(t)
}

func TestAlarmsServedThenGoroutineEnds(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("alarms are no-ops outside Linux")
	}
	now := time.Now()
	var as []*Alarm
	for i := range 5 {
		as = append(as, Wake(now.Add(time.Duration(10+i*5)*time.Millisecond)))
	}
	if got := Pending(); got != 5 {
		t.Fatalf("pending after 5 Wake: got %d, want 5", got)
	}
	waitNone(t)
	for i, a := range as {
		a.Stop() // stopping a served alarm is a no-op
		if a.set {
			t.Errorf("alarm %d: still set after it was served", i)
		}
	}
}

func TestStopSetAndPast(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("alarms are no-ops outside Linux")
	}
	far := time.Now().Add(time.Hour)
	a, b, c := Wake(far), Wake(far.Add(time.Second)), Wake(far.Add(2*time.Second))
	if got := Pending(); got != 3 {
		t.Fatalf("pending: got %d, want 3", got)
	}
	b.Stop()
	b.Stop()
	if got := Pending(); got != 2 {
		t.Fatalf("pending after a double Stop: got %d, want 2", got)
	}
	a.Set(far.Add(3 * time.Second)) // moved behind c: the heap keeps its order
	w.mu.Lock()
	first := w.h[0]
	w.mu.Unlock()
	if first != c {
		t.Errorf("earliest alarm after a move: got %v, want c", first.at)
	}
	c.Set(time.Now().Add(-time.Second)) // a past instant unsets
	a.Set(time.Time{})                  // so does zero
	if got := Pending(); got != 0 {
		t.Fatalf("pending after past and zero Set: got %d, want 0", got)
	}
	waitNone(t) // no alarm: the goroutine ends although the timer was armed an hour ahead
	var zero Alarm
	zero.Stop() // the zero value is an unset alarm
	zero.Set(time.Now().Add(time.Millisecond))
	waitNone(t)
}

func TestConcurrentUse(t *testing.T) {
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			var a Alarm
			for i := range 200 {
				a.Set(time.Now().Add(time.Duration(g*200+i) * time.Microsecond))
				if i%3 == 0 {
					a.Stop()
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	waitNone(t)
}

// BenchmarkLateness reports how late a 20 ms time.Timer fires in the median, with and without
// an alarm for it: on Linux about 0.5 ms without, 0.1 to 0.2 ms with.
func BenchmarkLateness(b *testing.B) {
	for _, alarm := range []bool{false, true} {
		name := "timer"
		if alarm {
			name = "timer+alarm"
		}
		b.Run(name, func(b *testing.B) {
			var late []float64
			for b.Loop() {
				d := 20 * time.Millisecond
				start := time.Now()
				tm := time.NewTimer(d)
				var a *Alarm
				if alarm {
					a = Wake(start.Add(d))
				}
				<-tm.C
				late = append(late, float64(time.Since(start)-d)/1e6)
				if a != nil {
					a.Stop()
				}
			}
			sort.Float64s(late)
			b.ReportMetric(late[len(late)/2], "ms-late/op")
		})
	}
}
