package clock

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func skipOutsideLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("alarms are no-ops outside Linux")
	}
}

// waitNone waits until no alarm is pending and the serving goroutine has ended, or fails.
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

// TestCalledInOrderNeverEarly: every alarm's function is called once, in the order of the
// instants, and never before its instant.
func TestCalledInOrderNeverEarly(t *testing.T) {
	skipOutsideLinux(t)
	var mu sync.Mutex
	var order []int
	var early atomic.Int32
	start := time.Now()
	// Set out of order; alarm 4 is due 0.2 ms after alarm 3, within one Lead of it.
	offsets := []time.Duration{32 * time.Millisecond, 23 * time.Millisecond, 29 * time.Millisecond,
		26 * time.Millisecond, 26*time.Millisecond + 200*time.Microsecond}
	for i, off := range offsets {
		at := start.Add(off)
		NewAlarm(func() {
			if time.Now().Before(at) {
				early.Add(1)
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}).Set(at)
	}
	waitNone(t)
	if n := early.Load(); n != 0 {
		t.Errorf("functions called before their instant: got %d, want 0", n)
	}
	want := []int{1, 3, 4, 2, 0}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != len(want) {
		t.Fatalf("calls: got %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("call order: got %v, want %v", order, want)
		}
	}
}

func TestStopReplaceAndPast(t *testing.T) {
	skipOutsideLinux(t)
	var calls atomic.Int32
	count := func() { calls.Add(1) }
	far := time.Now().Add(time.Hour)
	a, b, c := NewAlarm(count), NewAlarm(count), NewAlarm(count)
	a.Set(far)
	b.Set(far.Add(time.Second))
	c.Set(far.Add(2 * time.Second))
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
		t.Errorf("earliest alarm after a move: got one at %v, want c", first.at)
	}
	c.Set(time.Now().Add(-time.Second)) // a past instant unsets
	a.Set(time.Time{})                  // so does zero
	if got := Pending(); got != 0 {
		t.Fatalf("pending after past and zero Set: got %d, want 0", got)
	}
	waitNone(t) // nothing pending: the goroutine ends although the timer was armed an hour ahead
	if got := calls.Load(); got != 0 {
		t.Errorf("calls of stopped or unset alarms: got %d, want 0", got)
	}
	// A setting replaced by a later one is called once, for the later one.
	d := NewAlarm(count)
	d.Set(time.Now().Add(50 * time.Millisecond))
	d.Set(time.Now().Add(60 * time.Millisecond))
	waitNone(t)
	if got := calls.Load(); got != 1 {
		t.Errorf("calls after a replaced setting: got %d, want 1", got)
	}
}

func TestNilFunctionPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewAlarm(nil): got no panic")
		}
	}()
	NewAlarm(nil)
}

func TestConcurrentUse(t *testing.T) {
	var calls atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			a := NewAlarm(func() { calls.Add(1) })
			for i := range 200 {
				a.Set(time.Now().Add(time.Duration(g*200+i) * time.Microsecond))
				if i%3 == 0 {
					a.Stop()
				}
			}
		})
	}
	wg.Wait()
	waitNone(t)
	if got := calls.Load(); got > 8*200 {
		t.Errorf("calls: got %d, want at most one per setting (%d)", got, 8*200)
	}
}

// BenchmarkLateness reports how late the effect of a 20 ms timer comes, in the median: a bare
// time.Timer (about 0.5 ms on the lab's machine), and an alarm (about 0.01 ms).
func BenchmarkLateness(b *testing.B) {
	for _, alarm := range []bool{false, true} {
		name := "timer"
		if alarm {
			name = "alarm"
		}
		b.Run(name, func(b *testing.B) {
			var late []float64
			for b.Loop() {
				d := 20 * time.Millisecond
				start := time.Now()
				fired := make(chan time.Time, 2)
				tm := time.AfterFunc(d, func() { fired <- time.Now() })
				if alarm {
					a := NewAlarm(func() { fired <- time.Now() })
					a.Set(start.Add(d))
				}
				at := <-fired
				tm.Stop()
				late = append(late, float64(at.Sub(start)-d)/1e6)
			}
			sort.Float64s(late)
			b.ReportMetric(late[len(late)/2], "ms-late/op")
		})
	}
}

// TestWakeOnly: a bare wake-up (Wake, or the zero Alarm) is served at its instant and calls
// nothing; it can be stopped like any alarm.
func TestWakeOnly(t *testing.T) {
	skipOutsideLinux(t)
	a := Wake(time.Now().Add(5 * time.Millisecond))
	var z Alarm
	z.Set(time.Now().Add(time.Hour))
	if got := Pending(); got != 2 {
		t.Fatalf("pending: got %d, want 2", got)
	}
	z.Stop()
	waitNone(t)
	a.Stop() // served already: a no-op
}

// TestLazy: a lazy alarm far from its instant sets no alarm until Ahead before it, then calls
// its function once, never early; moved or stopped, it follows.
func TestLazy(t *testing.T) {
	skipOutsideLinux(t)
	var calls atomic.Int32
	var early atomic.Bool
	var at atomic.Int64
	l := NewLazy(func() {
		if time.Now().UnixNano() < at.Load() {
			early.Store(true)
		}
		calls.Add(1)
	})
	far := time.Now().Add(time.Hour)
	l.Set(far)
	if got := Pending(); got != 0 {
		t.Fatalf("alarms pending an hour ahead: got %d, want 0 (set only Ahead before)", got)
	}
	soon := time.Now().Add(30 * time.Millisecond)
	at.Store(soon.UnixNano())
	l.Set(soon) // moved nearer: the timer sets the alarm 5 ms before
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := calls.Load(); got != 1 || early.Load() {
		t.Errorf("calls: got %d (early %v), want 1, on time", got, early.Load())
	}
	near := time.Now().Add(2 * time.Millisecond) // within Ahead: set at once
	at.Store(near.UnixNano())
	l.Set(near)
	l.Stop()
	waitNone(t)
	if got := calls.Load(); got != 1 {
		t.Errorf("calls after a stopped setting: got %d, want 1", got)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep: got %v, want nil", err)
	}
	cause := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, cause) {
		t.Errorf("Sleep on a done context: got %v, want %v", err, cause)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, cause) {
		t.Errorf("Sleep(0) on a done context: got %v, want %v", err, cause)
	}
	if SleepUntil(ctx, time.Now().Add(time.Hour)) {
		t.Error("SleepUntil on a done context: got true, want false")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a done context still waited %v", d)
	}
	if !SleepUntil(context.Background(), time.Now().Add(time.Millisecond)) {
		t.Error("SleepUntil: got false, want true")
	}
}
