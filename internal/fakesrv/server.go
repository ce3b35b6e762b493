package fakesrv

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labrun/labrun/internal/boundlog"
)

const (
	// readHeaderTimeout bounds a partial head; idle keep-alive connections stay open unless
	// WithIdleTimeout says otherwise (the pool experiments count them).
	readHeaderTimeout = 10 * time.Second
	// shutdownGrace is how long Close lets responses in flight complete before it closes the
	// connections by force.
	shutdownGrace = 500 * time.Millisecond
)

// Server is a fake HTTP server on a loopback port (or WithAddr's), speaking HTTP/1.1 or the
// protocol of WithProtocol. Its methods are safe for concurrent use.
//
// Its request handling is Handler, apart from the listener: the request log, the counts and
// the reservations are the handler's; the connection counts are the listener's.
type Server struct {
	// URL is the base URL without a trailing slash, empty until Start. For an unspecified host
	// (0.0.0.0, ::) it names loopback, which reaches the same listener.
	URL string

	opts   options
	spec   protocolSpec
	routes []Endpoint
	ca     *authority // nil for a protocol without TLS
	srv    *http.Server

	// ctx is the base context of every request; cancel (Close) stops every waiting handler.
	ctx    context.Context
	cancel context.CancelFunc

	proxy   *proxy // nil unless WithUpstream
	log     *requestLog
	ledger  *ledger
	convs   *conversations
	seeds   *seedCounts
	conns   connCounts
	connLog *connLog

	gate      sync.Mutex // guards started and closed, and orders handler entry before Close's wait
	started   bool
	closed    bool
	serveDone chan struct{}  // closed when srv.Serve has returned
	connWG    sync.WaitGroup // one per connection from StateNew to StateClosed/StateHijacked
	connIDs   atomic.Int64   // the connections numbered so far (never reset: Request.Conn)
	silent    silentConns    // the connections no request came over yet, closed by Shutdown
	handlers  sync.WaitGroup // one per running handler
	running   atomic.Int64   // the handlers running, for Shutdown's verdict
	closeOnce sync.Once
}

type connCounts struct {
	accepted atomic.Int64 // since start or the last Reset
	open     atomic.Int64
}

// New starts a server on DefaultAddr or WithAddr's address. It refuses a non-loopback address
// unless WithAllowRemote(true): the lab must never expose a server that stalls by accident.
func New(opts ...Option) (*Server, error) {
	s, err := NewUnstarted(opts...)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// NewUnstarted returns a configured server, certificates made, that is not listening: its
// Handler can be served by another server, and Start starts its own listener.
func NewUnstarted(opts ...Option) (*Server, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	spec, _ := lookupProtocol(o.protocol) // check found it
	if err := checkAddr(o.addr, o.allowRemote); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts:      o,
		spec:      spec,
		routes:    endpointTable(),
		ctx:       ctx,
		cancel:    cancel,
		log:       newRequestLog(o.logLimit, o.logBytes),
		ledger:    newLedger(o.maxOrders),
		convs:     newConversations(o.maxOrders),
		seeds:     newSeedCounts(),
		connLog:   &connLog{entries: boundlog.New[*Conn](o.logLimit, 0)},
		serveDone: make(chan struct{}),
	}
	if o.upstream != nil {
		s.proxy = newProxy(o.upstream, o.faultRules)
		s.routes = proxyEndpoints()
	}
	s.srv = &http.Server{
		Handler:           s.Handler(),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState:         s.connState,
		ConnContext:       s.connContext,
		ReadHeaderTimeout: headerTimeout(o.readTimeout),
		IdleTimeout:       o.idleTimeout,
		Protocols:         spec.httpProtocols(),
		// The lab breaks connections on purpose; net/http would log each one to stderr.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	if spec.http2 {
		s.srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: o.maxStreams}
	}
	if spec.TLS {
		ca, err := newAuthority(o.tlsNames, time.Now())
		if err != nil {
			cancel()
			return nil, err
		}
		s.ca = ca
		s.srv.TLSConfig = ca.serverConfig()
	}
	return s, nil
}

// Start listens and serves in the background. It panics when called twice or after Close.
func (s *Server) Start() error {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.started || s.closed {
		panic("fakesrv: Start on a server already started or closed")
	}
	ln, err := listen(s.opts.addr, s.opts.allowRemote)
	if err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(s.opts.addr) // NewUnstarted checked it
	s.URL = baseURL(s.spec.scheme(), host, ln.Addr().(*net.TCPAddr))
	s.started = true
	if !s.spec.TLS {
		ln = watchedListener{ln}
	}
	go func() {
		defer close(s.serveDone)
		// Serve's error other than ErrServerClosed has nobody to go to: the clients' requests fail,
		// which is where the lab looks.
		if s.spec.TLS {
			_ = s.srv.ServeTLS(ln, "", "")
		} else {
			_ = s.srv.Serve(ln)
		}
	}()
	return nil
}

// AddrError is New's error for a listen address it cannot use.
type AddrError struct {
	Addr string
	// NotLoopback: Addr is well formed but not loopback, or did not resolve to it.
	NotLoopback bool
	Err         error
}

func (e *AddrError) Error() string {
	if e.NotLoopback {
		return "fakesrv: refusing to listen on " + e.Addr + ": " + e.Err.Error() + " (allow it with WithAllowRemote)"
	}
	return "fakesrv: listen address: " + e.Err.Error()
}

func (e *AddrError) Unwrap() error { return e.Err }

// checkAddr checks that addr is "host:port" with a loopback host, unless allowRemote.
func checkAddr(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return &AddrError{Addr: addr, Err: err}
	}
	if !allowRemote && !isLoopbackHost(host) {
		return &AddrError{Addr: addr, NotLoopback: true, Err: errors.New("not a loopback address")}
	}
	return nil
}

// listen opens the listener for addr, which checkAddr accepted.
func listen(addr string, allowRemote bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: listen on %s: %w", addr, err)
	}
	// "localhost" is resolved by the system: check what it resolved to.
	if bound := ln.Addr().(*net.TCPAddr); !allowRemote && !bound.IP.IsLoopback() {
		_ = ln.Close() // nothing was served on it
		return nil, &AddrError{Addr: addr, NotLoopback: true, Err: fmt.Errorf("%s is not a loopback address", bound)}
	}
	return ln, nil
}

// headerTimeout is the read timeout, at most readHeaderTimeout.
func headerTimeout(read time.Duration) time.Duration {
	if read > 0 {
		return min(read, readHeaderTimeout)
	}
	return readHeaderTimeout
}

// isLoopbackHost reports whether host is localhost or a loopback IP; other names are not
// resolved here.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// baseURL is the URL of a listener bound to a: loopback when a is unspecified, of the family
// the host asked for (Go binds 0.0.0.0 as a dual-stack :: socket).
func baseURL(scheme, host string, a *net.TCPAddr) string {
	ip := a.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if strings.Contains(host, ":") {
			ip = net.IPv6loopback
		}
	}
	return scheme + "://" + net.JoinHostPort(ip.String(), strconv.Itoa(a.Port))
}

// Handler returns the server's request handling. Requests served through another server are
// logged and counted too, and refused once the server is closed.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serveHTTP)
}

// Protocol returns the protocol the server speaks.
func (s *Server) Protocol() Protocol {
	return s.spec.Name
}

// CACertPEM returns the PEM certificate of the server's CA; nil without TLS.
func (s *Server) CACertPEM() []byte {
	if s.ca == nil {
		return nil
	}
	return append([]byte(nil), s.ca.caPEM...)
}

// ClientTLS returns a new TLS configuration that trusts the server's CA alone; nil without TLS.
func (s *Server) ClientTLS() *tls.Config {
	if s.ca == nil {
		return nil
	}
	return s.ca.clientConfig()
}

// ClientTransport returns a new http.Transport that speaks the server's protocol and trusts its
// CA. The caller closes its idle connections.
func (s *Server) ClientTransport() *http.Transport {
	return &http.Transport{TLSClientConfig: s.ClientTLS(), Protocols: s.spec.httpProtocols()}
}

// Close cancels every waiting handler (their connections close unanswered), closes the
// listener and all connections, and waits for every goroutine. Later calls wait for the first.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		s.gate.Lock()
		s.closed = true
		started := s.started
		s.gate.Unlock()
		if started {
			ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if err := s.srv.Shutdown(ctx); err != nil {
				_ = s.srv.Close() // its error is the listener's close error, already closed by Shutdown
			}
			<-s.serveDone
			// Serve registers each connection (StateNew) before it returns: no Add races this Wait.
			s.connWG.Wait()
		}
		// No handler starts once closed is set (enter).
		s.handlers.Wait()
		if s.proxy != nil {
			s.proxy.transport.CloseIdleConnections()
		}
	})
}

// Shutdown closes the listener, idle connections and those no request came over, and lets
// requests in flight complete, then releases everything as Close does. When ctx ends first,
// it cancels what is left as Close does and returns an error wrapping ctx.Err(), unless no
// request was in flight. It may be called with or after Close.
func (s *Server) Shutdown(ctx context.Context) error {
	s.silent.closeAll()
	err := s.srv.Shutdown(ctx)
	busy := s.running.Load() > 0 // net/http waits for a connection that sent nothing too
	s.Close()
	if err != nil && busy {
		return fmt.Errorf("fakesrv: shutdown: %w", err)
	}
	return nil
}

// enter registers a handler about to run; false once the server is closed.
func (s *Server) enter() bool {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// connState counts connections and tracks their goroutines for Close.
func (s *Server) connState(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.connWG.Add(1)
		s.conns.accepted.Add(1)
		s.conns.open.Add(1)
		s.silent.arrived(c)
	case http.StateClosed, http.StateHijacked:
		s.conns.open.Add(-1)
		s.connWG.Done()
		s.silent.forget(c)
	default:
		s.silent.forget(c)
	}
}

// silentConns are the connections in StateNew, which net/http's Shutdown waits 5 s for.
// An HTTP/2 connection stays there for the hooks: its requests tell it apart.
type silentConns struct {
	mu      sync.Mutex // guards closing and conns
	closing bool
	conns   map[net.Conn]*connInfo
}

// track is called by ConnContext, before c's StateNew.
func (t *silentConns) track(c net.Conn, info *connInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conns == nil {
		t.conns = map[net.Conn]*connInfo{}
	}
	t.conns[c] = info
}

// arrived closes c if shutdown began: it has sent no request yet.
func (t *silentConns) arrived(c net.Conn) {
	t.mu.Lock()
	closing := t.closing
	t.mu.Unlock()
	if closing {
		c.Close()
	}
}

func (t *silentConns) forget(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.conns, c)
}

// closeAll closes the connections no request came over, and those that arrive later.
func (t *silentConns) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closing = true
	for c, info := range t.conns {
		if info.requests.Load() == 0 {
			c.Close()
		}
	}
}
