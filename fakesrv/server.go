package fakesrv

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultAddr is the default listen address: loopback, on a port the system picks.
const DefaultAddr = "127.0.0.1:0"

// DefaultMaxDuration is the default cap on every delay, stall and total trickle time. It is a
// safety net against a forgotten request holding a goroutine, far above any experiment.
const DefaultMaxDuration = 10 * time.Minute

const (
	// readHeaderTimeout bounds a client that connects and sends a partial head; it is not an
	// idle timeout, so idle keep-alive connections stay open as long as the client wants
	// (pool experiments count them).
	readHeaderTimeout = 10 * time.Second
	// shutdownGrace is how long Close lets responses in flight complete before it closes the
	// connections by force. Handlers are cancelled first, so this is rarely reached: it only
	// matters for a client that connected and never sent a request.
	shutdownGrace = 500 * time.Millisecond
)

// options holds the server-wide settings; see the With functions.
type options struct {
	idempotent  bool
	maxDuration time.Duration
	addr        string
	allowRemote bool
	logLimit    int
}

// Option configures a Server in New.
type Option func(*options)

// WithIdempotent makes every reservation idempotent, deduplicated by order id, as if every
// request had Behaviour.Idempotent set.
func WithIdempotent(on bool) Option {
	return func(o *options) { o.idempotent = on }
}

// WithMaxDuration caps every delay, stall and total trickle time at d (default
// DefaultMaxDuration). A capped delay answers at d; a capped stall answers 200 with an empty
// body at d; a capped trickle stops sending at headTime + d, leaving the body short of its
// Content-Length, so the client sees the connection close early. New rejects d <= 0.
func WithMaxDuration(d time.Duration) Option {
	return func(o *options) { o.maxDuration = d }
}

// WithAddr sets the listen address, "host:port" (default DefaultAddr; port 0 picks a free
// port). New refuses a host that is not loopback unless WithAllowRemote(true) is also given:
// loopback is an IP in 127.0.0.0/8, ::1 or the name "localhost"; any other name, and an
// empty host (":8080", every interface), is not. A server that stalls and resets on request
// must not be reachable from other machines by accident.
func WithAddr(addr string) Option {
	return func(o *options) { o.addr = addr }
}

// WithLogLimit keeps only the last n requests in the log (0, the default, keeps them all), so
// that a long-running server does not grow with its traffic. The counters are not affected.
func WithLogLimit(n int) Option {
	return func(o *options) { o.logLimit = n }
}

// WithAllowRemote lets WithAddr name a non-loopback address. Anyone who can reach that
// address can then hold the server's goroutines for up to its max duration per request.
func WithAllowRemote(on bool) Option {
	return func(o *options) { o.allowRemote = on }
}

// Server is a fake HTTP/1.1 server listening on a loopback port (or on the address given
// with WithAddr). Create it with New and stop it with Close or Shutdown. Its methods are
// safe for concurrent use.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:PORT" by default, without a trailing slash. It
	// names the address actually bound, except for an unspecified host (0.0.0.0, empty, ::),
	// where it names loopback (127.0.0.1, or [::1] for ::), which reaches the same listener.
	URL string

	opts options
	srv  *http.Server

	// ctx is the base context of every connection and request; cancel (called by Close)
	// stops every waiting handler at once.
	ctx    context.Context
	cancel context.CancelFunc

	serveDone chan struct{}  // closed when srv.Serve has returned
	conns     sync.WaitGroup // one per connection from StateNew to StateClosed/StateHijacked
	handlers  sync.WaitGroup // one per running handler
	closeOnce sync.Once

	mu            sync.Mutex // guards log, seq, endpoints, reservations, firstAnswer, totalReserved, accepted and open
	log           []*Request
	seq           int
	endpoints     map[string]int       // requests per endpoint name
	reservations  map[string]int       // committed reservations per order id
	firstAnswer   map[string]time.Time // per order id: when its first reservation answers
	totalReserved int
	accepted      int
	open          int
}

// New starts a server listening on DefaultAddr (127.0.0.1, a free port) or the address given
// with WithAddr, and serving in the background. It refuses a non-loopback address unless
// WithAllowRemote(true) is given: the lab must never expose a server that stalls on request
// by accident.
func New(opts ...Option) (*Server, error) {
	o := options{maxDuration: DefaultMaxDuration, addr: DefaultAddr}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logLimit < 0 {
		return nil, fmt.Errorf("fakesrv: log limit must not be negative, got %d", o.logLimit)
	}
	if o.maxDuration <= 0 {
		return nil, fmt.Errorf("fakesrv: max duration must be positive, got %v", o.maxDuration)
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: listen address: %w", err)
	}
	if !o.allowRemote && !isLoopbackHost(host) {
		return nil, fmt.Errorf("fakesrv: refusing to listen on %s: not a loopback address (allow it explicitly)", o.addr)
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: listen on %s: %w", o.addr, err)
	}
	// "localhost" is resolved by the system; check what it resolved to rather than trust it.
	if bound := ln.Addr().(*net.TCPAddr); !o.allowRemote && !bound.IP.IsLoopback() {
		_ = ln.Close() // nothing was served on it
		return nil, fmt.Errorf("fakesrv: refusing to listen on %s: %s is not a loopback address (allow it explicitly)", o.addr, bound)
	}

	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		URL:          baseURL(host, ln.Addr().(*net.TCPAddr)),
		opts:         o,
		ctx:          ctx,
		cancel:       cancel,
		serveDone:    make(chan struct{}),
		endpoints:    make(map[string]int),
		reservations: make(map[string]int),
		firstAnswer:  make(map[string]time.Time),
	}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState:         s.connState,
		ReadHeaderTimeout: readHeaderTimeout,
		// The lab provokes broken connections on purpose; net/http would report each one on
		// the process's stderr, in the middle of labrun's own output.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(s.serveDone)
		// Serve returns http.ErrServerClosed after Close. Any other error means the listener
		// broke; there is nobody to return it to, and the clients' requests then fail, which
		// is where the lab looks.
		_ = s.srv.Serve(ln)
	}()
	return s, nil
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
// family follows the requested host, not a: Go binds 0.0.0.0 and an empty host as a dual-stack ::
// socket, which 127.0.0.1 reaches, and only an IPv6 host ("::") asks for ::1.
func baseURL(host string, a *net.TCPAddr) string {
	ip := a.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if strings.Contains(host, ":") {
			ip = net.IPv6loopback
		}
	}
	return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(a.Port))
}

// Close stops the server. It cancels every waiting handler (delays, stalls and trickles stop
// at once and their connections are closed without an answer), closes the listener and all
// connections, and blocks until every handler and every connection goroutine has returned.
// It is safe to call more than once; later calls wait for the first to finish.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close() // its error is the listener's close error, already closed by Shutdown
		}
		<-s.serveDone
		// Serve registers each connection (StateNew) before it returns, so no Add can race
		// with this Wait.
		s.conns.Wait()
		// Every handler runs on a connection goroutine, so they are done by now; the
		// explicit wait keeps Close correct should that ever change.
		s.handlers.Wait()
	})
}

// Shutdown stops the server gracefully. It closes the listener at once (no new connection is
// accepted), closes idle connections, and lets the requests in flight complete; then it
// releases everything as Close does and returns nil. When ctx is done first, it cancels the
// requests still in flight as Close does (their connections close without an answer), waits
// for every goroutine, and returns an error wrapping ctx.Err(). A stall completes only at
// its cap, so a Shutdown with a stall in flight normally ends through ctx. Shutdown may be
// called together with or after Close, and more than once.
//
// Graceful draining is net/http's Server.Shutdown, which polls for idle connections, so
// Shutdown may return up to some hundred milliseconds after the last request completed.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	s.Close()
	if err != nil {
		return fmt.Errorf("fakesrv: shutdown: %w", err)
	}
	return nil
}

// connState counts connections and tracks their goroutines for Close.
func (s *Server) connState(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.conns.Add(1)
		s.mu.Lock()
		s.accepted++
		s.open++
		s.mu.Unlock()
	case http.StateClosed, http.StateHijacked:
		s.mu.Lock()
		s.open--
		s.mu.Unlock()
		s.conns.Done()
	}
}

// Requests returns a snapshot copy of the request log, in arrival order. A request still in
// progress appears with the fields known so far (Finished is zero). The log keeps every
// request since the last Reset, so a long-running server (labrun serve) grows with its
// traffic until it is Reset, for example by POST /stats/reset.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.log))
	for i, r := range s.log {
		out[i] = *r
	}
	return out
}

// Reservations returns how many reservations were committed for order since the last Reset.
func (s *Server) Reservations(order string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reservations[order]
}

// TotalReservations returns the reservations committed over all orders since the last Reset.
func (s *Server) TotalReservations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totalReserved
}

// ConnsAccepted returns how many TCP connections the server accepted since it started or
// since the last Reset.
func (s *Server) ConnsAccepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// ConnsOpen returns how many accepted connections are still open.
func (s *Server) ConnsOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// Reset zeroes the request log, the Stats (the requests per endpoint, the reservations and
// ConnsAccepted) between the rows of an experiment. ConnsOpen is kept because it describes connections that still exist. Requests
// in progress during Reset finish normally but no longer appear in the log.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
	s.seq = 0
	s.endpoints = make(map[string]int)
	s.reservations = make(map[string]int)
	s.firstAnswer = make(map[string]time.Time)
	s.totalReserved = 0
	s.accepted = 0
}
