// Package grpcsrv is labrun's gRPC fault server: grpc-go's own server (google.golang.org/grpc
// v1.85.0) behind a front that sees every HTTP/2 frame. Every method is served by one handler
// through a bytes codec (Codec), and each call chooses its fault in metadata (ParseFault). The
// server records what each call carried and what the handler did; HTTP/1.1 on the same port
// serves GET /stats and POST /stats/reset (docs/serve.md). It is apart from fakesrv so that
// only packages speaking gRPC import grpc-go.
package grpcsrv

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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

func (s *Server) handle(_ any, ss grpc.ServerStream) error {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	ctx := ss.Context()
	method, _ := grpc.MethodFromServerStream(ss)
	md, _ := metadata.FromIncomingContext(ctx)
	conn, _ := strconv.Atoi(first(md, connHeader))
	stream, _ := strconv.ParseUint(first(md, streamHeader), 10, 32)
	c := s.stats.find(conn, uint32(stream))
	if c == nil { // out of the log: record it apart
		c = &Call{Method: method, ID: clip(first(md, CallHeader), MaxCallLen), Arrived: time.Now()}
	}
	if id := first(md, CallHeader); len(id) > MaxCallLen {
		return s.finish(c, status.Errorf(codes.InvalidArgument, "labrun-call: at most %d bytes, got %d", MaxCallLen, len(id)))
	}
	f, err := ParseFault(first(md, FaultHeader), s.maxDuration)
	if err != nil {
		return s.finish(c, status.Errorf(codes.InvalidArgument, "labrun-fault: %v", clip(err.Error(), maxField)))
	}
	// grpc-go cancels a stream's context only after its handler returned, so a context done
	// by then was ended by the caller's deadline or reset.
	var ended atomic.Int64 // unix ns, 0 until it ends
	returned := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			ended.Store(time.Now().UnixNano())
		case <-returned:
		}
	}()
	err = s.serve(ctx, ss, c, f, md)
	if ctx.Err() != nil {
		at := time.Now()
		if n := ended.Load(); n != 0 {
			at = time.Unix(0, n)
		}
		name := "Canceled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			name = "DeadlineExceeded"
		}
		s.stats.note(c, func(c *Call) { c.CtxEnd, c.CtxErr = at, name })
	}
	close(returned)
	return s.finish(c, err)
}

func (s *Server) serve(ctx context.Context, ss grpc.ServerStream, c *Call, f Fault, md metadata.MD) error {
	var req []byte
	if err := ss.RecvMsg(&req); err != nil {
		return err
	}
	attempt := s.stats.attempt(c.ID)
	if f.Hang {
		s.wait(ctx, s.maxDuration, false)
		return status.Error(codes.DeadlineExceeded, "labrun: hung until the call ended or the server's max duration")
	}
	if !s.wait(ctx, f.Work, f.IgnoreCtx) {
		return status.FromContextError(ctx.Err()).Err()
	}
	if f.Messages == 0 && f.Every == 0 {
		s.stats.executed(c)
	}
	switch {
	case f.NextPass || f.NextOwn > 0:
		resp, err := s.next(ctx, c, f, md)
		if err != nil {
			return err
		}
		return ss.SendMsg(resp)
	case f.Status != codes.OK && (f.OKOn == 0 || attempt < f.OKOn):
		switch {
		case f.PushbackStop:
			ss.SetTrailer(metadata.Pairs("grpc-retry-pushback-ms", "-1"))
		case f.Pushback > 0:
			ss.SetTrailer(metadata.Pairs("grpc-retry-pushback-ms", strconv.FormatInt(f.Pushback.Milliseconds(), 10)))
		}
		return status.Errorf(f.Status, "labrun: %s after the work (attempt %d)", codeName(f.Status), attempt)
	case f.Messages > 0 || f.Every > 0:
		return s.stream(ctx, ss, c, f)
	}
	return ss.SendMsg(reply(fmt.Sprintf("ok, attempt %d", attempt)))
}

func (s *Server) stream(ctx context.Context, ss grpc.ServerStream, c *Call, f Fault) error {
	limit := time.After(s.maxDuration)
	for i := 1; f.Messages == 0 || i <= f.Messages; i++ {
		select {
		case <-limit:
			return status.Error(codes.DeadlineExceeded, "labrun: the server's max duration")
		default:
		}
		if !s.wait(ctx, f.Every, f.IgnoreCtx) {
			return status.FromContextError(ctx.Err()).Err()
		}
		if err := ss.SendMsg(reply(fmt.Sprintf("message %d", i))); err != nil {
			return err
		}
		s.stats.note(c, func(c *Call) { c.Messages = i })
	}
	s.stats.executed(c)
	return nil
}

// next is a chain hop's call downstream, with labrun-next-fault; it returns the downstream's
// answer.
func (s *Server) next(ctx context.Context, c *Call, f Fault, md metadata.MD) ([]byte, error) {
	cc, err := s.selfConn()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "labrun: %v", err)
	}
	dctx := ctx
	if f.NextOwn > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), f.NextOwn)
		defer cancel()
	}
	dctx = metadata.NewOutgoingContext(dctx, metadata.Pairs(FaultHeader, first(md, NextFaultHeader), CallHeader, c.ID[:min(len(c.ID), MaxCallLen-len("/next"))]+"/next"))
	var resp []byte
	err = cc.Invoke(dctx, MethodCall, []byte{}, &resp, grpc.ForceCodec(Codec{}))
	s.stats.note(c, func(c *Call) { c.Next = status.Code(err).String() })
	return resp, err
}

func (s *Server) selfConn() (*grpc.ClientConn, error) {
	s.selfMu.Lock()
	defer s.selfMu.Unlock()
	if s.self == nil {
		cc, err := grpc.NewClient("passthrough:///"+s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		s.self = cc
	}
	return s.self, nil
}

// wait waits d, or until ctx ends unless ignoreCtx, or the server closes; true if d passed.
func (s *Server) wait(ctx context.Context, d time.Duration, ignoreCtx bool) bool {
	if d <= 0 {
		return ctx.Err() == nil || ignoreCtx
	}
	t := time.NewTimer(d)
	defer t.Stop()
	done := ctx.Done()
	if ignoreCtx {
		done = nil
	}
	select {
	case <-t.C:
		return true
	case <-done:
	case <-s.closing:
	}
	return false
}

func (s *Server) finish(c *Call, err error) error {
	var done Call
	s.stats.note(c, func(c *Call) { c.Code, c.Done = status.Code(err).String(), time.Now(); done = *c })
	if s.onDone != nil {
		s.onDone(done)
	}
	return err
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// reply is the protobuf encoding of `message Reply { string note = 1; }` (fault.proto), which
// the bytes codec reads as it is.
func reply(note string) []byte {
	if len(note) > 127 {
		note = note[:127]
	}
	return append([]byte{0x0a, byte(len(note))}, note...)
}

// Codec passes a []byte or *[]byte as the message. It is named "proto" so that protobuf
// clients (grpcurl, grpcio, grpc-js) reach the server with their default content type.
type Codec struct{}

// Marshal implements encoding.Codec.
func (Codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case []byte:
		return m, nil
	case *[]byte:
		return *m, nil
	}
	return nil, fmt.Errorf("grpcsrv: the bytes codec sends []byte, got %T", v)
}

// Unmarshal implements encoding.Codec.
func (Codec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("grpcsrv: the bytes codec reads into *[]byte, got %T", v)
	}
	*m = append((*m)[:0], data...)
	return nil
}

// Name implements encoding.Codec.
func (Codec) Name() string { return "proto" }

// decodeTimeout reads a grpc-timeout: up to 8 digits and a unit (H, M, S, m, u, n).
func decodeTimeout(s string) (time.Duration, bool) {
	if len(s) < 2 || len(s) > 9 {
		return 0, false
	}
	units := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}
	unit, ok := units[s[len(s)-1]]
	if !ok || strings.ContainsAny(s[:len(s)-1], "+-") {
		return 0, false
	}
	v, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(v) * unit, true
}

func itoa(n int) string { return strconv.Itoa(n) }
