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

// GoConfig is net/http's own HTTP/2 client as a Go user sets it up (profile "go"); zero fields
// are net/http's defaults.
type GoConfig struct {
	// TLS speaks HTTP/2 over TLS; nil speaks h2c.
	TLS *tls.Config
	// StrictMaxConcurrentRequests, SendPingTimeout and PingTimeout are http.HTTP2Config's.
	StrictMaxConcurrentRequests  bool
	SendPingTimeout, PingTimeout time.Duration
	MaxConnsPerHost              int
	Timeout                      time.Duration
	// DialTimeout is net.Dialer.Timeout, also bounding the TLS handshake.
	DialTimeout time.Duration
}

// Go is a net/http client whose dialer counts and numbers its connections and, over h2c, the
// SETTINGS frames processed. It is safe for concurrent use.
type Go struct {
	Client    *http.Client
	Transport *http.Transport

	dials, closes atomic.Int64
	settings      atomic.Int64 // h2c only
	mu            sync.Mutex
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
		// net/http recognises HTTP/2 by the *tls.Conn returned: count below TLS.
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

// Dials counts the connections opened; Closed those closed since.
func (g *Go) Dials() int  { return int(g.dials.Load()) }
func (g *Go) Closed() int { return int(g.closes.Load()) }

// SettingsSeen counts the SETTINGS frames net/http processed over h2c (0 over TLS).
func (g *Go) SettingsSeen() int { return int(g.settings.Load()) }

// ConnID returns c's number in dial order from 1 (0: not the client's); c is
// httptrace.GotConnInfo.Conn.
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

// DialsTo counts the connections to each address ("ip:port").
func (g *Go) DialsTo() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := make(map[string]int, len(g.addrs))
	for a, n := range g.addrs {
		m[a] = n
	}
	return m
}

// Close closes the idle connections.
func (g *Go) Close() { g.Transport.CloseIdleConnections() }

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

// settingsConn counts a server's SETTINGS frames once net/http processed them: at the next Read
// (net/http reads on only after handling the frames it has).
type settingsConn struct {
	net.Conn
	processed *atomic.Int64

	mu       sync.Mutex
	head     [9]byte
	headLen  int
	left     int
	settings bool
	handed   int
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
			c.settings = c.head[3] == 0x4 && c.head[4]&0x1 == 0
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
