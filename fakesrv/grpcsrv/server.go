// Package grpcsrv is labrun's gRPC fault server: grpc-go's own server (google.golang.org/grpc
// v1.85.0) behind a front that sees every HTTP/2 frame. Every method is served by one handler
// through a bytes codec (Codec), and each call chooses its fault in metadata (ParseFault). The
// server records what each call carried and what the handler did; HTTP/1.1 on the same port
// serves GET /stats and POST /stats/reset (docs/serve.md). It is apart from fakesrv so that
// only packages speaking gRPC import grpc-go.
package grpcsrv

import (
	"context"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/labrun/labrun/internal/fakesrv/accept"
)

// The documented methods (docs/serve.md, with fault.proto); any method is served.
const (
	MethodCall   = "/labrun.Fault/Call"   // unary
	MethodStream = "/labrun.Fault/Stream" // server streaming
)

// DefaultMaxDuration caps every duration a call asks for.
const DefaultMaxDuration = 10 * time.Minute

// DefaultLogLimit is how many calls the server keeps for /stats, and how many call ids it
// counts.
const DefaultLogLimit = 10_000

// DefaultMaxConcurrentStreams is the stream limit advertised when none is set (net/http's).
const DefaultMaxConcurrentStreams = 250

// Option changes a Server's settings.
type Option func(*options)

type options struct {
	addr           string
	maxStreams     uint32
	maxDuration    time.Duration
	logLimit       int
	logBytes       int
	onDone         func(Call)
	prefaceTimeout time.Duration // tests shorten it
	keepalive      keepalive.EnforcementPolicy
}

// WithAddr sets the listen address (default 127.0.0.1:0); the caller checks it is loopback.
func WithAddr(a string) Option { return func(o *options) { o.addr = a } }

// WithMaxConcurrentStreams sets the advertised stream limit (0: DefaultMaxConcurrentStreams).
func WithMaxConcurrentStreams(n uint32) Option { return func(o *options) { o.maxStreams = n } }

// WithMaxDuration caps every duration a call asks for (default DefaultMaxDuration).
func WithMaxDuration(d time.Duration) Option { return func(o *options) { o.maxDuration = d } }

// WithLogLimit sets how many calls /stats keeps and call ids the server counts (default
// DefaultLogLimit; 0: no bound).
func WithLogLimit(n int) Option { return func(o *options) { o.logLimit = n } }

// WithLogBytes bounds the log of calls to about n bytes of /stats (default DefaultLogBytes; 0: no
// bound).
func WithLogBytes(n int) Option { return func(o *options) { o.logBytes = n } }

// DefaultKeepaliveMinTime is grpc-go's server default keepalive.EnforcementPolicy.MinTime.
const DefaultKeepaliveMinTime = 5 * time.Minute

// WithKeepaliveEnforcement sets grpc-go's keepalive policy (gRFC A8; docs/serve.md).
func WithKeepaliveEnforcement(minTime time.Duration, permitWithoutStream bool) Option {
	return func(o *options) {
		o.keepalive = keepalive.EnforcementPolicy{MinTime: minTime, PermitWithoutStream: permitWithoutStream}
	}
}

// WithOnDone calls f, on the handler's goroutine, with each handled call once it has a status.
func WithOnDone(f func(Call)) Option { return func(o *options) { o.onDone = f } }

// Server is a running gRPC fault server.
type Server struct {
	// Addr is what clients dial; URL is "http://Addr", for /stats.
	Addr string
	URL  string

	ln             net.Listener
	grpc           *grpc.Server
	pipes          *connListener
	stats          *ledger
	maxDuration    time.Duration
	onDone         func(Call)
	closing        chan struct{}
	closeOnce      sync.Once
	conns          sync.WaitGroup
	inFlight       atomic.Int64 // handlers running
	prefaceTimeout time.Duration

	clientsMu sync.Mutex              // guards clients
	clients   map[net.Conn]*frontConn // nil until the preface

	selfMu sync.Mutex // guards self
	self   *grpc.ClientConn
}

// New starts a server on loopback.
func New(opts ...Option) (*Server, error) {
	o := options{addr: "127.0.0.1:0", maxDuration: DefaultMaxDuration, logLimit: DefaultLogLimit, logBytes: DefaultLogBytes,
		maxStreams: DefaultMaxConcurrentStreams, prefaceTimeout: prefaceTimeout, keepalive: keepalive.EnforcementPolicy{MinTime: DefaultKeepaliveMinTime}}
	for _, f := range opts {
		f(&o)
	}
	switch {
	case o.maxDuration <= 0:
		return nil, fmt.Errorf("grpcsrv: max duration must be positive, got %v", o.maxDuration)
	case o.logLimit < 0 || o.logBytes < 0:
		return nil, fmt.Errorf("grpcsrv: log bounds must not be negative, got %d and %d", o.logLimit, o.logBytes)
	case o.keepalive.MinTime <= 0:
		return nil, fmt.Errorf("grpcsrv: keepalive min time must be positive, got %v", o.keepalive.MinTime)
	case o.maxStreams > math.MaxInt32:
		return nil, fmt.Errorf("grpcsrv: max concurrent streams must be at most %d, got %d", math.MaxInt32, o.maxStreams)
	}
	if o.maxStreams == 0 {
		o.maxStreams = DefaultMaxConcurrentStreams
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("grpcsrv: %w", err)
	}
	s := &Server{ln: ln, Addr: ln.Addr().String(), pipes: newConnListener(), stats: newLedger(o.logLimit, o.logBytes),
		maxDuration: o.maxDuration, onDone: o.onDone, prefaceTimeout: o.prefaceTimeout, closing: make(chan struct{}), clients: map[net.Conn]*frontConn{}}
	s.URL = "http://" + s.Addr
	// Fixed windows: grpc-go's estimate would let a connection buffer up to 16 MiB.
	s.grpc = grpc.NewServer(grpc.ForceServerCodec(Codec{}), grpc.UnknownServiceHandler(s.handle),
		grpc.MaxConcurrentStreams(o.maxStreams), grpc.MaxRecvMsgSize(maxMessage),
		grpc.InitialWindowSize(1<<16), grpc.InitialConnWindowSize(1<<16), grpc.KeepaliveEnforcementPolicy(o.keepalive))
	go s.grpc.Serve(s.pipes)
	// The accept loop counts too, so no Add comes while Close waits on zero.
	s.conns.Add(1)
	go s.accept(ln)
	return s, nil
}

func (s *Server) accept(ln net.Listener) {
	defer s.conns.Done()
	for {
		c := accept.Next(ln, s.closing)
		if c == nil || !s.track(c, true) {
			return
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			defer s.track(c, false)
			s.serveConn(c)
		}()
	}
}

// track adds or removes a client connection, for Close to cut; false (c closed) once closing.
func (s *Server) track(c net.Conn, add bool) bool {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	if !add {
		delete(s.clients, c)
		return true
	}
	select {
	case <-s.closing:
		c.Close()
		return false
	default:
	}
	s.clients[c] = nil
	return true
}

// fronted records c's front, for openStreams.
func (s *Server) fronted(c net.Conn, fc *frontConn) {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	if _, ok := s.clients[c]; ok {
		s.clients[c] = fc
	}
}

// openStreams returns the streams the fronts track, over every connection.
func (s *Server) openStreams() int {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	n := 0
	for _, fc := range s.clients {
		if fc != nil {
			fc.mu.Lock()
			n += len(fc.open)
			fc.mu.Unlock()
		}
	}
	return n
}

// Stats returns a copy of the server's records.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Reset forgets every record and count.
func (s *Server) Reset() { s.stats.reset() }

// Shutdown stops taking connections and calls, waits until no handler runs or ctx ends, then
// closes the server. It returns ctx's error when a handler was still running: a connection
// without a call in flight is closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.ln.Close()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop() // GOAWAY to every client; returns when their connections end
		close(done)
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
	for stopped := done; err == nil && s.inFlight.Load() > 0; {
		select {
		case <-stopped:
			stopped = nil
		case <-ctx.Done():
			err = ctx.Err()
		case <-tick.C:
		}
	}
	s.Close()
	<-done
	return err
}

// Close cuts every call at once and waits for the server's goroutines.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.ln.Close()
		s.clientsMu.Lock()
		for c := range s.clients {
			c.Close() // first: grpc-go's Stop waits for connections in their handshake
		}
		s.clientsMu.Unlock()
		s.pipes.Close()
		s.grpc.Stop()
		s.stats.close()
		s.selfMu.Lock()
		if s.self != nil {
			s.self.Close()
		}
		s.selfMu.Unlock()
	})
	s.conns.Wait()
	return nil
}
