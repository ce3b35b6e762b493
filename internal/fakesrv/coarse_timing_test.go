package fakesrv

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// coarseDelays makes n requests, on one kept connection, to a coarse server's
// /delay?delay=DELAY and returns how late each head was sent (sorted) and the process's CPU
// seconds per wall second meanwhile.
func coarseDelays(tb testing.TB, n int, delay time.Duration) ([]time.Duration, float64) {
	tb.Helper()
	s, err := New(WithPreciseTiming(false))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	c := &http.Client{}
	cpu0, wall0 := cpuTime(tb), time.Now()
	for range n {
		resp, err := c.Get(s.URL + "/delay?delay=" + delay.String())
		if err != nil {
			tb.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cpu, wall := cpuTime(tb)-cpu0, time.Since(wall0)
	var late []time.Duration
	for _, r := range s.Requests() {
		late = append(late, r.HeadSent.Sub(r.Arrived)-delay)
	}
	slices.Sort(late)
	return late, cpu.Seconds() / wall.Seconds()
}

// TestCoarseDelayLandsOnTime checks a coarse server's delays: never early, and on time within
// a margin for a loaded machine under the race detector (2 ms; a plain Go timer is up to 1 ms
// late on an idle one), at a modest CPU cost. The precision itself, a median within 0.2 ms
// at under 0.2 s of CPU per wall second (about 0.03 ms and 0.03 s measured on an idle
// machine), is BenchmarkCoarseDelay's to show.
func TestCoarseDelayLandsOnTime(t *testing.T) {
	late, cpu := coarseDelays(t, 15, 30*time.Millisecond)
	med := late[len(late)/2]
	t.Logf("lateness median %v (min %v, max %v); CPU %.3f s per wall second", med, late[0], late[len(late)-1], cpu)
	if late[0] < 0 || med > 2*time.Millisecond {
		t.Errorf("lateness from %v, median %v: want none early and a median within 2 ms", late[0], med)
	}
	if cpu > 0.5 {
		t.Errorf("CPU %.3f s per wall second, want at most 0.5", cpu)
	}
}

// BenchmarkCoarseDelay reports a coarse server's median lateness of a 500 ms /delay on a kept
// connection (late-µs, the target: at most 200) and its CPU per wall second meanwhile
// (cpu-s/s), and the CPU per wall second of a trickle of a byte every millisecond for a second
// (trickle-cpu-s/s, the target: at most 0.2): labrun serve's defaults.
func BenchmarkCoarseDelay(b *testing.B) {
	late, cpu := coarseDelays(b, max(7, b.N), 500*time.Millisecond)
	b.ReportMetric(float64(late[len(late)/2].Microseconds()), "late-µs")
	b.ReportMetric(cpu, "cpu-s/s")
	b.ReportMetric(coarseTrickle(b), "trickle-cpu-s/s")
}

// coarseTrickle is the process's CPU seconds per wall second while a coarse server trickles
// 1000 bytes, one every millisecond.
func coarseTrickle(tb testing.TB) float64 {
	tb.Helper()
	s, err := New(WithPreciseTiming(false))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	cpu0, wall0 := cpuTime(tb), time.Now()
	resp, err := http.Get(s.URL + "/trickle?bytes=1000&every=1ms")
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return (cpuTime(tb) - cpu0).Seconds() / time.Since(wall0).Seconds()
}
