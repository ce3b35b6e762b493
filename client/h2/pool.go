// Package h2 is labrun's HTTP/2 clients: a Pool with OkHttp 3.x's rules (docs/http2.md) on
// net/http's single connections (Transport.NewClientConn), and Go, net/http's own client with
// its connections counted.
package h2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// The pool allocates on a new connection only once the peer's SETTINGS are in; the state hook,
// run under a ClientConn's lock, only sets an atomic flag.

// Config configures a Pool; zero fields are "not set".
type Config struct {
	// Routes are the host's addresses, used in turn by new connections. At least one.
	Routes []string
	// TLS configures TLS (ALPN h2); nil speaks h2c.
	TLS *tls.Config
	// ConnectTimeout bounds TCP and TLS handshakes (OkHttp: connectTimeout).
	ConnectTimeout time.Duration
	// ReadTimeout bounds each wait of a stream for the server (OkHttp: readTimeout); a timed-out
	// stream is reset, its connection carries on.
	ReadTimeout time.Duration
	// CallTimeout bounds the whole call (OkHttp: callTimeout).
	CallTimeout time.Duration
	// AllocationLimit caps streams per connection below the peer's limit; 0: no cap.
	AllocationLimit int
	// Spread changes limits and ejects connections (NewAPNs); nil is plain OkHttp.
	Spread  Spread
	MaxBody int64
	// Rule is the library's connection pick; DialPerCall is OkHttp 3.13's (okhttp313.go).
	Rule rules.H2
}

// Validate reports the first field that makes no sense.
func (c Config) Validate() error {
	if len(c.Routes) == 0 {
		return errors.New("client: an HTTP/2 pool needs at least one route")
	}
	for _, r := range c.Routes {
		if _, _, err := net.SplitHostPort(r); err != nil {
			return fmt.Errorf("client: route %q: %w", r, err)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"connect timeout", c.ConnectTimeout}, {"read timeout", c.ReadTimeout}, {"call timeout", c.CallTimeout}} {
		if f.v < 0 {
			return fmt.Errorf("client: %s must not be negative, got %v", f.name, f.v)
		}
	}
	switch {
	case c.AllocationLimit < 0:
		return fmt.Errorf("client: allocation limit must not be negative, got %d", c.AllocationLimit)
	case c.MaxBody < 0:
		return fmt.Errorf("client: max body must not be negative, got %d", c.MaxBody)
	}
	return nil
}

// Result is one call through a Pool.
type Result struct {
	Route string
	// Conn is the connection's number from 1; 0 if none.
	Conn    int
	NewConn bool
	// InFlight counts the connection's other allocations when the call got it.
	InFlight int
	// Stream is the stream's time, request to body's end (the APNs interceptor's measure).
	Elapsed, Stream time.Duration
	Outcome         vocab.Outcome
	Status          int
	Body            []byte
	// Refused counts REFUSED_STREAM answers; 2 fail the call.
	Refused int
	Err     error
}

// ConnInfo describes one connection of a Pool.
type ConnInfo struct {
	ID                       int
	Route                    string
	Streams, Peak, Allocated int
	// Limit is the allocation limit now (0 once ejected or closed).
	Limit           int
	Ejected, Closed bool
}

// Pool is an HTTP/2 client pool with OkHttp 3.x's rules, safe for concurrent use.
type Pool struct {
	cfg      Config
	tr       *http.Transport
	closeCtx context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	conns   []*h2Conn
	next    int
	learned int // the peer's limit on the last set-up
	dials   int
	closed  bool
}

type h2Conn struct {
	id      int
	route   string
	ready   chan struct{} // closed when the dial ended
	cc      *http.ClientConn
	err     error
	dead    atomic.Bool
	sniffer *h2Sniffer

	// Guarded by Pool.mu:
	alloc   int // OkHttp's allocations
	waiters []*h2Waiter
	ejected bool // allocationLimit = 0
	streams int
	peak    int
}

// unknownLimit is a limit before the peer's SETTINGS: none, as OkHttp 3.x assumes.
const unknownLimit = math.MaxInt32

// New returns an HTTP/2 pool for cfg.
func New(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = client.DefaultMaxBody
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{cfg: cfg, closeCtx: ctx, cancel: cancel}
	// The pool dials and does TLS itself, to see the peer's first SETTINGS go by.
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	p.tr = &http.Transport{
		Proxy:              nil,
		DialContext:        p.dial,
		DisableCompression: true,
		Protocols:          &protos,
	}
	return p, nil
}

// Close closes every connection, interrupting streams, and waits for dials; later calls fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	var errs []error
	for _, c := range conns {
		if c.cc != nil {
			errs = append(errs, c.cc.Close())
		}
	}
	return errors.Join(errs...)
}

// Conns describes the connections in opening order.
func (p *Pool) Conns() []ConnInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ConnInfo, 0, len(p.conns))
	for _, c := range p.conns {
		closed := c.unusable()
		info := ConnInfo{ID: c.id, Route: c.route, Streams: c.streams, Peak: c.peak, Allocated: c.alloc, Ejected: c.ejected, Closed: closed}
		if !closed && !c.ejected {
			info.Limit = p.limitLocked(c)
		}
		out = append(out, info)
	}
	return out
}

func (c *h2Conn) unusable() bool {
	select {
	case <-c.ready:
		return c.err != nil || c.dead.Load() || c.cc.Err() != nil
	default:
		return false
	}
}

// limitLocked is c's allocation limit, capped by AllocationLimit and the Spread; before c is
// usable, the last set-up's.
func (p *Pool) limitLocked(c *h2Conn) int {
	peer := unknownLimit
	if p.learned > 0 {
		peer = p.learned
	}
	select {
	case <-c.ready:
		if c.err == nil {
			peer = c.cc.Available() + c.cc.InFlight()
		}
	default:
	}
	l := peer
	if a := p.cfg.AllocationLimit; a > 0 {
		l = min(l, a)
	}
	if p.cfg.Spread != nil {
		l = min(l, p.cfg.Spread.AllocationLimit(peer))
	}
	return l
}

// setUp opens a connection and waits for the peer's first SETTINGS within ConnectTimeout; no
// call's cancellation ends it, as other calls join it.
func (p *Pool) setUp(route string) (*http.ClientConn, error) {
	ctx := p.closeCtx
	if p.cfg.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.ConnectTimeout)
		defer cancel()
	}
	dialed := new(h2Dialed)
	cc, err := p.tr.NewClientConn(context.WithValue(ctx, h2DialedKey{}, dialed), "http", route)
	if err != nil {
		return nil, err
	}
	// Until net/http processed the SETTINGS its limit is a provisional 100.
	select {
	case <-dialed.sniffer.settled:
		return cc, nil
	case <-ctx.Done():
		cc.Close()
		return nil, fmt.Errorf("waiting for the server's SETTINGS: %w", ctx.Err())
	}
}

type h2DialedKey struct{}

type h2Dialed struct{ sniffer *h2Sniffer }

func (p *Pool) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if p.cfg.TLS != nil {
		tc, err := handshakeH2(ctx, conn, p.cfg.TLS, addr)
		if err != nil {
			return nil, err
		}
		conn = tc
	}
	s := newH2Sniffer(conn)
	if dialed, ok := ctx.Value(h2DialedKey{}).(*h2Dialed); ok {
		dialed.sniffer = s
	}
	return s, nil
}

// handshakeH2 runs a TLS handshake that must agree on h2; conn is closed on failure.
func handshakeH2(ctx context.Context, conn net.Conn, base *tls.Config, addr string) (*tls.Conn, error) {
	cfg := base.Clone()
	cfg.NextProtos = []string{"h2"}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	if proto := tc.ConnectionState().NegotiatedProtocol; proto != "h2" {
		conn.Close()
		return nil, fmt.Errorf("client: %s negotiated %q, not h2", addr, proto)
	}
	return tc, nil
}

func (p *Pool) release(c *h2Conn, answered bool, took time.Duration, now time.Time) {
	eject := answered && p.cfg.Spread != nil && p.cfg.Spread.Done(Done{Route: c.route, Took: took, At: now})
	p.mu.Lock()
	c.alloc--
	if eject {
		c.ejected = true
	}
	// OkHttp closes an ejected connection at its last release (connectionBecameIdle).
	idle := p.cfg.Rule.DialPerCall && c.ejected && c.alloc == 0 && c.cc != nil
	p.mu.Unlock()
	if idle {
		c.cc.Close()
	}
}

// Dials counts the connections opened, deduplicated ones included.
func (p *Pool) Dials() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Rule.DialPerCall {
		return p.dials
	}
	return len(p.conns)
}

var errH2ReadTimeout = errors.New("read timeout")
