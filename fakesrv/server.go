// Package fakesrv is labrun's in-process fake downstream server: it answers slowly, trickles
// its body, stalls or reserves stock on request, and logs what it saw, so that the experiments
// can measure how an HTTP client copes with it.
//
// Each request says how it wants to be answered in its URL (see Behaviour), so the server has
// no per-experiment state beyond a few options. The Server is shaped like
// net/http/httptest.Server (loopback listener, URL field, Close that waits for in-flight
// requests) but does not import httptest, which registers a global command-line flag in any
// binary that links it.
package fakesrv

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

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

// Server is a fake HTTP/1.1 server listening on a loopback port. Create it with New and stop
// it with Close. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:PORT", without a trailing slash.
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

	mu            sync.Mutex // guards log, seq, reservations, firstAnswer, totalReserved, accepted and open
	log           []*Request
	seq           int
	reservations  map[string]int       // committed reservations per order id
	firstAnswer   map[string]time.Time // per order id: when its first reservation answers
	totalReserved int
	accepted      int
	open          int
}

// New starts a server listening on 127.0.0.1 on a free port and serving in the background.
// It always binds to loopback: the lab must never expose a server that stalls on request.
func New(opts ...Option) (*Server, error) {
	o := options{maxDuration: DefaultMaxDuration}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxDuration <= 0 {
		return nil, fmt.Errorf("fakesrv: max duration must be positive, got %v", o.maxDuration)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakesrv: listen on loopback: %w", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		URL:          "http://" + ln.Addr().String(),
		opts:         o,
		ctx:          ctx,
		cancel:       cancel,
		serveDone:    make(chan struct{}),
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
// progress appears with the fields known so far (Finished is zero).
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

// Reset zeroes the request log, the reservations and ConnsAccepted between the rows of an
// experiment. ConnsOpen is kept because it describes connections that still exist. Requests
// in progress during Reset finish normally but no longer appear in the log.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
	s.seq = 0
	s.reservations = make(map[string]int)
	s.firstAnswer = make(map[string]time.Time)
	s.totalReserved = 0
	s.accepted = 0
}
