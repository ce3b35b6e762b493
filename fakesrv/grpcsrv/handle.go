package grpcsrv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// handle serves every method: it plays the fault the call's metadata asks for on its stream.
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
