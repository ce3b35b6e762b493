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
)

const (
	// readHeaderTimeout bounds a client that connects and sends a partial head (shorter
	// with WithReadTimeout); it is not an idle timeout, so idle keep-alive connections stay
	// open as long as the client wants (pool experiments count them) unless
	// WithIdleTimeout says otherwise.
	readHeaderTimeout = 10 * time.Second
	// shutdownGrace is how long Close lets responses in flight complete before it closes the
	// connections by force. Handlers are cancelled first, so this is rarely reached: it only
	// matters for a client that connected and never sent a request.
	shutdownGrace = 500 * time.Millisecond
)

// Server is a fake HTTP server listening on a loopback port (or on the address given with
// WithAddr), speaking HTTP/1.1 by default, or HTTP/1.1 over TLS, HTTP/2 or h2c
// (WithProtocol). Create it with New, or with NewUnstarted and Start, and stop it with Close
// or Shutdown. Its methods are safe for concurrent use.
//
// Its request handling is Handler, apart from the listener, as with go-httpbin and
// httptest: the server's own http.Server serves Handler for every protocol, and a test may
// serve it with another server too. The request log, the per-endpoint counts and the
// reservations are the handler's, so they count requests however they arrived; the
// connection counts (ConnsAccepted, ConnsOpen) are the listener's.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:PORT" by default ("https://" for a TLS
	// protocol), without a trailing slash; empty until Start. It names the address actually
	// bound, except for an unspecified host (0.0.0.0, empty, ::), where it names loopback
	// (127.0.0.1, or [::1] for ::), which reaches the same listener.
	URL string

	opts   options
	spec   protocolSpec
	routes []Endpoint
	ca     *authority // nil for a protocol without TLS
	srv    *http.Server

	// ctx is the base context of every connection and request; cancel (called by Close)
	// stops every waiting handler at once.
	ctx    context.Context
	cancel context.CancelFunc

	log    *requestLog
	ledger *ledger
	convs  *conversations
	conns  connCounts
	// connLog records how each connection ended (Conns).
	connLog *connLog

	gate      sync.Mutex // guards started and closed, and orders handler entry before Close's wait
	started   bool
	closed    bool
	serveDone chan struct{}  // closed when srv.Serve has returned
	connWG    sync.WaitGroup // one per connection from StateNew to StateClosed/StateHijacked
	connIDs   atomic.Int64   // the connections numbered so far (never reset: Request.Conn)
	handlers  sync.WaitGroup // one per running handler
	running   atomic.Int64   // the handlers running, for Shutdown's verdict
	closeOnce sync.Once
}

// connCounts counts the connections of the server's listener.
type connCounts struct {
	accepted atomic.Int64 // since start or the last Reset
	open     atomic.Int64
}

// New starts a server listening on DefaultAddr (127.0.0.1, a free port) or the address given
// with WithAddr, and serving in the background. It refuses a non-loopback address unless
// WithAllowRemote(true) is given: the lab must never expose a server that stalls on request
// by accident.
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

// NewUnstarted returns a server that is configured, with its TLS certificates generated,
// but not listening, as httptest.NewUnstartedServer does: its Handler can be served by
// another server, and Start starts its own listener. Close releases it either way.
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
		connLog:   &connLog{limit: o.logLimit},
		serveDone: make(chan struct{}),
	}
	s.srv = &http.Server{
		Handler:           s.Handler(),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState:         s.connState,
		ConnContext:       s.connContext,
		ReadHeaderTimeout: headerTimeout(o.readTimeout),
		IdleTimeout:       o.idleTimeout,
		Protocols:         spec.httpProtocols(),
		// The lab provokes broken connections on purpose; net/http would report each one on
		// the process's stderr, in the middle of labrun's own output.
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

// Start listens on the server's address and serves in the background. It panics when called
// twice or after Close.
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
		// Serve returns http.ErrServerClosed after Close. Any other error means the listener
		// broke; there is nobody to return it to, and the clients' requests then fail, which
		// is where the lab looks. ServeTLS sets the ALPN protocols from srv.Protocols.
		if s.spec.TLS {
			_ = s.srv.ServeTLS(ln, "", "")
		} else {
			_ = s.srv.Serve(ln)
		}
	}()
	return nil
}

// AddrError is the error of New for a listen address it cannot use: malformed, or not
// loopback while WithAllowRemote(true) was not given.
type AddrError struct {
	// Addr is the listen address, as given to WithAddr.
	Addr string
	// NotLoopback is true when Addr is well formed but not loopback (or, for a name, did
	// not resolve to loopback).
	NotLoopback bool
	// Err says what is wrong with Addr.
	Err error
}

func (e *AddrError) Error() string {
	if e.NotLoopback {
		return "fakesrv: refusing to listen on " + e.Addr + ": " + e.Err.Error() + " (allow it with WithAllowRemote)"
	}
	return "fakesrv: listen address: " + e.Err.Error()
}

func (e *AddrError) Unwrap() error { return e.Err }

// checkAddr checks that addr is a "host:port" whose host names loopback, unless allowRemote.
func checkAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &AddrError{Addr: addr, Err: err}
	}
	if !allowRemote && !isLoopbackHost(host) {
		return &AddrError{Addr: addr, NotLoopback: true, Err: errors.New("not a loopback address")}
	}
	return nil
}

// listen opens the listener for addr, which checkAddr accepted. A listen failure (a port in
// use) wraps the *net.OpError of net.Listen.
func listen(addr string, allowRemote bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: listen on %s: %w", addr, err)
	}
	// "localhost" is resolved by the system; check what it resolved to rather than trust it.
	if bound := ln.Addr().(*net.TCPAddr); !allowRemote && !bound.IP.IsLoopback() {
		_ = ln.Close() // nothing was served on it
		return nil, &AddrError{Addr: addr, NotLoopback: true, Err: fmt.Errorf("%s is not a loopback address", bound)}
	}
	return ln, nil
}

// headerTimeout is how long a client may take to send a request head: the read timeout,
// but never more than readHeaderTimeout.
func headerTimeout(read time.Duration) time.Duration {
	if read > 0 {
		return min(read, readHeaderTimeout)
	}
	return readHeaderTimeout
}

// isLoopbackHost reports whether host, from a listen address, names only loopback: the name
// localhost or a loopback IP (an IPv4-mapped 127.x address included). Other names are not
// resolved here: a name that resolves to several addresses cannot be judged by one.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// baseURL is the URL of a listener bound to a for the requested host: a's own address, or
// loopback when a is unspecified (a client cannot dial 0.0.0.0 portably). The loopback
// family follows the requested host, not a: Go binds 0.0.0.0 and an empty host as a
// dual-stack :: socket, which 127.0.0.1 reaches, and only an IPv6 host ("::") asks for ::1.
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

// Handler returns the server's request handling, which its own listener serves. Requests
// served through it by another server are logged and counted like the listener's own; they
// are refused (the connection closed unanswered) once the server is closed.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serveHTTP)
}

// Protocol returns the protocol the server speaks.
func (s *Server) Protocol() Protocol {
	return s.spec.Name
}

// CACertPEM returns the PEM-encoded certificate of the CA that signed the server's
// certificate, for a client to trust (curl --cacert, a JVM trust store); nil for a protocol
// without TLS.
func (s *Server) CACertPEM() []byte {
	if s.ca == nil {
		return nil
	}
	return append([]byte(nil), s.ca.caPEM...)
}

// ClientTLS returns a new TLS configuration that trusts the server's CA and nothing else;
// nil for a protocol without TLS.
func (s *Server) ClientTLS() *tls.Config {
	if s.ca == nil {
		return nil
	}
	return s.ca.clientConfig()
}

// ClientTransport returns a new http.Transport that speaks the server's protocol (HTTP/2
// with prior knowledge for H2C) and trusts its CA. The caller owns it, and closes its idle
// connections when done.
func (s *Server) ClientTransport() *http.Transport {
	return &http.Transport{TLSClientConfig: s.ClientTLS(), Protocols: s.spec.httpProtocols()}
}

// Close stops the server. It cancels every waiting handler (delays, stalls and trickles stop
// at once and their connections are closed without an answer), closes the listener and all
// connections, and blocks until every handler and every connection goroutine has returned.
// It is safe to call more than once; later calls wait for the first to finish.
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
			// Serve registers each connection (StateNew) before it returns, so no Add can
			// race with this Wait.
			s.connWG.Wait()
		}
		// No handler starts once closed is set (enter), so no Add races with this Wait.
		s.handlers.Wait()
	})
}

// Shutdown stops the server gracefully. It closes the listener at once (no new connection is
// accepted), closes idle connections, and lets the requests in flight complete; then it
// releases everything as Close does and returns nil. When ctx is done first, it cancels the
// requests still in flight as Close does (their connections close without an answer), waits
// for every goroutine, and returns an error wrapping ctx.Err(). A stall completes only at
// its cap, so a Shutdown with a stall in flight normally ends through ctx; when ctx ends with
// no request in flight (a connection that sent nothing), it returns nil. Shutdown may be
// called together with or after Close, and more than once.
//
// Graceful draining is net/http's Server.Shutdown, which polls for idle connections, so
// Shutdown may return up to some hundred milliseconds after the last request completed.
// HTTP/2 connections get a GOAWAY frame first.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	busy := s.running.Load() > 0 // net/http waits for a connection that sent nothing too
	s.Close()
	if err != nil && busy {
		return fmt.Errorf("fakesrv: shutdown: %w", err)
	}
	return nil
}

// enter registers a handler about to run; it returns false once the server is closed.
func (s *Server) enter() bool {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// connState counts connections and tracks their goroutines for Close. HTTP/2 connections
// report StateNew and StateClosed too; their StateActive and StateIdle are ignored here.
func (s *Server) connState(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.connWG.Add(1)
		s.conns.accepted.Add(1)
		s.conns.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.open.Add(-1)
		s.connWG.Done()
	}
}
