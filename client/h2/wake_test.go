package h2

import (
	"bytes"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/clock"
	"golang.org/x/net/http2"
)

// frames writes frames with x/net's Framer and returns their bytes.
func frames(t *testing.T, write func(fr *http2.Framer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := write(http2.NewFramer(&buf, nil)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestHasPing(t *testing.T) {
	data := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	ping := frames(t, func(fr *http2.Framer) error { return fr.WritePing(false, data) })
	ack := frames(t, func(fr *http2.Framer) error { return fr.WritePing(true, data) })
	window := frames(t, func(fr *http2.Framer) error { return fr.WriteWindowUpdate(0, 1000) })
	for _, c := range []struct {
		name string
		p    []byte
		want bool
	}{
		{"a PING", ping, true},
		{"an acknowledgement", ack, false},
		{"a PING after another frame", append(append([]byte{}, window...), ping...), true},
		{"another frame only", window, false},
		{"a PING cut short", ping[:12], false},
		{"nothing", nil, false},
	} {
		if got := hasPing(c.p); got != c.want {
			t.Errorf("%s: hasPing = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestHealthWakeStops checks that a closed connection leaves no alarm set, and that one
// closed sets none. (The alarms are the process's: a straggler of an earlier test could hold
// one for a moment, so the counts are awaited, not read once.)
func TestHealthWakeStops(t *testing.T) {
	if !eventually(func() bool { return clock.Pending() == 0 }) {
		t.Skip("alarms of other tests still set")
	}
	a, b := net.Pipe()
	defer b.Close()
	w := newHealthWake(a, time.Hour, time.Hour)
	go func() { b.Write([]byte("x")) }()
	if _, err := w.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	go func() { b.Read(make([]byte, 64)) }()
	if _, err := w.Write(frames(t, func(fr *http2.Framer) error { return fr.WritePing(false, [8]byte{}) })); err != nil {
		t.Fatal(err)
	}
	if got := clock.Pending(); got < 2 && runtime.GOOS == "linux" { // elsewhere alarms are no-ops
		t.Errorf("after a read and a PING: %d alarms set, want 2", got)
	}
	w.Close()
	if !eventually(func() bool { return clock.Pending() == 0 }) {
		t.Errorf("after Close: %d alarms set, want none", clock.Pending())
	}
	w.Read(make([]byte, 1)) // closed: sets nothing
	if got := clock.Pending(); got != 0 {
		t.Errorf("a read after Close: %d alarms set, want none", got)
	}
}

// eventually reports whether cond holds within 10 seconds.
func eventually(cond func() bool) bool {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestH2ReadTimer checks the read timeout: restarted by bytes it fires d after the last of
// them, its alarm set only in the last stretch before it, and none left once it is stopped.
func TestH2ReadTimer(t *testing.T) {
	if !eventually(func() bool { return clock.Pending() == 0 }) {
		t.Skip("alarms of other tests still set")
	}
	fired := make(chan time.Time, 1)
	d := 200 * time.Millisecond
	rt := newH2ReadTimer(d, func() {
		select { // the alarm and the timer may both call it: the first counts
		case fired <- time.Now():
		default:
		}
	})
	if got := clock.Pending(); got != 0 {
		t.Errorf("a new timeout of %v: %d alarms set, want none until %v before it", d, got, clock.Ahead)
	}
	time.Sleep(d / 2)
	last := time.Now()
	rt.restart()
	at := <-fired
	if early := at.Sub(last); early < d {
		t.Errorf("fired %v after the restart, want at least %v", early, d)
	}
	rt.stop()
	if !eventually(func() bool { return clock.Pending() == 0 }) {
		t.Errorf("after stop: %d alarms set, want none", clock.Pending())
	}

	short := newH2ReadTimer(clock.Ahead/2, func() {}) // shorter than clock.Ahead: armed at once
	short.stop()
	if !eventually(func() bool { return clock.Pending() == 0 }) {
		t.Errorf("a short timeout stopped: %d alarms set, want none", clock.Pending())
	}
}
