package h2

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/labrun/labrun/fakesrv/h2node"
)

// goH2Burst makes n GETs at once with g and returns how many failed.
func goH2Burst(t *testing.T, g *Go, n int, url string) int {
	t.Helper()
	var mu sync.Mutex
	failed := 0
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := g.Client.Get(url)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed
}

func TestGoH2(t *testing.T) {
	ca, err := h2node.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*h2node.CA{nil, ca} {
		name := map[bool]string{true: "tls", false: "h2c"}[c != nil]
		t.Run(name, func(t *testing.T) {
			node := h2Nodes(t, 1, c, nil, h2node.WithMaxStreams(10), h2node.WithLatency(100*time.Millisecond))[0]
			cfg := GoConfig{StrictMaxConcurrentRequests: true, Timeout: 5 * time.Second}
			if c != nil {
				cfg.TLS = c.ClientConfig()
			}
			g, err := NewGo(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(g.Close)
			resp, err := g.Client.Get(node.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Fatalf("got %s, want HTTP/2", resp.Proto)
			}
			// Strict, 10 calls for a limit of 10: one connection, all 10 in flight. (More
			// calls than the limit can stall net/http's strict mode: docs/http2.md.)
			if failed := goH2Burst(t, g, 10, node.URL+"/"); failed != 0 {
				t.Fatalf("%d calls failed", failed)
			}
			st := node.Stats()
			if g.Dials() != 1 || st.Conns != 1 || st.MaxInFlight != 10 {
				t.Errorf("got %d dials, %d connections, %d in flight at most; want 1, 1, 10", g.Dials(), st.Conns, st.MaxInFlight)
			}
			if got := g.DialsTo()[node.Addr]; got != 1 {
				t.Errorf("dials to %s: got %d, want 1", node.Addr, got)
			}
		})
	}
}

// TestGoH2HealthCheck: SendPingTimeout and PingTimeout reach net/http: a frozen node's
// connection is dropped and the call fails long before its 5 s timeout.
func TestGoH2HealthCheck(t *testing.T) {
	node := h2Nodes(t, 1, nil, nil)[0]
	g, err := NewGo(GoConfig{SendPingTimeout: 100 * time.Millisecond, PingTimeout: 100 * time.Millisecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	if failed := goH2Burst(t, g, 1, node.URL+"/"); failed != 0 {
		t.Fatal("warm-up failed")
	}
	node.Freeze()
	defer node.Thaw()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, node.URL+"/", nil)
	start := time.Now()
	_, err = g.Client.Do(req)
	if err == nil {
		t.Fatal("a frozen node answered")
	}
	// About 200 ms after the last frame; 2.5 s of margin for a loaded machine.
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("failed after %v, want about 200 ms (%v)", took, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for g.Closed() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if g.Closed() != 1 {
		t.Errorf("closed connections: got %d, want 1", g.Closed())
	}
}

func TestGoH2ConfigRejected(t *testing.T) {
	for _, cfg := range []GoConfig{{Timeout: -1}, {PingTimeout: -1}, {MaxConnsPerHost: -1}} {
		if _, err := NewGo(cfg); err == nil {
			t.Errorf("NewGo(%+v): got no error", cfg)
		}
	}
}

// TestGoH2SettingsSeen: over h2c the client counts the SETTINGS frames net/http processed:
// the node's first, then the one its throttle sends after a 400. ConnID names the
// connection a call got, from httptrace.
func TestGoH2SettingsSeen(t *testing.T) {
	node := h2Nodes(t, 1, nil, nil, h2node.WithThrottle(true), h2node.WithMaxStreams(10))[0]
	g, err := NewGo(GoConfig{StrictMaxConcurrentRequests: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	var conn int
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { conn = ConnID(info.Conn) },
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, node.URL+"/?status=400", nil)
	resp, err := g.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || conn != 1 {
		t.Fatalf("got status %d on connection %d, want 400 on 1", resp.StatusCode, conn)
	}
	// The initial SETTINGS, then the throttle's (limit 1): 2 s at most on a loaded machine.
	for deadline := time.Now().Add(2 * time.Second); g.SettingsSeen() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := g.SettingsSeen(); got != 2 {
		t.Errorf("SETTINGS processed: got %d, want 2", got)
	}
	if ConnID(nil) != 0 {
		t.Error("ConnID(nil) is not 0")
	}
}

// TestSettingsConnWalk: frames split anywhere, an empty SETTINGS and acknowledgements.
func TestSettingsConnWalk(t *testing.T) {
	var buf bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1})
	fr.WriteSettingsAck()
	fr.WritePing(false, [8]byte{})
	fr.WriteSettings()
	fr.WriteData(1, true, []byte("hello"))
	data := buf.Bytes()
	for _, size := range []int{1, 2, 7, 9, 10, len(data)} {
		var n atomic.Int64
		c := &settingsConn{processed: &n}
		for p := data; len(p) > 0; {
			k := min(size, len(p))
			c.walk(p[:k])
			p = p[k:]
		}
		if c.handed != 2 || c.headLen != 0 || c.left != 0 {
			t.Errorf("chunks of %d: %d SETTINGS handed over (want 2), state %d/%d", size, c.handed, c.headLen, c.left)
		}
	}
}
