//go:build linux

package vanish

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/vocab"
)

const ms = time.Millisecond

// tolerance is the margin of a timing assertion: the kernel's timers fire on a timer wheel
// whose lateness the model counts as its average, and the measured spread is a few percent.
func within(t *testing.T, name string, got, want time.Duration) {
	t.Helper()
	margin := max(want*15/100, 50*ms)
	if got < want-margin || got > want+margin {
		t.Errorf("%s: got %v, want %v +- %v", name, got, want, margin)
	}
}

// needNamespaces skips the test, with the reason, where namespaces cannot be created.
func needNamespaces(t *testing.T) {
	t.Helper()
	netns.Require(t)
}

// pairOnLoopback returns both ends of a loopback TCP connection.
func pairOnLoopback(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// TestStaleCheck checks the check against what it can see on loopback: nothing (healthy),
// waiting data (healthy, and not consumed), a FIN and a RST (stale).
func TestStaleCheck(t *testing.T) {
	t.Parallel()
	settle := func() { time.Sleep(50 * ms) } // a segment crosses loopback in microseconds

	c, _ := pairOnLoopback(t)
	if healthy, reason := StaleCheck(c); !healthy || reason != nil {
		t.Errorf("idle: got (%v, %v), want healthy", healthy, reason)
	}

	c, s := pairOnLoopback(t)
	io.WriteString(s, "x")
	settle()
	if healthy, reason := StaleCheck(c); !healthy || reason != nil {
		t.Errorf("data waiting: got (%v, %v), want healthy", healthy, reason)
	}
	buf := make([]byte, 1)
	if n, err := c.Read(buf); n != 1 || err != nil || buf[0] != 'x' {
		t.Errorf("read after the check: got %d %q %v, want the byte the check peeked at", n, buf[:n], err)
	}

	c, s = pairOnLoopback(t)
	s.Close()
	settle()
	if healthy, reason := StaleCheck(c); healthy || !errors.Is(reason, io.EOF) {
		t.Errorf("FIN: got (%v, %v), want stale with io.EOF", healthy, reason)
	}

	c, s = pairOnLoopback(t)
	s.SetLinger(0) // close sends a RST
	s.Close()
	settle()
	if healthy, reason := StaleCheck(c); healthy || !errors.Is(reason, syscall.ECONNRESET) {
		t.Errorf("RST: got (%v, %v), want stale with ECONNRESET", healthy, reason)
	}
}

// TestDialDown dials a loopback blackhole from the test's own namespace: TCP_SYNCNT 1 gives up
// after 3 s with or without linear timeouts, and a connect timeout ends it first.
func TestDialDown(t *testing.T) {
	t.Parallel()
	addr := blackhole(t)
	ctx := context.Background()
	got := DialDown(ctx, addr, 1, 0)
	if !got.KernelTimeout || got.Outcome != vocab.Failed {
		t.Errorf("got %+v, want the kernel giving up", got)
	}
	within(t, "TCP_SYNCNT 1", got.Elapsed, model.Kernel{}.SYNGiveUp(1))
	got = DialDown(ctx, addr, 1, 200*ms)
	if got.Outcome != vocab.ConnectTimeout || got.KernelTimeout {
		t.Errorf("got %+v, want a connect timeout", got)
	}
	within(t, "connect timeout", got.Elapsed, 200*ms)
	if got := DialDown(ctx, addr, 0, 0); got.Outcome != vocab.Failed || got.Err == "" {
		t.Errorf("0 retries: got %+v, want a failure", got)
	}
}

func TestHostDown(t *testing.T) {
	needNamespaces(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	in := HostDownInput{SYNRetries: 1, ConnectTimeout: 500 * ms}
	got, err := HostDown(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	want := got.Kernel.SYNGiveUp(1)
	for name, s := range map[string]Sample{"dial": got.Dial, "client": got.Client} {
		if !s.KernelTimeout || s.Outcome != vocab.Failed {
			t.Errorf("%s: got %+v, want the kernel giving up", name, s)
		}
		within(t, name, s.Elapsed, want)
	}
	for name, s := range map[string]Sample{"dial timeout": got.DialTimeout, "client timeout": got.ClientTimeout} {
		if s.Outcome != vocab.ConnectTimeout || s.KernelTimeout {
			t.Errorf("%s: got %+v, want a connect timeout", name, s)
		}
		within(t, name, s.Elapsed, 500*ms)
	}
	if got.Client.Phase != vocab.PhaseConnect || got.Client.Reused {
		t.Errorf("client: got phase %s, reused %v; want the connect phase of a new connection", got.Client.Phase, got.Client.Reused)
	}
}

func TestDropped(t *testing.T) {
	needNamespaces(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	in := DroppedInput{Retries2: 1, ReadTimeout: 200 * ms, Deadline: 500 * ms, ConnectTimeout: 300 * ms, Inactivity: 100 * ms}
	got, err := Dropped(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kernel.RTO < model.DataMinRTO || !got.Kernel.TLP {
		t.Errorf("kernel: got %+v, want an RTO of at least 200 ms and a tail loss probe", got.Kernel)
	}
	giveUp := got.Kernel.DataGiveUp(1)
	for name, s := range map[string]Sample{"raw": got.Raw, "client POST": got.ClientPost} {
		if !s.KernelTimeout || s.Outcome != vocab.Failed || !s.Reused {
			t.Errorf("%s: got %+v, want the kernel giving up on a reused connection", name, s)
		}
		within(t, name, s.Elapsed, giveUp)
	}
	// TLP, then 3 retransmissions by the RTO timer; the third expiry gives up.
	if got.Retransmissions != 3 {
		t.Errorf("retransmissions: got %d, want 3", got.Retransmissions)
	}
	// labrun's client (HttpClient 5's rules) never re-sends: the GET fails when the kernel
	// gives up. Go's own net/http replays the GET on a new connection, which meets the
	// vanished server: a connect timeout after the kernel gave up.
	if got.Client.Outcome != vocab.Failed || !got.Client.KernelTimeout || got.Client.Attempts != 1 || !got.Client.Reused {
		t.Errorf("client GET: got %+v, want one attempt on a reused connection ended by the kernel", got.Client)
	}
	within(t, "client GET", got.Client.Elapsed, giveUp)
	within(t, "go GET", got.Go.Elapsed, giveUp+in.ConnectTimeout)
	if got.ReadTimeout.Outcome != vocab.ReadTimeout || !got.ReadTimeout.Reused {
		t.Errorf("read timeout: got %+v, want a read timeout on a reused connection", got.ReadTimeout)
	}
	within(t, "read timeout", got.ReadTimeout.Elapsed, in.ReadTimeout)
	if got.Deadline.Outcome != vocab.Deadline {
		t.Errorf("deadline: got %+v, want the deadline", got.Deadline)
	}
	within(t, "deadline", got.Deadline.Elapsed, in.Deadline)

	st := got.Stale
	if st.ClosedHealthy || st.ClosedReason != io.EOF.Error() {
		t.Errorf("stale check on the closed connection: got healthy %v (%s), want stale on EOF", st.ClosedHealthy, st.ClosedReason)
	}
	if !st.VanishedHealthy {
		t.Errorf("stale check on the vanished connection: got stale (%s), want healthy: it cannot see a silent drop", st.VanishedReason)
	}
	if st.After.Outcome != vocab.ReadTimeout {
		t.Errorf("request after the check: got %+v, want a read timeout", st.After)
	}
	within(t, "after the check", st.After.Elapsed, in.ReadTimeout)
}

func TestKeepalive(t *testing.T) {
	needNamespaces(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	// Sub-second settings: the kernel holds whole seconds, and Go rounds up.
	in := KeepaliveInput{Idle: 300 * ms, Interval: time.Second, Count: 1, Retries2: 0, ConnectTimeout: 300 * ms}
	got, err := Keepalive(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Idle != time.Second || got.Interval != time.Second || got.Count != 1 {
		t.Errorf("socket settings: got %v/%v/%d, want 1s/1s/1", got.Idle, got.Interval, got.Count)
	}
	if !got.Killed.KernelTimeout {
		t.Errorf("idle read: got %+v, want keepalive to end it", got.Killed)
	}
	within(t, "keepalive", got.Killed.Elapsed, got.Kernel.KeepaliveGiveUp(in.Idle, in.Interval, in.Count))
	if got.NextCall.Reused || got.NextCall.Outcome != vocab.ConnectTimeout {
		t.Errorf("next call with keepalive: got %+v, want a new connection and a connect timeout", got.NextCall)
	}
	within(t, "next call", got.NextCall.Elapsed, in.ConnectTimeout)
	if !got.NoKeepalive.Reused || got.NoKeepalive.Outcome != vocab.ConnectTimeout {
		t.Errorf("next call without keepalive: got %+v, want the dead pooled connection, then the replay's connect timeout", got.NoKeepalive)
	}
	veth := model.Kernel{Tick: got.Kernel.Tick, RTO: 204 * ms, TLP: true}
	within(t, "next call without keepalive", got.NoKeepalive.Elapsed, veth.DataGiveUp(0)+in.ConnectTimeout)
}

func TestChecks(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"syn 0", func() error { _, err := HostDown(ctx, HostDownInput{ConnectTimeout: time.Second}); return err }(), "syn retries"},
		{"syn 3", HostDownInput{SYNRetries: 3, ConnectTimeout: time.Second}.Check(), "syn retries"},
		{"linear", HostDownInput{SYNRetries: 1, LinearTimeouts: -1, ConnectTimeout: time.Second}.Check(), "linear timeouts"},
		{"no connect timeout", HostDownInput{SYNRetries: 1}.Check(), "connect timeout"},
		{"long connect timeout", HostDownInput{SYNRetries: 1, ConnectTimeout: time.Minute}.Check(), "connect timeout"},
		{"retries2", func() error { _, err := Dropped(ctx, DroppedInput{Retries2: 5}); return err }(), "retries2"},
		{"no read timeout", DroppedInput{Deadline: 1, ConnectTimeout: 1}.Check(), "read timeout"},
		{"inactivity", DroppedInput{ReadTimeout: 1, Deadline: 1, ConnectTimeout: 1, Inactivity: -1}.Check(), "inactivity"},
		{"negative deadline", DroppedInput{ReadTimeout: 1, Deadline: -1, ConnectTimeout: 1}.Check(), "deadline"},
		{"keepalive count", func() error { _, err := Keepalive(ctx, KeepaliveInput{Idle: 1, Interval: 1}); return err }(), "count"},
		{"keepalive too long", KeepaliveInput{Idle: time.Second, Interval: 2 * time.Second, Count: 3, ConnectTimeout: 1}.Check(), "give up within"},
		{"keepalive next", KeepaliveInput{Idle: 1, Interval: 1, Count: 1, ConnectTimeout: 1, NextCall: -1}.Check(), "next call"},
		{"keepalive retries2", KeepaliveInput{Idle: 1, Interval: 1, Count: 1, ConnectTimeout: 1, Retries2: 9}.Check(), "retries2"},
		{"http2 retries2", func() error { _, err := HTTP2(ctx, HTTP2Input{Retries2: -1}); return err }(), "retries2"},
		{"http2 no ping", HTTP2Input{Deadline: 1, PingTimeout: 1}.Check(), "send ping timeout"},
		{"http2 inactivity", HTTP2Input{SendPingTimeout: time.Second, PingTimeout: 1, Deadline: 1, Inactivity: time.Second}.Check(), "inactivity"},
		{"http2 long ping", HTTP2Input{SendPingTimeout: time.Minute, PingTimeout: 1, Deadline: 1}.Check(), "send ping timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("got %v, want an error about %s", tt.err, tt.want)
			}
		})
	}
	for _, ok := range []interface{ Check() error }{DefaultHostDown(), DefaultDropped(), DefaultKeepalive(), DefaultHTTP2()} {
		if err := ok.Check(); err != nil {
			t.Errorf("%T default: %v", ok, err)
		}
	}
}

// TestHTTP2: the health check closes the connection at the last frame + SendPingTimeout +
// PingTimeout; without it the kernel's tcp_retries2 ends the call, or its deadline.
func TestHTTP2(t *testing.T) {
	needNamespaces(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Second)
	defer cancel()
	in := HTTP2Input{Retries2: 1, SendPingTimeout: 400 * ms, PingTimeout: 200 * ms, Inactivity: 100 * ms, Deadline: 300 * ms}
	got, err := HTTP2(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]HTTP2Sample{"ping": got.Ping, "kernel": got.KernelCall, "deadline": got.Deadline} {
		if !s.HTTP2 || !s.Reused {
			t.Errorf("%s: got %+v, want HTTP/2 on the pooled connection", name, s)
		}
	}
	if !got.Ping.PingLost || got.Ping.Outcome != vocab.Failed {
		t.Errorf("ping: got %+v, want the connection lost to the health check", got.Ping)
	}
	within(t, "ping", got.Ping.Elapsed, model.HTTP2PingGiveUp(in.SendPingTimeout, in.PingTimeout)-got.Ping.Idle)
	if !got.KernelCall.KernelTimeout || got.KernelCall.PingLost {
		t.Errorf("kernel: got %+v, want the kernel giving up", got.KernelCall)
	}
	within(t, "kernel", got.KernelCall.Elapsed, got.Kernel.DataGiveUp(in.Retries2))
	if got.Deadline.Outcome != vocab.Deadline {
		t.Errorf("deadline: got %+v, want the deadline", got.Deadline)
	}
	within(t, "deadline", got.Deadline.Elapsed, in.Deadline)
}
