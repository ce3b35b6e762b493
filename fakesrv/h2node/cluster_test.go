package h2node

import (
	"context"
	"encoding/json"
	"errors"
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
