package h2

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// GoConfig is net/http's own HTTP/2 client as a Go user sets it up, for the profile "go"
// over HTTP/2: measured as it is, not reimplemented. The zero value of each field is
// net/http's default.
type GoConfig struct {
	// TLS speaks HTTP/2 over TLS (Protocols.SetHTTP2) with this configuration; nil speaks h2c
	// with prior knowledge (Protocols.SetUnencryptedHTTP2).
	TLS *tls.Config
	// StrictMaxConcurrentRequests, SendPingTimeout and PingTimeout are http.HTTP2Config's.
	StrictMaxConcurrentRequests  bool
	SendPingTimeout, PingTimeout time.Duration
	// MaxConnsPerHost is http.Transport's.
	MaxConnsPerHost int
	// Timeout is http.Client.Timeout.
	Timeout time.Duration
	// DialTimeout is net.Dialer.Timeout (TCP), and the TLS handshake's bound with TLS.
	DialTimeout time.Duration
}

// Go is a net/http client set up by GoConfig whose dialer counts the connections it opens
// and closes, and numbers them. Over h2c it also counts the SETTINGS frames net/http has
// processed, so that a caller can tell when a new stream limit is in force. It is safe for
// concurrent use.
type Go struct {
	// Client and Transport are the net/http values, to be used as they are.
	Client    *http.Client
	Transport *http.Transport

	dials, closes atomic.Int64
	settings      atomic.Int64 // SETTINGS frames (not acknowledgements) processed, h2c only
	mu            sync.Mutex   // guards addrs
	addrs         map[string]int
}

// NewGo returns a net/http HTTP/2 client for cfg.
func NewGo(cfg GoConfig) (*Go, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"send ping timeout", cfg.SendPingTimeout}, {"ping timeout", cfg.PingTimeout}, {"timeout", cfg.Timeout}, {"dial timeout", cfg.DialTimeout}} {
		if d.v < 0 {
			return nil, fmt.Errorf("client: %s must not be negative, got %v", d.name, d.v)
		}
	}
	if cfg.MaxConnsPerHost < 0 {
		return nil, fmt.Errorf("client: max conns per host must not be negative, got %d", cfg.MaxConnsPerHost)
	}
	g := &Go{addrs: make(map[string]int)}
	var protos http.Protocols
	tr := &http.Transport{
		Proxy:              nil,
		MaxConnsPerHost:    cfg.MaxConnsPerHost,
		DisableCompression: true,
		Protocols:          &protos,
		HTTP2: &http.HTTP2Config{
			StrictMaxConcurrentRequests: cfg.StrictMaxConcurrentRequests,
			SendPingTimeout:             cfg.SendPingTimeout,
			PingTimeout:                 cfg.PingTimeout,
		},
	}
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	if cfg.TLS != nil {
		protos.SetHTTP2(true)
		// net/http recognises HTTP/2 by the *tls.Conn that DialTLSContext returns, so the
		// count sits below TLS, on the TCP connection.
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			raw, err := g.dial(ctx, d, network, addr)
			if err != nil {
				return nil, err
			}
			hctx := ctx
			if cfg.DialTimeout > 0 {
				var cancel context.CancelFunc
				hctx, cancel = context.WithTimeout(ctx, cfg.DialTimeout)
				defer cancel()
			}
			return handshakeH2(hctx, raw, cfg.TLS, addr)
		}
	} else {
		protos.SetUnencryptedHTTP2(true)
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := g.dial(ctx, d, network, addr)
			if err != nil {
				return nil, err
			}
			var conn net.Conn = &settingsConn{Conn: c, processed: &g.settings}
			if cfg.SendPingTimeout > 0 {
				conn = newHealthWake(conn, cfg.SendPingTimeout, cfg.PingTimeout)
			}
			return conn, nil
		}
	}
	g.Transport = tr
	g.Client = &http.Client{Transport: tr, Timeout: cfg.Timeout}
	return g, nil
}

func (g *Go) dial(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	id := g.dials.Add(1)
	g.mu.Lock()
	g.addrs[c.RemoteAddr().String()]++
	g.mu.Unlock()
	return &countedConn{Conn: c, id: int(id), closes: &g.closes}, nil
}

// Dials returns how many connections the client opened; Closed how many of them closed.
func (g *Go) Dials() int  { return int(g.dials.Load()) }
func (g *Go) Closed() int { return int(g.closes.Load()) }

// SettingsSeen returns how many SETTINGS frames from servers (acknowledgements not counted)
// net/http has processed on the client's h2c connections: a limit a server sent is in force
// once this count has passed it. Over TLS the frames are not visible; it stays 0.
func (g *Go) SettingsSeen() int { return int(g.settings.Load()) }

// ConnID returns the number of the connection c, 1 for the first the client opened, in
// dial order; 0 for a connection it did not open. c is what httptrace.GotConnInfo.Conn
// holds, a *tls.Conn over TLS and over h2c alike (net/http wraps an h2c connection in one).
func ConnID(c net.Conn) int {
	for c != nil {
		switch x := c.(type) {
		case *countedConn:
			return x.id
		case *settingsConn:
			c = x.Conn
		case *healthWake:
			c = x.Conn
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return 0
		}
	}
	return 0
}

// DialsTo returns how many connections went to each address ("ip:port").
func (g *Go) DialsTo() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := make(map[string]int, len(g.addrs))
	for a, n := range g.addrs {
		m[a] = n
	}
	return m
}

// Close closes the idle connections; net/http's pool closes the others as they go idle.
func (g *Go) Close() { g.Transport.CloseIdleConnections() }

// countedConn counts its first Close and carries its number.
type countedConn struct {
	net.Conn
	id     int
	once   sync.Once
	closes *atomic.Int64
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.closes.Add(1) })
	return c.Conn.Close()
}

// settingsConn counts the SETTINGS frames a server sends on an h2c connection once net/http
// has processed them: a frame counts at the first Read after its last byte was handed over.
// net/http's reader goes through a buffer and asks for more bytes only once it has handled
// every frame it was given (h2Sniffer relies on the same), so that Read means the frame is
// in force.
type settingsConn struct {
	net.Conn
	processed *atomic.Int64

	mu       sync.Mutex // guards the fields below (one reader; the lock is for the race detector)
	head     [9]byte    // the current frame's header, as it arrives
	headLen  int
	left     int  // payload bytes of the current frame not seen yet
	settings bool // the current frame is a SETTINGS frame, not an acknowledgement
	handed   int  // SETTINGS frames handed over whole and not yet counted
}

func (c *settingsConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	if c.handed > 0 {
		c.processed.Add(int64(c.handed))
		c.handed = 0
	}
	c.mu.Unlock()
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.walk(b[:n])
	c.mu.Unlock()
	return n, err
}

// walk follows the frames through p. The lock must be held.
func (c *settingsConn) walk(p []byte) {
	for {
		if c.headLen < len(c.head) {
			if len(p) == 0 {
				return
			}
			k := copy(c.head[c.headLen:], p)
			c.headLen += k
			p = p[k:]
			if c.headLen < len(c.head) {
				return
			}
			c.left = int(c.head[0])<<16 | int(c.head[1])<<8 | int(c.head[2])
			c.settings = c.head[3] == 0x4 && c.head[4]&0x1 == 0 // type SETTINGS, no ACK flag
		}
		k := min(c.left, len(p))
		c.left -= k
		p = p[k:]
		if c.left > 0 {
			return
		}
		if c.settings {
			c.handed++
		}
		c.headLen = 0
	}
}
