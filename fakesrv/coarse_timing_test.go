package fakesrv

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestCoarseDelayLandsOnTime checks a coarse server's delays: a plain Go timer answers
// /delay 0.2 to 1 ms late (0.24 ms in the median under this test, 0.8 ms for an idle
// server), the alarm within a few tens of microseconds, and the alarm's yielding costs little
// CPU (0.03 s per wall second measured). The margins are the server's promise: a median
// within 0.2 ms, at most 0.2 s of CPU per wall second.
func TestCoarseDelayLandsOnTime(t *testing.T) {
	s, err := New(WithPreciseTiming(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c := &http.Client{}
	const n = 15
	cpu0, wall0 := cpuTime(t), time.Now()
	for range n {
		resp, err := c.Get(s.URL + "/delay?delay=30ms")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cpu, wall := cpuTime(t)-cpu0, time.Since(wall0)
	var late []time.Duration
	for _, r := range s.Requests() {
		late = append(late, r.HeadSent.Sub(r.Arrived)-30*time.Millisecond)
	}
	slices.Sort(late)
	med := late[len(late)/2]
	t.Logf("lateness median %v (min %v, max %v); CPU %.3f s per wall second", med, late[0], late[len(late)-1], cpu.Seconds()/wall.Seconds())
	if med < 0 || med > 200*time.Microsecond {
		t.Errorf("median lateness %v, want 0 to 0.2 ms", med)
	}
	if ratio := cpu.Seconds() / wall.Seconds(); ratio > 0.2 {
		t.Errorf("CPU %.3f s per wall second, want at most 0.2", ratio)
	}
}
