package fakesrv

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOrderLimits(t *testing.T) {
	s := newServer(t, WithMaxOrders(2))
	c, _ := newClient(t)
	long := strings.Repeat("o", MaxOrderLen+1)
	tests := []struct {
		order  string
		status int
		body   string
	}{
		{long, 400, fmt.Sprintf("order must be at most %d bytes, got %d\n", MaxOrderLen, MaxOrderLen+1)},
		{long[:MaxOrderLen], 200, "reserved order=" + long[:MaxOrderLen] + "\n"},
		{"b", 200, "reserved order=b\n"},
		{"c", 507, "order table full: 2 distinct order ids since the last reset (POST /stats/reset clears it)\n"},
		{"b", 200, "reserved order=b\n"}, // a known id still works
	}
	for _, tt := range tests {
		resp, body := mustFetch(t, c, s, "POST", "/reserve?order="+tt.order, "")
		if resp.StatusCode != tt.status || body != tt.body {
			t.Errorf("order of %d bytes: got %d %.80q, want %d %.80q", len(tt.order), resp.StatusCode, body, tt.status, tt.body)
		}
	}
	st := s.Stats()
	if st.Dropped.Orders != 1 || st.TotalReservations != 3 || len(st.Reservations) != 2 || st.Reservations["c"] != 0 {
		t.Errorf("Stats: got %d refused, %d reserved over %d orders, want 1, 3, 2", st.Dropped.Orders, st.TotalReservations, len(st.Reservations))
	}
	s.Reset()
	if resp, _ := mustFetch(t, c, s, "POST", "/reserve?order=c", ""); resp.StatusCode != 200 {
		t.Errorf("after Reset: got %d, want 200", resp.StatusCode)
	}
	if _, err := New(WithMaxOrders(0)); err == nil {
		t.Error("New accepted WithMaxOrders(0)")
	}
}

// TestLogBytes: the log keeps about the bytes it is given, and says how many entries it
// dropped; the counters still count every request.
func TestLogBytes(t *testing.T) {
	const limit = 20_000
	s := newServer(t, WithLogBytes(limit))
	c, _ := newClient(t)
	path := "/delay?pad=" + strings.Repeat("p", 1000)
	const n = 50
	for range n {
		mustFetch(t, c, s, "GET", path, "")
	}
	entries, bytes := s.log.size()
	if bytes > limit || entries == 0 || bytes != entries*entrySize(path) {
		t.Errorf("log: got %d entries of %d bytes in all, want at most %d bytes", entries, bytes, limit)
	}
	st := s.Stats()
	if st.Requests["delay"] != n || st.Dropped.LogEntries != n-entries {
		t.Errorf("Stats: got %d requests, %d dropped, want %d and %d", st.Requests["delay"], st.Dropped.LogEntries, n, n-entries)
	}
	if got := s.Requests(); got[len(got)-1].Seq != n {
		t.Errorf("last entry: got seq %d, want %d", got[len(got)-1].Seq, n)
	}
	if _, err := New(WithLogBytes(-1)); err == nil {
		t.Error("New accepted a negative log byte limit")
	}
}

// TestCoarseTiming: a coarse server keeps the absolute schedule of a trickle, and sends a
// trickle faster than a byte a millisecond in bursts, whole.
func TestCoarseTiming(t *testing.T) {
	s := newServer(t, WithPreciseTiming(false))
	c, _ := newClient(t)
	tests := []struct {
		path  string
		bytes int
		total time.Duration
	}{
		{"/trickle?bytes=4&every=50ms", 4, 200 * time.Millisecond},
		{"/trickle?bytes=3000&every=20us", 3000, 60 * time.Millisecond},
		{"/delay?delay=80ms&bytes=2", 2, 80 * time.Millisecond},
	}
	for _, tt := range tests {
		start := time.Now()
		resp, body := mustFetch(t, c, s, "GET", tt.path, "")
		took := time.Since(start)
		if resp.StatusCode != 200 || len(body) != tt.bytes {
			t.Errorf("%s: got %d and %d bytes, want 200 and %d", tt.path, resp.StatusCode, len(body), tt.bytes)
		}
		if took < tt.total || took > tt.total+slack {
			t.Errorf("%s: took %v, want between %v and %v", tt.path, took, tt.total, tt.total+slack)
		}
	}
}

// TestCoarseTrickleCPU: a coarse server spends at most 0.2 s of CPU per second on a trickle
// of a byte a millisecond (a precise one spins through about 1). The client's reads count
// too, in this process; under the race detector the bound is raceCPUFactor times larger.
func TestCoarseTrickleCPU(t *testing.T) {
	s := newServer(t, WithPreciseTiming(false), WithMaxDuration(3*time.Second))
	c, _ := newClient(t)
	resp, err := c.Get(s.URL + "/trickle?bytes=1048576&every=1ms")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	time.Sleep(200 * time.Millisecond)
	cpu0, wall0 := cpuTime(t), time.Now()
	time.Sleep(time.Second)
	cpu, wall := cpuTime(t)-cpu0, time.Since(wall0)
	s.Close()
	<-done
	if ratio, limit := cpu.Seconds()/wall.Seconds(), 0.2*raceCPUFactor(); ratio > limit {
		t.Errorf("the trickle cost %v of CPU in %v (%.2f per second), want at most %.2f", cpu, wall, ratio, limit)
	} else {
		t.Logf("the trickle cost %v of CPU in %v (%.3f per second)", cpu, wall, ratio)
	}
}

// raceCPUFactor is how much the race detector's instrumentation multiplies CPU time, as a
// margin for CPU bounds: 2.5 in a -race build, else 1.
func raceCPUFactor() float64 {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				return 2.5
			}
		}
	}
	return 1
}

// cpuTime returns the CPU time (user and system) this process has used.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestReadTimeout: a body slower than the read timeout is answered 408 (on HTTP/1.1 and
// h2c), while a stall that outlasts the read timeout is not mistaken for a client leaving.
func TestReadTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, p := range []Protocol{HTTP1, H2C} {
		t.Run(string(p)+" slow body", func(t *testing.T) {
			s := newServer(t, WithReadTimeout(timeout), WithProtocol(p))
			c := newProtoClient(t, s)
			pr, pw := io.Pipe()
			defer pw.Close()
			go func() {
				for range 20 {
					if _, err := pw.Write([]byte("b")); err != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			req, err := http.NewRequest("POST", s.URL+"/delay", pr)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := "request body not received within 300ms\n"; resp.StatusCode != 408 || string(body) != want {
				t.Errorf("got %d %q, want 408 %q", resp.StatusCode, body, want)
			}
			if took := time.Since(start); took < timeout || took > timeout+slack {
				t.Errorf("answered after %v, want between %v and %v", took, timeout, timeout+slack)
			}
			if got := waitFinished(t, s, 1); got.Status != 408 || got.ClientGone {
				t.Errorf("log: got Status %d, ClientGone %v, want 408 false", got.Status, got.ClientGone)
			}
		})
	}
	t.Run("stall outlasts it", func(t *testing.T) {
		s := newServer(t, WithReadTimeout(100*time.Millisecond))
		c, _ := newClient(t)
		resp, body := mustFetch(t, c, s, "GET", "/stall?max=400ms", "")
		if got := waitFinished(t, s, 1); resp.StatusCode != 200 || body != "" || got.ClientGone {
			t.Errorf("got %d %q, ClientGone %v; want an empty 200 at the stall's max", resp.StatusCode, body, got.ClientGone)
		}
	})
}

// TestIdleTimeout: with an idle timeout the server closes a keep-alive connection once idle
// that long (HTTP/2 sends GOAWAY first and closes up to a second later, when the client has
// not closed by then); without one (the default, for the pool experiments) it keeps it.
func TestIdleTimeout(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
	}{
		{"HTTP/1.1", nil},
		{"h2c", []Option{WithProtocol(H2C)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, append(tt.opts, WithIdleTimeout(200*time.Millisecond))...)
			c := newProtoClient(t, s)
			mustFetch(t, c, s, "GET", "/delay", "")
			idle := time.Now()
			waitFor(t, "the idle connection to close", func() bool { return s.ConnsOpen() == 0 })
			// The server went idle when it had written the answer, a little before the client
			// had read it: the idle time seen here is short by that lag, a few ms when loaded.
			if took := time.Since(idle); took < 180*time.Millisecond {
				t.Errorf("closed after %v idle, want at least 200ms less the lag", took)
			}
		})
	}
	t.Run("default keeps it", func(t *testing.T) {
		s := newServer(t)
		c := newProtoClient(t, s)
		mustFetch(t, c, s, "GET", "/delay", "")
		time.Sleep(time.Second)
		if got := s.ConnsOpen(); got != 1 {
			t.Errorf("ConnsOpen after 1 s idle: got %d, want 1", got)
		}
	})
}

// TestReadTimeoutHead: with a read timeout, a head that takes longer (up to 10 s) has its
// connection closed.
func TestReadTimeoutHead(t *testing.T) {
	s := newServer(t, WithReadTimeout(200*time.Millisecond))
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /delay HTTP/1.1\r\n")
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	start := time.Now()
	_, err = bufio.NewReader(conn).ReadString('\n')
	if took := time.Since(start); err == nil || took > 200*time.Millisecond+slack {
		t.Errorf("a head unfinished for %v: got %v, want the connection closed within 200 ms", took, err)
	}
}
