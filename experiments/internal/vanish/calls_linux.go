//go:build linux

package vanish

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/vocab"
	"golang.org/x/sys/unix"
)

// serverHost checks the input, sets the client namespace's tcp_retries2, builds the pair and
// starts the server host's HTTP server; stop closes both.
func serverHost(ctx context.Context, check func() error, retries2 int) (*netns.Pair, *server, func(), error) {
	if err := check(); err != nil {
		return nil, nil, nil, err
	}
	if err := setSysctls(map[string]int{"net.ipv4.tcp_retries2": retries2}); err != nil {
		return nil, nil, nil, err
	}
	p, err := netns.NewPair(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	srv, err := startServer(p)
	if err != nil {
		p.Close()
		return nil, nil, nil, err
	}
	return p, srv, func() { srv.Close(); p.Close() }, nil
}

// server is the server host's HTTP/1.1 and h2c server: / answers "ok", /close "bye" and closes.
type server struct {
	http *http.Server
	addr string
	url  string
}

func startServer(p *netns.Pair) (*server, error) {
	l, err := p.ListenServer("tcp4", ":0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "bye")
	})
	// HTTP/1.1, and h2c with prior knowledge for clients starting with its preface.
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	s := &server{http: &http.Server{Handler: mux, Protocols: &protos}, addr: l.Addr().String()}
	s.url = "http://" + s.addr + "/"
	go func() { _ = s.http.Serve(l) }()
	return s, nil
}

// Close closes the listener and connections; the server vanished, so the client sees nothing.
func (s *server) Close() error { return s.http.Close() }

type caller interface {
	Do(ctx context.Context, req *http.Request) (*client.Result, error)
}

// call makes one call with a labrun client. A POST's one-byte body has no GetBody, so nothing
// replays it, and leaves in one segment, as a GET does.
func call(ctx context.Context, c caller, method, url string) Sample {
	var body io.Reader
	if method == http.MethodPost {
		body = io.NopCloser(strings.NewReader("x"))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return Sample{Outcome: vocab.Failed, Err: err.Error()}
	}
	if body != nil {
		req.ContentLength = 1
	}
	res, err := c.Do(ctx, req)
	s := Sample{Elapsed: res.Elapsed, Outcome: res.Outcome, Attempts: len(res.Attempts)}
	if n := len(res.Attempts); n > 0 {
		s.Phase = res.Attempts[n-1].Phase
		// Past connect without dialling: a reused connection.
		first := res.Attempts[0]
		s.Reused = !first.NewConnection && first.Phase != vocab.PhaseConnect && first.Phase != vocab.PhaseLease
	}
	if err != nil {
		s.Err, s.KernelTimeout = err.Error(), errors.Is(err, syscall.ETIMEDOUT)
	}
	return s
}

func transport(d net.Dialer) *http.Transport {
	return &http.Transport{Proxy: nil, DialContext: d.DialContext, DisableCompression: true}
}

// roundTrip makes one GET through tr and reports whether it reused a pooled connection.
func roundTrip(ctx context.Context, tr *http.Transport, url string) Sample {
	var reused bool
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, url, nil)
	if err != nil {
		return Sample{Outcome: vocab.Failed, Err: err.Error()}
	}
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	s := Sample{Elapsed: time.Since(start), Outcome: vocab.OK, Attempts: 1, Reused: reused}
	if err != nil {
		s.Outcome, s.Err, s.KernelTimeout = classify(err), err.Error(), errors.Is(err, syscall.ETIMEDOUT)
	}
	return s
}

// rawConn is a plain HTTP/1.1 connection that carried one exchange.
type rawConn struct {
	conn *net.TCPConn
	br   *bufio.Reader
	addr string
	last time.Time // the last response's end
}

func exchange(ctx context.Context, d net.Dialer, addr, path string) (*rawConn, error) {
	c, err := d.DialContext(ctx, "tcp4", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	rc := &rawConn{conn: c.(*net.TCPConn), br: bufio.NewReader(c), addr: addr}
	if _, err := io.WriteString(c, rc.requestText(path)); err != nil {
		c.Close()
		return nil, fmt.Errorf("request %s: %w", path, err)
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("response to %s: %w", path, err)
	}
	rc.last = time.Now()
	return rc, nil
}

func (rc *rawConn) requestText(path string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: " + rc.addr + "\r\n\r\n"
}

// Close closes the connection.
func (rc *rawConn) Close() error { return rc.conn.Close() }

// request writes a GET, waits up to readTimeout (0: no limit) for the first byte, and reports
// how it ended and the kernel's retransmissions by then.
func (rc *rawConn) request(ctx context.Context, readTimeout time.Duration) (Sample, int) {
	stop := context.AfterFunc(ctx, func() { _ = rc.conn.SetDeadline(time.Now()) })
	defer stop()
	start := time.Now()
	if readTimeout > 0 {
		_ = rc.conn.SetReadDeadline(start.Add(readTimeout))
	}
	_, err := io.WriteString(rc.conn, rc.requestText("/"))
	if err == nil {
		_, err = rc.br.ReadByte()
	}
	s := Sample{Elapsed: time.Since(start), Outcome: vocab.OK, Attempts: 1, Reused: true}
	if err != nil {
		s.Outcome, s.Err, s.KernelTimeout = classify(err), err.Error(), errors.Is(err, syscall.ETIMEDOUT)
	}
	retrans := 0
	if info, ierr := tcpInfo(rc.conn); ierr == nil {
		retrans = int(info.Total_retrans)
	}
	return s, retrans
}

// idleRead blocks in a read on the idle connection, as net/http does on a pooled one, timed
// from the last response byte.
func (rc *rawConn) idleRead(ctx context.Context) Sample {
	stop := context.AfterFunc(ctx, func() { _ = rc.conn.SetDeadline(time.Now()) })
	defer stop()
	_, err := rc.br.ReadByte()
	s := Sample{Elapsed: time.Since(rc.last), Outcome: vocab.OK}
	if err != nil {
		s.Outcome, s.Err, s.KernelTimeout = classify(err), err.Error(), errors.Is(err, syscall.ETIMEDOUT)
	}
	return s
}

// waitStale waits until the stale check sees that the server closed c.
func waitStale(ctx context.Context, c *net.TCPConn) error {
	deadline := time.Now().Add(closeWait)
	for {
		if healthy, _ := StaleCheck(c); !healthy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server's FIN not seen after %v", closeWait)
		}
		if err := clock.Sleep(ctx, time.Millisecond); err != nil {
			return err
		}
	}
}

// connKernel returns the connection's timers: RTO from TCP_INFO, the timer wheel's tick, and
// whether a tail-loss probe comes first.
func connKernel(c *net.TCPConn) (model.Kernel, error) {
	info, err := tcpInfo(c)
	if err != nil {
		return model.Kernel{}, err
	}
	rto := time.Duration(info.Rto) * time.Microsecond
	return model.Kernel{Tick: kernelTick(rto), RTO: rto, TLP: tailLossProbe()}, nil
}

func tcpInfo(c *net.TCPConn) (*unix.TCPInfo, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return nil, err
	}
	if ierr != nil {
		return nil, fmt.Errorf("TCP_INFO: %w", ierr)
	}
	return info, nil
}

// keepaliveSettings reads back TCP_KEEPIDLE, TCP_KEEPINTVL and TCP_KEEPCNT.
func keepaliveSettings(c *net.TCPConn) (idle, interval time.Duration, count int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, 0, err
	}
	var i, n, k int
	var e1, e2, e3 error
	if err := rc.Control(func(fd uintptr) {
		i, e1 = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
		n, e2 = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
		k, e3 = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
	}); err != nil {
		return 0, 0, 0, err
	}
	if err := errors.Join(e1, e2, e3); err != nil {
		return 0, 0, 0, fmt.Errorf("read keepalive settings: %w", err)
	}
	return time.Duration(i) * time.Second, time.Duration(n) * time.Second, k, nil
}

// tailLossProbe reports whether a tail loss probe precedes the first RTO (tcp_early_retrans 3
// or 4, with SACK).
func tailLossProbe() bool {
	er, err1 := netns.ReadSysctl("net.ipv4.tcp_early_retrans")
	sack, err2 := netns.ReadSysctl("net.ipv4.tcp_sack")
	return err1 == nil && err2 == nil && (er == "3" || er == "4") && sack == "1"
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
