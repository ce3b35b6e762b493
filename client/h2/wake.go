package h2

import (
	"net"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/clock"
)

// healthWake brings net/http's HTTP/2 health check closer to on time, without changing it:
// its timers are Go's, which in an idle process fire up to 1 ms late (clock), and labrun
// cannot reach them, so it sets a bare wake-up (clock.Alarm's zero value: best effort, since
// the woken thread runs its own processor's timers first) for the instant each falls due, from
// what it sees on the connection (h2c: the frames are visible). Measured: the drop row went
// from +3.4 to +1.0..1.5 ms of the model.
//
//   - the read loop restarts the SendPingTimeout timer after every frame it reads
//     (http2clientConnReadLoop.run: t.Reset(readIdleTimeout) after each ReadFrame), before it
//     processes the frame and reads on; so when it calls Read (the buffer empty), the timer
//     was restarted a moment before, and an alarm SendPingTimeout after that Read is due just
//     after the timer;
//   - the health check (http2ClientConn.healthCheck) makes a context of PingTimeout and then
//     writes the PING: an alarm PingTimeout after that write is due just after the context.
//
// An alarm set a moment after its timer wakes the process a moment after the timer is due,
// which is what makes it fire; one set before would wake it too early, to sleep another
// millisecond.
type healthWake struct {
	net.Conn
	sendPing, ping time.Duration

	mu     sync.Mutex // guards the alarms' use against Close
	closed bool
	idle   clock.Alarm // SendPingTimeout after the read loop last waited for bytes
	pinged clock.Alarm // PingTimeout after the last PING was written
}

func newHealthWake(c net.Conn, sendPing, ping time.Duration) *healthWake {
	if ping <= 0 {
		ping = 15 * time.Second // net/http's default PingTimeout
	}
	return &healthWake{Conn: c, sendPing: sendPing, ping: ping}
}

func (c *healthWake) Read(b []byte) (int, error) {
	c.set(&c.idle, c.sendPing)
	return c.Conn.Read(b)
}

func (c *healthWake) Write(b []byte) (int, error) {
	if hasPing(b) {
		c.set(&c.pinged, c.ping)
	}
	return c.Conn.Write(b)
}

func (c *healthWake) Close() error {
	c.mu.Lock()
	c.closed = true
	c.idle.Stop()
	c.pinged.Stop()
	c.mu.Unlock()
	return c.Conn.Close()
}

// set sets a to d from now, unless the connection is closed (an alarm left set would outlive
// it).
func (c *healthWake) set(a *clock.Alarm, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		a.Set(time.Now().Add(d))
	}
}

// hasPing reports whether p, a write starting at a frame boundary, holds a PING frame that is
// not an acknowledgement. net/http flushes whole frames; if p does not parse as frames, it
// reports false, and the health check fires as Go's timers do.
func hasPing(p []byte) bool {
	for len(p) >= 9 {
		length := int(p[0])<<16 | int(p[1])<<8 | int(p[2])
		if 9+length > len(p) {
			return false
		}
		if p[3] == 0x6 && p[4]&0x1 == 0 && length == 8 { // PING, no ACK flag
			return true
		}
		p = p[9+length:]
	}
	return false
}

// h2ReadTimer is a stream's read timeout: a timer, restarted whenever bytes arrive, whose
// effect an alarm brings forward to its instant. The alarm is a clock.Lazy, set only in the
// last clock.Ahead before the timeout: a stream answered in time never touches it, since
// setting the process's earliest alarm costs a system call and a wake of the clock's
// goroutine (25 µs a call in BenchmarkH2Overhead when every call set one).
type h2ReadTimer struct {
	d     time.Duration
	t     *time.Timer // the timeout
	f     func()      // the timeout's effect, called by t or by the alarm, whichever is first
	alarm *clock.Lazy

	mu      sync.Mutex // guards due and stopped
	due     time.Time  // when t fires, or just after
	stopped bool
}

func newH2ReadTimer(d time.Duration, f func()) *h2ReadTimer {
	rt := &h2ReadTimer{d: d, t: time.AfterFunc(d, f), f: f}
	rt.alarm = clock.NewLazy(rt.fire)
	rt.restartAlarm()
	return rt
}

// fire is the alarm's function: the timeout's effect, on time, unless the timeout was
// restarted or stopped since the alarm was set (f may then run twice, by the alarm and by t:
// it cancels a context, which is idempotent).
func (rt *h2ReadTimer) fire() {
	rt.mu.Lock()
	due := !rt.stopped && !time.Now().Before(rt.due)
	rt.mu.Unlock()
	if due {
		rt.f()
	}
}

// restart starts the timeout anew.
func (rt *h2ReadTimer) restart() {
	rt.t.Reset(rt.d)
	rt.restartAlarm()
}

// restartAlarm sets the alarm for d from now. It runs after the timer was (re)started, so the
// alarm is due at the timer's instant or just after, never before it.
func (rt *h2ReadTimer) restartAlarm() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if !rt.stopped {
		rt.due = time.Now().Add(rt.d)
		rt.alarm.Set(rt.due)
	}
}

func (rt *h2ReadTimer) stop() {
	rt.t.Stop()
	rt.mu.Lock()
	rt.stopped = true
	rt.alarm.Stop()
	rt.mu.Unlock()
}
