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

// This file is an HTTP/2 client pool with OkHttp 3.x's rules (StreamAllocation, RealConnection.allocationLimit; docs/http2.md), built on
// net/http's single connections (Transport.NewClientConn): every stream to the host goes to
// the first connection whose allocations are below its allocationLimit, and when every
// connection is full, a new connection opens to the next route (resolved address). What
// OkHttp's network interceptors could change, the allocation limit and whether a connection
// takes new streams, is a pluggable Spread (h2spread.go). The pool dials itself and waits for
// the peer's first SETTINGS before it allocates on a new connection (h2sniff.go), so that it
// never allocates against net/http's provisional limit of 100.
//
// Locks: Pool.mu guards the pool's connections and their books (h2Conn's fields below the
// mark); a ClientConn has its own lock. The pool calls Available, InFlight and Reserve under
// its lock, so the state hook it installs never takes the pool's lock: it only sets an atomic
// flag, and a closed connection is noticed on the next pick.

// Config configures an Pool. The zero value of each field means "not set".
type Config struct {
	// Routes are the addresses ("ip:port") the host name resolves to, in order; a new
	// connection goes to the route after the previous connection's, in turn. At least one.
	Routes []string
	// TLS configures TLS connections (ALPN h2 is set); nil speaks h2c with prior knowledge.
	// Its ServerName defaults to the route's host, an IP address.
	TLS *tls.Config
	// ConnectTimeout bounds a new connection's TCP (and TLS) handshake (OkHttp:
	// connectTimeout).
	ConnectTimeout time.Duration
	// ReadTimeout bounds every wait of a stream for the server: for its response head, and
	// for each read of its body, restarting whenever bytes arrive (OkHttp: readTimeout on an
	// HTTP/2 stream). It starts when the stream is opened. A stream that times out is reset;
	// its connection carries on.
	ReadTimeout time.Duration
	// CallTimeout bounds the whole call, body included (OkHttp: callTimeout).
	CallTimeout time.Duration
	// AllocationLimit caps the streams per connection below the peer's
	// SETTINGS_MAX_CONCURRENT_STREAMS; 0 leaves the peer's limit.
	AllocationLimit int
	// Spread changes the allocation limit and ejects connections after calls, as the APNs
	// interceptor does (NewAPNs); nil is plain OkHttp.
	Spread Spread
	// MaxBody bounds the response body read into memory; 0 means client.DefaultMaxBody.
	MaxBody int64
	// Rule is the library's connection pick (rules.H2OkHttp, rules.H2OkHttp313). The pool
	// reads its DialPerCall, OkHttp 3.13's connection finding (okhttp313.go): a call that
	// finds no pooled connection with room dials its own, a connection is unlimited until the
	// peer's SETTINGS are read, a call moves to a pooled connection with room once it has
	// connected, and a refused stream is sent again once. Without it, a connection being set
	// up takes the calls that fit the peer's limit, as later OkHttp 3.x releases do. Whatever
	// the rule, each new connection goes to the next route and AllocationLimit caps its
	// streams (rules.H2OkHttp's Routes and AllocationLimit).
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

// Result is one call through an Pool.
type Result struct {
	// Route is the address ("ip:port") of the node the stream went to; "" if it got none.
	Route string
	// Conn is the 1-based number of its connection, in opening order; 0 if none.
	Conn int
	// NewConn says the call itself opened the connection.
	NewConn bool
	// InFlight is how many streams were allocated on the connection when the call got it,
	// itself not counted.
	InFlight int
	// Elapsed is the call's time; Stream the stream's alone (from the request to the end of
	// the body), the time the APNs interceptor measures.
	Elapsed, Stream time.Duration
	Outcome         vocab.Outcome
	// Status and Body are the response's, for a call that got one.
	Status int
	Body   []byte
	// Refused counts the REFUSED_STREAM answers the call met (Rule.DialPerCall): 2 fail it.
	Refused int
	// Err is the call's failure, an *Error, or nil.
	Err error
}

// ConnInfo describes one connection of an Pool.
type ConnInfo struct {
	// ID is its number, in opening order; Route its address.
	ID    int
	Route string
	// Streams counts the streams it carried; Peak the most allocated at once; Allocated the
	// streams allocated now.
	Streams, Peak, Allocated int
	// Limit is its allocation limit now: the peer's limit, capped; 0 once ejected or closed.
	// While it is being set up: the peer's limit on the connection set up last, capped, or
	// math.MaxInt32 before the pool has set up any.
	Limit int
	// Ejected says the Spread stopped it from taking new streams; Closed that it is unusable.
	Ejected, Closed bool
}

// Pool is an HTTP/2 client pool with OkHttp 3.x's rules. It is safe for concurrent use.
type Pool struct {
	cfg Config
	tr  *http.Transport
	// closeCtx ends the dials in progress when the pool closes.
	closeCtx context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the dials in progress

	mu      sync.Mutex // guards conns, next, learned and closed
	conns   []*h2Conn  // in opening order
	next    int        // the route of the next new connection
	learned int        // the peer's stream limit on the connection set up last; 0 before any
	dials   int        // the connections opened (Rule.DialPerCall: deduplicated ones included)
	closed  bool
}

// h2Conn is one connection of the pool.
type h2Conn struct {
	id    int
	route string
	ready chan struct{} // closed when the dial ended; cc and err are set before
	cc    *http.ClientConn
	err   error
	dead  atomic.Bool // the state hook saw the connection close
	// sniffer watched its first SETTINGS (Rule.DialPerCall); set with cc.
	sniffer *h2Sniffer

	// Guarded by Pool.mu:
	alloc   int         // streams allocated (OkHttp's allocations)
	waiters []*h2Waiter // calls waiting for the set-up, each counted as an allocation to come
	ejected bool        // allocationLimit = 0
	streams int
	peak    int
}

// unknownLimit is the stream limit a connection is assumed to have while it is being set up
// and the pool has not yet learned the peer's limit: none, as OkHttp 3.x assumes until the
// peer's SETTINGS arrive. Calls that join such a connection and do not fit once the SETTINGS
// arrive look again (acquire), by then knowing the limit.
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
	// net/http is told every connection is h2c with prior knowledge: the pool dials (and
	// does TLS) itself, so that it can see the peer's first SETTINGS frame go by (h2Sniffer).
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	p.tr = &http.Transport{
		Proxy:              nil, // a lab measures the route it names, never a proxy
		DialContext:        p.dial,
		DisableCompression: true,
		Protocols:          &protos,
	}
	return p, nil
}

// Close closes every connection, interrupting the streams in flight, and waits for the dials
// in progress. Calls made afterwards fail.
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

// Conns describes the pool's connections, in opening order.
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

// unusable reports whether c's dial failed or it closed since. Its dial must have ended.
func (c *h2Conn) unusable() bool {
	select {
	case <-c.ready:
		return c.err != nil || c.dead.Load() || c.cc.Err() != nil
	default:
		return false
	}
}

// limitLocked is c's allocation limit: the peer's stream limit as net/http knows it
// (Available + InFlight), capped by AllocationLimit and the Spread. Before c is usable it is
// the limit the pool learned on the connection set up last (the peers behind one host name
// are alike), or none before the first, capped.
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

// setUp opens a connection to route and waits for the peer's first SETTINGS, within
// ConnectTimeout. The set-up belongs to the pool, not to the call that asked for it: other
// calls join it, so no call's cancellation ends it.
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
	// The peer's limit is known once net/http has processed its SETTINGS: until then it
	// would allocate against net/http's provisional 100 and have streams refused.
	select {
	case <-dialed.sniffer.settled:
		return cc, nil
	case <-ctx.Done():
		cc.Close()
		return nil, fmt.Errorf("waiting for the server's SETTINGS: %w", ctx.Err())
	}
}

// h2DialedKey is the context key under which setUp passes an *h2Dialed to dial.
type h2DialedKey struct{}

// h2Dialed receives the connection dial made for one set-up.
type h2Dialed struct{ sniffer *h2Sniffer }

// dial is the Transport's DialContext: TCP, then TLS (ALPN h2) when configured, wrapped in
// a sniffer that notices when the peer's first SETTINGS has been processed.
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

// handshakeH2 runs a TLS handshake over conn that must agree on h2 (ALPN), with base's
// settings and, when base names no server, addr's host. conn is closed on failure.
func handshakeH2(ctx context.Context, conn net.Conn, base *tls.Config, addr string) (*tls.Conn, error) {
	cfg := base.Clone()
	cfg.NextProtos = []string{"h2"}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr) // addr is host:port: a route or net/http's
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

// release gives back a stream's allocation and, after an answer, tells the Spread.
func (p *Pool) release(c *h2Conn, answered bool, took time.Duration, now time.Time) {
	eject := answered && p.cfg.Spread != nil && p.cfg.Spread.Done(Done{Route: c.route, Took: took, At: now})
	p.mu.Lock()
	c.alloc--
	if eject {
		c.ejected = true
	}
	// OkHttp closes a connection that takes no new streams once its last allocation is
	// released (ConnectionPool.connectionBecameIdle).
	idle := p.cfg.Rule.DialPerCall && c.ejected && c.alloc == 0 && c.cc != nil
	p.mu.Unlock()
	if idle {
		c.cc.Close()
	}
}

// Dials counts the connections the pool opened, those deduplicated right after their connect
// included (Rule.DialPerCall).
func (p *Pool) Dials() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Rule.DialPerCall {
		return p.dials
	}
	return len(p.conns)
}

// errH2ReadTimeout is the cause a stream's read timeout cancels it with.
var errH2ReadTimeout = errors.New("read timeout")
