//go:build linux

package vanish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/vocab"
)

// http2Job measures net/http HTTP/2 calls on vanished pooled connections.
func http2Job(ctx context.Context, in HTTP2Input) (HTTP2Result, error) {
	out := HTTP2Result{Input: in}
	p, srv, stop, err := serverHost(ctx, in.Check, in.Retries2)
	if err != nil {
		return out, err
	}
	defer stop()

	ping := newH2Transport(&http.HTTP2Config{SendPingTimeout: in.SendPingTimeout, PingTimeout: in.PingTimeout})
	defer ping.CloseIdleConnections()
	plain := newH2Transport(nil)
	defer plain.CloseIdleConnections()
	timed := newH2Transport(nil)
	defer timed.CloseIdleConnections()
	h2s := []*h2Transport{ping, plain, timed}
	for _, tr := range h2s {
		if err := tr.first(ctx, srv.url); err != nil {
			return out, fmt.Errorf("first call before the peer vanished: %w", err)
		}
	}
	for _, tr := range h2s {
		if err := quiet(ctx, tr.conn()); err != nil {
			return out, err
		}
	}
	if out.Kernel, err = connKernel(plain.conn()); err != nil {
		return out, err
	}

	if err := p.Vanish(ctx); err != nil {
		return out, err
	}
	at := func(tr *h2Transport) error { return clock.Sleep(ctx, in.Inactivity-time.Since(tr.last)) }
	parallel(
		func() {
			if at(ping) == nil {
				out.Ping = ping.call(ctx, srv.url, 0)
			}
		},
		func() {
			if at(plain) == nil {
				out.KernelCall = plain.call(ctx, srv.url, 0)
			}
		},
		func() {
			if at(timed) == nil {
				out.Deadline = timed.call(ctx, srv.url, in.Deadline)
			}
		},
	)
	return out, ctx.Err()
}

// h2Transport is an h2c-only net/http Transport that remembers its connections and when it last
// read a response.
type h2Transport struct {
	tr *http.Transport

	mu    sync.Mutex
	conns []*net.TCPConn

	last  time.Time // the first response's end
	proto int
}

// newH2Transport returns an h2c-only Transport (conf nil: no health check) without TCP
// keepalive, so nothing but the calls crosses the link.
func newH2Transport(conf *http.HTTP2Config) *h2Transport {
	t := &h2Transport{}
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	d := net.Dialer{KeepAlive: -1}
	t.tr = &http.Transport{
		Proxy:              nil,
		Protocols:          &protos,
		HTTP2:              conf,
		DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err == nil {
				t.mu.Lock()
				t.conns = append(t.conns, c.(*net.TCPConn))
				t.mu.Unlock()
			}
			return c, err
		},
	}
	return t
}

// CloseIdleConnections closes the idle connections.
func (t *h2Transport) CloseIdleConnections() { t.tr.CloseIdleConnections() }

func (t *h2Transport) conn() *net.TCPConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[0]
}

func (t *h2Transport) dialled() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// first makes the exchange that pools one connection, and checks it spoke HTTP/2.
func (t *h2Transport) first(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := t.tr.RoundTrip(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	t.last, t.proto = time.Now(), resp.ProtoMajor
	if err != nil {
		return err
	}
	if resp.ProtoMajor != 2 {
		return fmt.Errorf("got %s, want HTTP/2", resp.Proto)
	}
	return nil
}

// call makes one GET, with a deadline when positive.
func (t *h2Transport) call(ctx context.Context, url string, deadline time.Duration) HTTP2Sample {
	start := time.Now()
	s := HTTP2Sample{Idle: start.Sub(t.last), HTTP2: t.proto == 2}
	if deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadline)
		defer cancel()
	}
	before := t.dialled()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = t.tr.RoundTrip(req); err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	s.Elapsed, s.Outcome, s.Attempts = time.Since(start), vocab.OK, 1
	s.Reused = t.dialled() == before
	if err != nil {
		s.Err, s.KernelTimeout = err.Error(), errors.Is(err, syscall.ETIMEDOUT)
		s.PingLost = strings.Contains(s.Err, pingLost)
		switch {
		case deadline > 0 && errors.Is(err, context.DeadlineExceeded):
			s.Outcome = vocab.Deadline
		default:
			s.Outcome = classify(err)
		}
	}
	return s
}

// quietFor is how long a connection must have sent nothing unacknowledged to count as idle;
// quietWait bounds the wait.
const (
	quietFor  = 20 * time.Millisecond
	quietWait = 2 * time.Second
)

// quiet waits until c has nothing in flight for quietFor: a late frame (a SETTINGS ACK) the
// vanished peer never acknowledged would start retransmissions before the measured call.
func quiet(ctx context.Context, c *net.TCPConn) error {
	deadline := time.Now().Add(quietWait)
	var segs uint32
	since := time.Now()
	for {
		info, err := tcpInfo(c)
		if err != nil {
			return err
		}
		if info.Unacked != 0 || info.Notsent_bytes != 0 || info.Data_segs_out != segs {
			segs, since = info.Data_segs_out, time.Now()
		}
		if time.Since(since) >= quietFor {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connection still sending after %v", quietWait)
		}
		if err := clock.Sleep(ctx, time.Millisecond); err != nil {
			return err
		}
	}
}
