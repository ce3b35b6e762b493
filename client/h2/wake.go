package h2

import (
	"net"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/clock"
)

// healthWake brings net/http's HTTP/2 health check closer to on time (Go's timers may be 1 ms
// late, package clock) with bare alarms just after each timer falls due (docs/http2.md).
type healthWake struct {
	net.Conn
	sendPing, ping time.Duration

	mu     sync.Mutex
	closed bool
	idle   clock.Alarm // SendPingTimeout after the read loop's last wait
	pinged clock.Alarm // PingTimeout after the last PING
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

// set sets a to d from now, unless the connection is closed.
func (c *healthWake) set(a *clock.Alarm, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		a.Set(time.Now().Add(d))
	}
}

// hasPing reports whether p holds a PING that is not an acknowledgement.
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

// h2ReadTimer is a stream's read timeout, restarted when bytes arrive, brought on time by an
// alarm set only within clock.Ahead of it (a system call a timely stream never pays).
type h2ReadTimer struct {
	d     time.Duration
	t     *time.Timer
	f     func() // by t or the alarm, whichever is first
	alarm *clock.Lazy

	mu      sync.Mutex // guards due and stopped
	due     time.Time
	stopped bool
}

func newH2ReadTimer(d time.Duration, f func()) *h2ReadTimer {
	rt := &h2ReadTimer{d: d, t: time.AfterFunc(d, f), f: f}
	rt.alarm = clock.NewLazy(rt.fire)
	rt.restartAlarm()
	return rt
}

// fire is the timeout's effect, unless restarted or stopped since (f is idempotent).
func (rt *h2ReadTimer) fire() {
	rt.mu.Lock()
	due := !rt.stopped && !time.Now().Before(rt.due)
	rt.mu.Unlock()
	if due {
		rt.f()
	}
}

func (rt *h2ReadTimer) restart() {
	rt.t.Reset(rt.d)
	rt.restartAlarm()
}

// restartAlarm sets the alarm after the timer, so it is never due before it.
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
