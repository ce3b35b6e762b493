package h2node

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// newCluster starts a cluster of n h2c nodes from 127.0.0.1 and closes it at the end.
func newCluster(t *testing.T, n int, opts ...Option) *Cluster {
	t.Helper()
	var ips []netip.Addr
	var all [][]Option
	ip := netip.MustParseAddr("127.0.0.1")
	for range n {
		ips, all = append(ips, ip), append(all, opts)
		ip = ip.Next()
	}
	c, err := NewCluster(ips, "0", all)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestClusterOnePort: the nodes share one port on consecutive addresses; the control server
// listens on the first.
func TestClusterOnePort(t *testing.T) {
	c := newCluster(t, 3)
	_, port, _ := net.SplitHostPort(c.Nodes[0].Addr)
	for i, want := range []string{"127.0.0.1:", "127.0.0.2:", "127.0.0.3:"} {
		if c.Nodes[i].Addr != want+port {
			t.Errorf("node %d at %s, want %s%s", i+1, c.Nodes[i].Addr, want, port)
		}
	}
	if !strings.HasPrefix(c.ControlURL, "http://127.0.0.1:") || strings.HasSuffix(c.ControlURL, ":"+port) {
		t.Errorf("control URL %s, want 127.0.0.1 on a port of its own", c.ControlURL)
	}
	if _, err := NewCluster(nil, "0", nil); err == nil {
		t.Error("a cluster of no nodes: got nil error")
	}
}

// TestClusterControl: POST /freeze and /thaw freeze and thaw a node and show in GET /stats;
// a node that does not exist is a 400.
func TestClusterControl(t *testing.T) {
	c := newCluster(t, 2)
	post := func(path string) int {
		t.Helper()
		resp, err := http.Post(c.ControlURL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	stats := func() []NodeStats {
		t.Helper()
		resp, err := http.Get(c.ControlURL + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct{ Nodes []NodeStats }
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.Nodes
	}
	if code := post("/freeze?node=2"); code != http.StatusNoContent {
		t.Fatalf("freeze: got %d, want 204", code)
	}
	if st := stats(); st[0].Frozen || !st[1].Frozen || st[1].Node != 2 || st[1].URL != c.Nodes[1].URL {
		t.Errorf("got %+v, want node 2 frozen", st)
	}
	if code := post("/thaw"); code != http.StatusNoContent {
		t.Fatalf("thaw: got %d, want 204", code)
	}
	if st := stats(); st[0].Frozen || st[1].Frozen {
		t.Errorf("got %+v, want no node frozen", st)
	}
	for _, q := range []string{"/freeze?node=3", "/freeze?node=0", "/thaw?node=x"} {
		if code := post(q); code != http.StatusBadRequest {
			t.Errorf("%s: got %d, want 400", q, code)
		}
	}
}

// TestClusterShutdown: with nothing in flight Shutdown returns nil at once; a stream held by a
// frozen node is cut when the context ends, and Shutdown says so.
func TestClusterShutdown(t *testing.T) {
	idle := newCluster(t, 1)
	if err := idle.Shutdown(context.Background()); err != nil {
		t.Errorf("idle: got %v, want nil", err)
	}
	c := newCluster(t, 1, WithLatency(time.Minute))
	tr := goTransport(t, c.Nodes[0], nil)
	go func() {
		if resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(c.Nodes[0].URL + "/"); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for c.InFlight() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream never got in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Errorf("got %v after %v, want the deadline's error after some 200 ms", err, time.Since(start))
	}
	if n := c.InFlight(); n != 0 {
		t.Errorf("in flight after Shutdown: %d, want 0", n)
	}
}

// TestControlServerTimeouts: the control server closes a connection that sends its request
// a byte at a time within its read timeout, and an idle keep-alive within its idle timeout
// (before, both were still open 40 s later). Margin: 2.5 s for a loaded machine.
func TestControlServerTimeouts(t *testing.T) {
	c := newCluster(t, 1)
	addr := strings.TrimPrefix(c.ControlURL, "http://")
	tests := []struct {
		name   string
		first  string
		drip   string
		answer bool
		within time.Duration
	}{
		{"a body a byte every 200ms", "POST /thaw HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n", strings.Repeat("b", 100), false, controlReadTimeout},
		{"a head a byte every 200ms", "", "GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + strings.Repeat("s", 100), false, controlReadTimeout},
		{"an idle keep-alive", "GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "", true, controlIdleTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			io.WriteString(conn, tt.first)
			go func() {
				for i := range len(tt.drip) {
					time.Sleep(200 * time.Millisecond)
					if _, err := io.WriteString(conn, tt.drip[i:i+1]); err != nil {
						return
					}
				}
			}()
			rd := bufio.NewReader(conn)
			if tt.answer {
				resp, err := http.ReadResponse(rd, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				start = time.Now()
			}
			conn.SetReadDeadline(time.Now().Add(tt.within + 5*time.Second))
			_, err = io.Copy(io.Discard, rd)
			held := time.Since(start)
			if ne, ok := err.(net.Error); (ok && ne.Timeout()) || held > tt.within+2500*time.Millisecond {
				t.Errorf("held %v (%v), want closed within %v + 2.5 s", held, err, tt.within)
			}
		})
	}
}

// TestControlRefusesWebPages: the control API answers only its own address or localhost, and
// refuses a change from another origin or with a content type a web form can send (before, a
// page could freeze a node with a form, and read /stats through DNS rebinding).
func TestControlRefusesWebPages(t *testing.T) {
	c := newCluster(t, 1)
	do := func(method, path, host string, h ...string) int {
		t.Helper()
		req, err := http.NewRequest(method, c.ControlURL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(c.ControlURL, "http://"))
	tests := []struct {
		name, method, path, host string
		headers                  []string
		want                     int
	}{
		{"stats", "GET", "/stats", "", nil, 200},
		{"stats via localhost", "GET", "/stats", "localhost:" + port, nil, 200},
		{"stats via a rebinding name", "GET", "/stats", "attacker.example:" + port, nil, 403},
		{"freeze from a foreign origin", "POST", "/freeze", "", []string{"Origin", "http://attacker.example"}, 403},
		{"freeze by a form", "POST", "/freeze", "", []string{"Content-Type", "application/x-www-form-urlencoded"}, 403},
		{"freeze as text/plain", "POST", "/freeze", "", []string{"Content-Type", "text/plain"}, 403},
		{"freeze via a rebinding name", "POST", "/freeze", "attacker.example:" + port, nil, 403},
	}
	for _, tt := range tests {
		if got := do(tt.method, tt.path, tt.host, tt.headers...); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
	if st := c.Stats(); st[0].Frozen {
		t.Error("a refused request froze the node")
	}
	if got := do("POST", "/freeze", "", "Content-Type", "application/json"); got != http.StatusNoContent || !c.Stats()[0].Frozen {
		t.Errorf("a JSON freeze: got %d, frozen %v; want 204 and frozen", got, c.Stats()[0].Frozen)
	}
}
