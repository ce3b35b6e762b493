package h2node

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newNode starts a node and closes it at the end of the test.
func newNode(t *testing.T, opts ...Option) *Node {
	t.Helper()
	n, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// goTransport is net/http's own HTTP/2 client for n: h2c with prior knowledge or TLS.
func goTransport(t *testing.T, n *Node, h2 *http.HTTP2Config) *http.Transport {
	t.Helper()
	var p http.Protocols
	tr := &http.Transport{HTTP2: h2, Protocols: &p}
	if cfg := n.ClientTLS(); cfg != nil {
		p.SetHTTP2(true)
		tr.TLSClientConfig = cfg
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// clientConn is one HTTP/2 connection to n made with Transport.NewClientConn, which waits for
// a stream slot in RoundTrip, once n's SETTINGS have arrived (Available+InFlight = want).
func clientConn(t *testing.T, n *Node, want int) *http.ClientConn {
	t.Helper()
	tr := goTransport(t, n, nil)
	scheme := "http"
	if n.ClientTLS() != nil {
		scheme = "https"
	}
	cc, err := tr.NewClientConn(context.Background(), scheme, n.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	waitLimit(t, cc, want)
	return cc
}

// waitLimit waits (2 s at most) until cc's stream limit, Available+InFlight, is want.
func waitLimit(t *testing.T, cc *http.ClientConn, want int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for cc.Available()+cc.InFlight() != want {
		if time.Now().After(deadline) {
			t.Fatalf("stream limit: got %d, want %d", cc.Available()+cc.InFlight(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func get(t *testing.T, rt http.RoundTripper, url string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return resp, string(body)
}

func TestServesNetHTTPClient(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts []Option
	}{
		{"h2c", nil},
		{"tls", []Option{WithTLS(ca)}},
		{"tls, second loopback address", []Option{WithTLS(ca), WithAddr("127.0.0.2:0")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t, tt.opts...)
			tr := goTransport(t, n, nil)
			for i := range 3 {
				resp, body := get(t, tr, n.URL+"/3/device/abc")
				if resp.ProtoMajor != 2 || resp.StatusCode != 200 || body != "ok\n" {
					t.Fatalf("call %d: got %s %d %q, want HTTP/2.0 200 \"ok\\n\"", i, resp.Proto, resp.StatusCode, body)
				}
				if got := resp.Header.Get("x-h2node-conn"); got != "1" {
					t.Errorf("call %d: x-h2node-conn: got %q, want \"1\"", i, got)
				}
			}
			resp, body := get(t, tr, n.URL+"/3/device/bad?status=400")
			if resp.StatusCode != 400 || body != `{"reason":"BadDeviceToken"}` {
				t.Errorf("status=400: got %d %q", resp.StatusCode, body)
			}
			st := n.Stats()
			// Every stream on one connection. net/http may dial a spare h2c connection that
			// carries nothing (its dials are not merged, docs/http2.md): that one is not
			// the node's to count.
			used := 0
			for _, k := range st.Streams {
				if k > 0 {
					used++
				}
			}
			if used != 1 || st.Streams[0] != 4 || st.Requests != 4 {
				t.Errorf("stats: got %d conns, streams %v, %d requests; want every stream on the first, [4], 4", st.Conns, st.Streams, st.Requests)
			}
			if st.Statuses[200] != 3 || st.Statuses[400] != 1 || st.InFlight != 0 {
				t.Errorf("stats: got statuses %v, in flight %d; want 3x200 1x400, 0", st.Statuses, st.InFlight)
			}
		})
	}
}

func TestRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"10.0.0.1:0", ":0", "0.0.0.0:0", "example.com:0"} {
		if n, err := New(WithAddr(addr)); err == nil {
			n.Close()
			t.Errorf("New(WithAddr(%q)): got no error, want a refusal", addr)
		}
	}
}

func TestOptionsValidated(t *testing.T) {
	for _, opt := range []Option{WithMaxStreams(0), WithLatency(-1), WithSlowAfter(-1, 0), WithSlowAfter(1, MaxDelay+1)} {
		if n, err := New(opt); err == nil {
			n.Close()
			t.Error("New: got no error for an invalid option")
		}
	}
}

// TestStreamLimitWaves: a connection that respects the limit of 2 carries 6 calls of 100 ms
// in three waves; the node never has more than 2 in flight.
func TestStreamLimitWaves(t *testing.T) {
	n := newNode(t, WithMaxStreams(2), WithLatency(100*time.Millisecond))
	cc := clientConn(t, n, 2)
	start := time.Now()
	var wg sync.WaitGroup
	ends := make([]time.Duration, 6)
	for i := range ends {
		wg.Go(func() {
			get(t, cc, n.URL+"/")
			ends[i] = time.Since(start)
		})
	}
	wg.Wait()
	st := n.Stats()
	if st.MaxInFlight != 2 || st.Refused != 0 || st.Conns != 1 || st.Streams[0] != 6 {
		t.Errorf("got max in flight %d, refused %d, conns %d, streams %v; want 2, 0, 1, [6]", st.MaxInFlight, st.Refused, st.Conns, st.Streams)
	}
	// Three waves of 100 ms: the last call ends after 300 ms (no upper bound but a loose one:
	// the machine may be slow, never fast).
	var last time.Duration
	for _, e := range ends {
		last = max(last, e)
	}
	if last < 300*time.Millisecond || last > 3*time.Second {
		t.Errorf("last call ended after %v, want 300 ms (up to 3 s on a loaded machine)", last)
	}
}

// rawClient speaks HTTP/2 frames to a node, for what net/http's client will not do.
type rawClient struct {
	t    *testing.T
	nc   net.Conn
	fr   *http2.Framer
	henc *hpack.Encoder
	hbuf bytes.Buffer
}

func dialRaw(t *testing.T, n *Node) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", n.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// next reads frames until one that is not a SETTINGS ACK or WINDOW_UPDATE.
func (c *rawClient) next() http2.Frame {
	c.t.Helper()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.t.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
		case *http2.WindowUpdateFrame:
			continue
		}
		return f
	}
}

// settings reads the next frame, which must be a SETTINGS, acknowledges it and returns its
// MAX_CONCURRENT_STREAMS.
func (c *rawClient) settings() uint32 {
	c.t.Helper()
	f, ok := c.next().(*http2.SettingsFrame)
	if !ok {
		c.t.Fatalf("got %v, want SETTINGS", f)
	}
	v, _ := f.Value(http2.SettingMaxConcurrentStreams)
	if err := c.fr.WriteSettingsAck(); err != nil {
		c.t.Fatal(err)
	}
	return v
}

func (c *rawClient) request(id uint32, path string) {
	c.t.Helper()
	c.hbuf.Reset()
	for _, hf := range []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "node"}, {Name: ":path", Value: path},
	} {
		c.henc.WriteField(hf)
	}
	err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndStream: true, EndHeaders: true})
	if err != nil {
		c.t.Fatal(err)
	}
}

// TestRefusedOverLimit: once the client acknowledged the limit of 2, a third stream is
// refused; before the acknowledgement the node is lenient.
func TestRefusedOverLimit(t *testing.T) {
	n := newNode(t, WithMaxStreams(2))
	c := dialRaw(t, n)
	if got := c.settings(); got != 2 {
		t.Fatalf("MAX_CONCURRENT_STREAMS: got %d, want 2", got)
	}
	// Let the node read the ACK before the HEADERS: a PING round trip orders them.
	c.fr.WritePing(false, [8]byte{1})
	if f, ok := c.next().(*http2.PingFrame); !ok || !f.IsAck() {
		t.Fatalf("got %v, want a PING ACK", f)
	}
	for _, id := range []uint32{1, 3, 5} {
		c.request(id, "/?delay=1m")
	}
	f, ok := c.next().(*http2.RSTStreamFrame)
	if !ok || f.StreamID != 5 || f.ErrCode != http2.ErrCodeRefusedStream {
		t.Fatalf("got %v, want RST_STREAM stream 5 REFUSED_STREAM", f)
	}
	// The client cancels stream 1; its slot frees and stream 7 is accepted.
	c.fr.WriteRSTStream(1, http2.ErrCodeCancel)
	c.request(7, "/?delay=1m")
	c.fr.WritePing(false, [8]byte{2})
	if f, ok := c.next().(*http2.PingFrame); !ok || !f.IsAck() {
		t.Fatalf("got %v, want a PING ACK (no refusal of stream 7)", f)
	}
	st := n.Stats()
	if st.Refused != 1 || st.Cancelled != 1 || st.InFlight != 2 || st.Streams[0] != 3 {
		t.Errorf("got refused %d, cancelled %d, in flight %d, streams %v; want 1, 1, 2, [3]", st.Refused, st.Cancelled, st.InFlight, st.Streams)
	}
}

// TestThrottle: a 400 lowers the connection's stream limit to 1, the next 200 restores it.
func TestThrottle(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			n := newNode(t, WithMaxStreams(10), WithThrottle(on))
			cc := clientConn(t, n, 10)
			resp, _ := get(t, cc, n.URL+"/3/device/bad?status=400")
			if resp.StatusCode != 400 {
				t.Fatalf("got %d, want 400", resp.StatusCode)
			}
			if on {
				waitLimit(t, cc, 1)
			}
			get(t, cc, n.URL+"/3/device/good")
			waitLimit(t, cc, 10)
		})
	}
}

// TestThrottleSerializesBurst: behind a 400, a burst of 5 rejected calls of 50 ms runs one at a
// time on a client that respects the limit: each 400 keeps the limit at 1. (The first success
// would restore it, and the rest of a burst would run side by side again.)
func TestThrottleSerializesBurst(t *testing.T) {
	n := newNode(t, WithMaxStreams(10), WithThrottle(true), WithLatency(50*time.Millisecond))
	cc := clientConn(t, n, 10)
	get(t, cc, n.URL+"/?status=400")
	waitLimit(t, cc, 1)
	from := n.Since()
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { get(t, cc, n.URL+"/?status=400") })
	}
	wg.Wait()
	samples, _ := n.Timeline()
	if got := MaxInFlight(samples, from, n.Since()); got != 1 {
		t.Errorf("in flight during the burst: got at most %d, want 1 (serialized)", got)
	}
}

func TestSlowAfter(t *testing.T) {
	n := newNode(t, WithSlowAfter(2, 300*time.Millisecond))
	tr := goTransport(t, n, nil)
	for i, slow := range []bool{false, false, true} {
		start := time.Now()
		get(t, tr, n.URL+"/")
		took := time.Since(start)
		if slow && took < 300*time.Millisecond {
			t.Errorf("call %d took %v, want at least 300 ms", i+1, took)
		}
		if !slow && took >= 300*time.Millisecond {
			t.Errorf("call %d took %v, want less than 300 ms", i+1, took)
		}
	}
}

// TestFreeze: a frozen node answers nothing until it thaws; Go's health check drops the
// connection at last frame + SendPingTimeout + PingTimeout.
func TestFreeze(t *testing.T) {
	t.Run("thaw", func(t *testing.T) {
		n := newNode(t)
		cc := clientConn(t, n, DefaultMaxStreams)
		n.Freeze()
		done := make(chan int, 1)
		go func() {
			resp, _ := get(t, cc, n.URL+"/")
			done <- resp.StatusCode
		}()
		select {
		case <-done:
			t.Fatal("a frozen node answered")
		case <-time.After(150 * time.Millisecond):
		}
		n.Thaw()
		select {
		case code := <-done:
			if code != 200 {
				t.Errorf("got %d after the thaw, want 200", code)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("no answer 3 s after the thaw")
		}
	})
	t.Run("health check", func(t *testing.T) {
		n := newNode(t)
		tr := goTransport(t, n, &http.HTTP2Config{SendPingTimeout: 100 * time.Millisecond, PingTimeout: 100 * time.Millisecond})
		get(t, tr, n.URL+"/")
		n.Freeze()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.URL+"/", nil)
		start := time.Now()
		_, err := tr.RoundTrip(req)
		took := time.Since(start)
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection lost") {
			t.Errorf("got %v, want the connection lost by the health check", err)
		}
		// Dropped 200 ms after the last frame; 2.5 s of margin for a loaded machine.
		if took > 2500*time.Millisecond {
			t.Errorf("dropped after %v, want about 200 ms", took)
		}
		n.Thaw()
	})
}

// TestCloseEndsStreams: Close ends streams that would answer in a minute, and waits for them.
func TestCloseEndsStreams(t *testing.T) {
	n, err := New(WithLatency(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, n)
	c.settings()
	c.request(1, "/")
	c.request(3, "/")
	deadline := time.Now().Add(2 * time.Second)
	for n.Stats().InFlight != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	n.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v", took)
	}
	if st := n.Stats(); st.InFlight != 0 || st.Requests != 2 {
		t.Errorf("after Close: got in flight %d, requests %d; want 0, 2", st.InFlight, st.Requests)
	}
}

func TestMaxInFlight(t *testing.T) {
	samples := []Sample{{0, 0}, {10, 1}, {20, 2}, {30, 1}, {40, 3}, {50, 0}}
	tests := []struct {
		from, to time.Duration
		want     int
	}{
		{0, 100, 3}, {0, 25, 2}, {25, 35, 2}, {31, 39, 1}, {45, 100, 3}, {51, 100, 0},
	}
	for _, tt := range tests {
		if got := MaxInFlight(samples, tt.from, tt.to); got != tt.want {
			t.Errorf("MaxInFlight(%v, %v): got %d, want %d", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		path    string
		status  int
		latency time.Duration
	}{
		{"/", 200, -1},
		{"/3/device/x?status=400", 400, -1},
		{"/?status=503&delay=5ms", 503, 5 * time.Millisecond},
		{"/?status=99", 400, 0},
		{"/?delay=forever", 400, 0},
		{"/?delay=11m", 400, 0},
	}
	for _, tt := range tests {
		status, latency, _ := answer(tt.path)
		if status != tt.status || latency != tt.latency {
			t.Errorf("answer(%q): got %d %v, want %d %v", tt.path, status, latency, tt.status, tt.latency)
		}
	}
}

func TestCertPEM(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.CertPEM()) {
		t.Fatal("CertPEM: not a PEM certificate")
	}
}
