// Package fakesrv starts labrun's fake downstream server in a Go test, as net/http/httptest
// starts a handler: New gives a Server on a loopback port, its URL and Client point a client
// at it, Requests and Reservations read what it saw, and Close stops it.
//
// Each request says how it wants to be answered in its URL, written by Behaviour.Path: a
// delay, a stall, a trickled body, a reservation, a failed connection. The URL grammar is
// the one `labrun serve` answers (docs/serve.md), so a client in any language can ask for the
// same behaviours. The server answers HTTP/1.1 by default, or the Protocol of WithProtocol.
package fakesrv

import (
	"net/http"
	"net/url"
	"sync"
	"time"

	impl "github.com/labrun/labrun/internal/fakesrv"
)

// Server is a fake server listening on a loopback port. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:PORT" ("https://" for a TLS protocol), without
	// a trailing slash; empty until Start.
	URL string

	s          *impl.Server
	clientOnce sync.Once
	client     *http.Client
}

// New starts a server on 127.0.0.1, a free port.
func New(opts ...Option) (*Server, error) {
	s, err := impl.New(unwrap(opts)...)
	if err != nil {
		return nil, err
	}
	return &Server{URL: s.URL, s: s}, nil
}

// NewUnstarted returns a server that is configured but not listening, as
// httptest.NewUnstartedServer does: its Handler can be served by another server, and Start
// starts its own listener.
func NewUnstarted(opts ...Option) (*Server, error) {
	s, err := impl.NewUnstarted(unwrap(opts)...)
	if err != nil {
		return nil, err
	}
	return &Server{s: s}, nil
}

func unwrap(opts []Option) []impl.Option {
	o := make([]impl.Option, len(opts))
	for i, opt := range opts {
		o[i] = opt.o
	}
	return o
}

// Start starts the server's listener and sets URL.
func (s *Server) Start() error {
	if err := s.s.Start(); err != nil {
		return err
	}
	s.URL = s.s.URL
	return nil
}

// Close stops the server: waiting handlers stop at once and their connections close without
// an answer. It blocks until every handler has returned and closes the idle connections of
// Client.
func (s *Server) Close() {
	s.s.Close()
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
}

// Client returns a client that speaks the server's protocol and trusts its certificate. It
// is the same client on every call.
func (s *Server) Client() *http.Client {
	s.clientOnce.Do(func() { s.client = &http.Client{Transport: s.s.ClientTransport()} })
	return s.client
}

// Handler returns the server's request handling apart from its listener.
func (s *Server) Handler() http.Handler { return s.s.Handler() }

// Requests returns what the server saw of every request since it started or the last Reset,
// in arrival order.
func (s *Server) Requests() []Request {
	in := s.s.Requests()
	out := make([]Request, len(in))
	for i, r := range in {
		out[i] = Request{
			Seq: r.Seq, Method: r.Method, Path: r.Path, Endpoint: r.Endpoint,
			Behaviour: Behaviour(r.Behaviour), Arrived: r.Arrived, HeadSent: r.HeadSent,
			Finished: r.Finished, BytesSent: r.BytesSent, Status: r.Status, Reserved: r.Reserved,
			Duplicate: r.Duplicate, ClientGone: r.ClientGone, Conn: r.Conn, ConnSeq: r.ConnSeq,
			Failed: r.Failed, SeedNo: r.SeedNo, Drawn: r.Drawn,
		}
	}
	return out
}

// Reservations returns how many reservations of order the server committed.
func (s *Server) Reservations(order string) int { return s.s.Reservations(order) }

// Reset forgets the requests and reservations seen so far.
func (s *Server) Reset() { s.s.Reset() }

// Request is what the server saw of one request, in the server's clock readings: Seq is its
// arrival number, Endpoint the endpoint its path selected, HeadSent and Finished zero until
// they happen, Status 0 when none was sent. Reserved says it committed a reservation,
// Duplicate that it repeated an idempotent one, ClientGone that the client left first, Conn
// and ConnSeq which connection it came on and its place there, Failed which Behaviour.Fail
// the server carried out, SeedNo its number under Behaviour.Seed (0: not seeded) and Drawn
// the delay it drew from Behaviour.DelayDist.
type Request struct {
	Seq                         int
	Method, Path, Endpoint      string
	Behaviour                   Behaviour
	Arrived, HeadSent, Finished time.Time
	BytesSent, Status           int
	Reserved, Duplicate         bool
	ClientGone                  bool
	Conn, ConnSeq               int
	Failed                      string
	SeedNo                      int
	Drawn                       time.Duration
}

// Behaviour is how the server answers one request: it reads the body, commits the
// reservation of Order (a repeat of an Idempotent one answers the first result), then
// stalls (until the client leaves, or MaxStall), or waits Delay and sends Bytes, one every
// Every. Fail (FailClose, FailReset) breaks the connection after reading the request instead,
// with FailOn > 0 only the FailOn-th request of its connection, with FailRate a share of the
// requests of Seed, the same ones for the same seed (docs/serve.md); DelayDist draws the delay
// (lognormal:80ms:0.4); Bandwidth paces the body in bytes per second.
type Behaviour struct {
	Delay      time.Duration
	Stall      bool
	MaxStall   time.Duration
	Bytes      int
	Every      time.Duration
	Order      string
	Fail       string
	FailOn     int
	Idempotent bool
	FailRate   float64
	Seed       uint64
	DelayDist  string
	Bandwidth  int
}

// The ways Behaviour.Fail breaks a connection: a FIN or an RST (a stream reset on HTTP/2).
const (
	FailClose = "close"
	FailReset = "reset"
)

// Path returns the path and query that ask for b, for example "/reserve?delay=500ms&order=42".
func (b Behaviour) Path() string { return impl.Behaviour(b).Path() }

// ParseBehaviour reads a Behaviour from a request path and query, as the server does; the
// error names the offending parameter.
func ParseBehaviour(path string, q url.Values) (Behaviour, error) {
	b, err := impl.ParseBehaviour(path, q)
	return Behaviour(b), err
}

// Option changes how a Server answers.
type Option struct{ o impl.Option }

// Protocol names what a Server speaks.
type Protocol string

// The protocols: HTTP/1.1 (the default), HTTP/1.1 over TLS, HTTP/2 over TLS, and HTTP/2 over
// TCP with prior knowledge. The TLS ones serve a certificate from a CA made in memory, which
// Client trusts.
const (
	HTTP1    Protocol = "http1"
	HTTP1TLS Protocol = "http1-tls"
	HTTP2    Protocol = "h2"
	H2C      Protocol = "h2c"
)

// WithProtocol makes the server speak p.
func WithProtocol(p Protocol) Option { return Option{impl.WithProtocol(impl.Protocol(p))} }

// WithIdleTimeout closes a connection idle for d; 0, the default, keeps it as long as the
// client wants.
func WithIdleTimeout(d time.Duration) Option { return Option{impl.WithIdleTimeout(d)} }

// WithMaxDuration caps every delay, stall and trickle at d (10 minutes by default).
func WithMaxDuration(d time.Duration) Option { return Option{impl.WithMaxDuration(d)} }
