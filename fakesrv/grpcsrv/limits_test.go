package grpcsrv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// calls makes n unary calls on cc, each with the id id(i), from 8 goroutines.
func calls(t *testing.T, cc *grpc.ClientConn, n int, id func(int) string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				err := invoke(context.Background(), cc, id(i), "")
				if err != nil && status.Code(err) != codes.InvalidArgument {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestLongChannelForgetsCalls: the front forgets each call once it ended, so a channel's
// state does not grow with its calls (before, 100,000 calls on one connection kept 100,000
// streams: 18 to 106 MB), and the server counts at most its log limit of call ids.
func TestLongChannelForgetsCalls(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 3_000
	}
	s, cc := start(t)
	id := func(i int) string { return "c" + itoa(i) }
	calls(t, cc, 1_000, func(i int) string { return "w" + itoa(i) })
	before := heapInUse()
	calls(t, cc, n, id)
	after := heapInUse()
	t.Logf("heap in use after 1,000 calls %.1f MB, after %d more %.1f MB", float64(before)/1e6, n, float64(after)/1e6)
	if after > before+10<<20 {
		t.Errorf("the heap grew from %d to %d bytes, want within 10 MiB", before, after)
	}
	n += 1_000
	if got := s.openStreams(); got != 0 {
		t.Errorf("after %d calls the front tracks %d streams, want 0", n, got)
	}
	kept, bytes, ids := s.stats.sizes()
	if kept > DefaultLogLimit || bytes > DefaultLogBytes || ids > DefaultLogLimit {
		t.Errorf("after %d calls: %d calls of %d bytes kept, %d ids; want at most %d, %d, %d", n, kept, bytes, ids, DefaultLogLimit, DefaultLogBytes, DefaultLogLimit)
	}
	st := s.Stats()
	if st.Streams != n || st.DroppedCalls+len(st.Calls) != n || len(st.Executions)+st.ForgottenIDs != n {
		t.Errorf("got %d streams, %d dropped + %d kept, %d executions + %d forgotten ids; want %d each", st.Streams, st.DroppedCalls, len(st.Calls), len(st.Executions), st.ForgottenIDs, n)
	}
}

// TestLongIDsBounded: ids longer than MaxCallLen are refused and kept cut; /stats stays within
// its bounds (before, 30,000 calls with 10 kB ids took 584 MB and /stats answered 403 MB).
func TestLongIDsBounded(t *testing.T) {
	n, opts, maxStats := 30_000, []Option(nil), 10<<20
	if testing.Short() {
		n, opts, maxStats = 2_000, []Option{WithLogLimit(500), WithLogBytes(256 << 10)}, 300<<10
	}
	s, cc := start(t, opts...)
	pad := strings.Repeat("x", 10_000)
	calls(t, cc, n, func(i int) string { return itoa(i) + pad })
	err := invoke(context.Background(), cc, pad, "")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "labrun-call: at most 128 bytes") {
		t.Errorf("a 10 kB id: got %v, want InvalidArgument naming the bound", err)
	}
	// Ids at the bound are counted, the oldest forgotten.
	calls(t, cc, n/2, func(i int) string { return (itoa(i) + pad)[:MaxCallLen] })
	res, err := http.Get(s.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	st := s.Stats()
	heap := heapInUse()
	t.Logf("%d calls: /stats %d bytes, %d calls kept, %d ids counted, heap in use %.1f MB", n+n/2+1, len(body), len(st.Calls), len(st.Executions), float64(heap)/1e6)
	if heap > 100<<20 {
		t.Errorf("heap in use %d bytes, want under 100 MiB", heap)
	}
	if len(body) > maxStats {
		t.Errorf("/stats is %d bytes, want at most %d", len(body), maxStats)
	}
	for _, c := range st.Calls {
		if len(c.ID) > MaxCallLen {
			t.Fatalf("a call kept with a %d-byte id, want at most %d", len(c.ID), MaxCallLen)
		}
	}
}

// rawConn is a client speaking HTTP/2 frames by hand.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	fr *http2.Framer
}

func dialRaw(t *testing.T, s *Server) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(nc, http2.ClientPreface)
	c := &rawConn{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.WriteSettings()
	return c
}

// until reads frames until match returns true; nil when the connection ended first.
func (c *rawConn) until(match func(http2.Frame) bool) http2.Frame {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return nil
		}
		if match(f) {
			return f
		}
	}
}

func goAway(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok }

// TestFrameAboveAdvertisedSize: a frame header announcing more than the 16 KiB advertised is a
// FRAME_SIZE_ERROR, with no 16 MiB buffer (before, the front read frames of up to 16 MiB:
// 20 connections took 347 MB).
func TestFrameAboveAdvertisedSize(t *testing.T) {
	s, _ := start(t)
	var streams uint32
	var advertised bool
	before := heapInUse()
	var conns []*rawConn
	for range 20 {
		c := dialRaw(t, s)
		var hdr [9]byte
		hdr[0], hdr[1], hdr[2] = 0xff, 0xff, 0xff // 16 MiB - 1
		hdr[3] = byte(http2.FrameData)
		binary.BigEndian.PutUint32(hdr[5:], 1)
		c.nc.Write(hdr[:])
		conns = append(conns, c)
	}
	time.Sleep(200 * time.Millisecond)
	after := heapInUse()
	t.Logf("heap in use %.1f MB, with 20 connections that announced 16 MiB frames %.1f MB", float64(before)/1e6, float64(after)/1e6)
	if after > before+20<<20 {
		t.Errorf("the heap grew from %d to %d bytes, want within 20 MiB (each frame would take 16)", before, after)
	}
	for _, c := range conns {
		f := c.until(func(f http2.Frame) bool {
			if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
				streams, advertised = sf.Value(http2.SettingMaxConcurrentStreams)
			}
			return goAway(f)
		})
		if f == nil || f.(*http2.GoAwayFrame).ErrCode != http2.ErrCodeFrameSize {
			t.Fatalf("got %v, want GOAWAY FRAME_SIZE_ERROR", f)
		}
	}
	if !advertised || streams != DefaultMaxConcurrentStreams {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS %d (%v), want %d by default", streams, advertised, DefaultMaxConcurrentStreams)
	}
}

// TestMalformedHeadersResetTheStream: a header block with a field HTTP/2 forbids resets its
// stream (RFC 9113 8.1.1), and the connection serves on (before, the front closed it with no
// GOAWAY).
func TestMalformedHeadersResetTheStream(t *testing.T) {
	s, _ := start(t)
	c := dialRaw(t, s)
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for _, h := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", MethodCall}, {":authority", "x"}, {"Upper-Case", "1"}} {
		enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
	}
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndHeaders: true, EndStream: true})
	c.fr.WritePing(false, [8]byte{1})
	var rst *http2.RSTStreamFrame
	f := c.until(func(f http2.Frame) bool {
		if r, ok := f.(*http2.RSTStreamFrame); ok {
			rst = r
		}
		p, ok := f.(*http2.PingFrame)
		return goAway(f) || (ok && p.IsAck())
	})
	if rst == nil || rst.StreamID != 1 || rst.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("got %v, want RST_STREAM PROTOCOL_ERROR on stream 1", rst)
	}
	if _, ok := f.(*http2.PingFrame); !ok {
		t.Errorf("got %v, want the PING answered on the same connection", f)
	}
}

// TestFrameErrorSendsGoAway: a connection error (DATA on stream 0) is answered with GOAWAY
// PROTOCOL_ERROR before the close.
func TestFrameErrorSendsGoAway(t *testing.T) {
	s, _ := start(t)
	c := dialRaw(t, s)
	c.fr.AllowIllegalWrites = true
	c.fr.WriteData(0, false, []byte("x"))
	f := c.until(goAway)
	if f == nil || f.(*http2.GoAwayFrame).ErrCode != http2.ErrCodeProtocol {
		t.Errorf("got %v, want GOAWAY PROTOCOL_ERROR", f)
	}
}

// TestShortHTTPRequestAnswered: a whole HTTP/1.0 request shorter than HTTP/2's preface is
// answered (before, the front waited for 24 bytes).
func TestShortHTTPRequestAnswered(t *testing.T) {
	s, _ := start(t)
	nc, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(nc, "GET /stats HTTP/1.0\r\n\r\n") // 23 bytes
	res, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden { // HTTP/1.0 without Host: guard.Host's refusal
		t.Errorf("got %d, want 403", res.StatusCode)
	}
}

// TestSilentConnectionClosed: a connection that sends nothing is closed after the preface
// timeout.
func TestSilentConnectionClosed(t *testing.T) {
	s, err := New(func(o *options) { o.prefaceTimeout = 200 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nc, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := nc.Read(make([]byte, 1)); err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("got %v after %v, want the connection closed after 200 ms", err, time.Since(start))
	}
}

// TestShutdownWithIdleConnections: Shutdown returns at once, with no error, when no call is in
// flight, whatever the connections do: one silent, one that sent only the preface, one that
// does not read (before, it waited until the clients left).
func TestShutdownWithIdleConnections(t *testing.T) {
	s, cc := start(t)
	if err := invoke(context.Background(), cc, "warm", ""); err != nil {
		t.Fatal(err)
	}
	for _, first := range []string{"", "PRI * HTTP/2.0\r\n", http2.ClientPreface} {
		nc, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		io.WriteString(nc, first)
	}
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil || time.Since(start) > 2*time.Second {
		t.Errorf("Shutdown: %v after %v, want nil within 2 s", err, time.Since(start))
	}
}

// TestShutdownCutsAtItsDeadline: a call in flight makes Shutdown wait until its context ends,
// then cut it and say so.
func TestShutdownCutsAtItsDeadline(t *testing.T) {
	s, cc := start(t)
	go invoke(context.Background(), cc, "h", "hang")
	for s.inFlight.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Shutdown(ctx)
	if err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("Shutdown: %v after %v, want its context's error after 300 ms", err, time.Since(start))
	}
}

// TestAcceptBacksOff: an accept error such as EMFILE is waited out (before, the first one
// ended the accept loop while the server ran on).
func TestAcceptBacksOff(t *testing.T) {
	s, _ := start(t)
	real, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &failingListener{Listener: real, fails: 3}
	t.Cleanup(func() { ln.Close() })
	s.conns.Add(1)
	go s.accept(ln)
	cc, err := grpc.NewClient("passthrough:///"+real.Addr().String(), grpcCreds())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := invoke(ctx, cc, "a", ""); err != nil {
		t.Fatal(err)
	}
	if got := ln.failed(); got != 3 {
		t.Errorf("got %d failed accepts, want 3", got)
	}
}

// failingListener fails its first accepts with EMFILE, as accept(2) does without a free file
// descriptor.
type failingListener struct {
	net.Listener
	mu    sync.Mutex // guards n
	fails int
	n     int
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.n < l.fails {
		l.n++
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

func (l *failingListener) failed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// TestChainHopAnswersDownstream: a hop whose downstream answers OK answers with the
// downstream's message (before, OK with none: grpc-go's clients saw INTERNAL).
func TestChainHopAnswersDownstream(t *testing.T) {
	_, cc := start(t)
	for _, fault := range []string{"next=pass", "next=2s"} {
		ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(FaultHeader, fault, CallHeader, "hop "+fault))
		var resp []byte
		err := cc.Invoke(ctx, MethodCall, []byte{}, &resp, grpc.ForceCodec(Codec{}))
		if err != nil || !bytes.Contains(resp, []byte("ok, attempt 1")) {
			t.Errorf("%s: got %q, %v; want the downstream's OK answer", fault, resp, err)
		}
	}
}

func grpcCreds() grpc.DialOption { return grpc.WithTransportCredentials(insecure.NewCredentials()) }

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestHugeMetadataRefused: a header list over 32 KiB is refused with RST_STREAM
// ENHANCE_YOUR_CALM and recorded, not passed on; a field over 32 KiB ends the connection with
// GOAWAY COMPRESSION_ERROR, as x/net's framer decides (before, 2,000 calls with 100 kB ids took
// 2.7 GB).
func TestHugeMetadataRefused(t *testing.T) {
	s, cc := start(t)
	field := strings.Repeat("x", 15_000)
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(CallHeader, "many", "a", field, "b", field, "c", field))
	var resp []byte
	err := cc.Invoke(ctx, MethodCall, []byte{}, &resp, grpc.ForceCodec(Codec{}))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("three 15 kB fields: got %v, want ResourceExhausted (RST_STREAM ENHANCE_YOUR_CALM)", err)
	}
	st := s.Stats()
	if len(st.Calls) != 1 || !strings.Contains(st.Calls[0].Front, "ENHANCE_YOUR_CALM") || s.openStreams() != 0 {
		t.Errorf("got %+v, want one call the front refused", st.Calls)
	}
	err = invoke(context.Background(), cc, strings.Repeat("x", 100_000), "")
	if status.Code(err) != codes.Unavailable || len(s.Stats().Calls) != 1 {
		t.Errorf("a 100 kB id: got %v and %d calls, want Unavailable and none more", err, len(s.Stats().Calls))
	}
}

// TestStatsGuarded: /stats answers only a Host that names the server, and /stats/reset refuses a
// web form's content type, as the fault server's do (guard).
func TestStatsGuarded(t *testing.T) {
	s, _ := start(t)
	req, _ := http.NewRequest("GET", s.URL+"/stats", nil)
	req.Host = "attacker.example"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("GET /stats with a foreign Host: got %d, want 403", res.StatusCode)
	}
	res, err = http.Post(s.URL+"/stats/reset", "application/x-www-form-urlencoded", strings.NewReader("x=1"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("POST /stats/reset from a form: got %d, want 403", res.StatusCode)
	}
}
