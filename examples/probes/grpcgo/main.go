// Command grpcgo is a labrun probe --grpc for grpc-go: it calls LABRUN_GRPC_METHOD on the
// target LABRUN_URL with the metadata labrun-fault: LABRUN_GRPC_FAULT and labrun-call:
// LABRUN_GRPC_CALL, LABRUN_CONCURRENCY calls at once on one ClientConn, reads a stream to its
// end, and exits 0 when every call ended OK.
//
// At its defaults grpc-go sets no deadline and no retry policy. PROBE_DEADLINE (a Go duration)
// gives every call a context deadline (sent as grpc-timeout); PROBE_MAX_ATTEMPTS a retry
// policy for UNAVAILABLE (backoff 0.1 s x2, up to 1 s):
//
// With LABRUN_GRPC_HOP (seconds) it is a chain's middle hop: its own server (B) gets the call,
// works that long, and makes the call to the target (C) with its handler's context, which
// carries the deadline on as grpc-timeout: the way a grpc-go server passes its budget down.
//
//	go build -o /tmp/grpcgo ./probes/grpcgo   # in examples/
//	labrun probe --grpc -- /tmp/grpcgo
//	PROBE_DEADLINE=1.5s PROBE_MAX_ATTEMPTS=3 labrun probe --grpc --deadline 1.5s --retries 2 -- /tmp/grpcgo
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// rawCodec sends and receives messages as bytes: labrun's gRPC server needs no schema.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

func main() {
	var deadline time.Duration
	if v := os.Getenv("PROBE_DEADLINE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "PROBE_DEADLINE=%q: want a positive Go duration such as 1.5s\n", v)
			os.Exit(2)
		}
		deadline = d
	}
	maxAttempts := 0
	if v := os.Getenv("PROBE_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "PROBE_MAX_ATTEMPTS=%q: want a count from 1\n", v)
			os.Exit(2)
		}
		maxAttempts = n
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}))}
	if maxAttempts > 1 {
		opts = append(opts, grpc.WithDefaultServiceConfig(fmt.Sprintf(`{"methodConfig":[{"name":[{"service":"labrun.Fault"}],`+
			`"retryPolicy":{"maxAttempts":%d,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`, maxAttempts)))
	}
	method := os.Getenv("LABRUN_GRPC_METHOD")
	target := os.Getenv("LABRUN_URL")
	var hopSrv *hopServer
	if v := os.Getenv("LABRUN_GRPC_HOP"); v != "" {
		hop, err := strconv.ParseFloat(v, 64)
		if err != nil || hop < 0 {
			fmt.Fprintf(os.Stderr, "LABRUN_GRPC_HOP=%q: want seconds\n", v)
			os.Exit(2)
		}
		b, err := serveHop(target, method, time.Duration(hop*float64(time.Second)))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		hopSrv = b
		target = b.addr
	}
	cc, err := grpc.NewClient("passthrough:///"+target, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer cc.Close()
	concurrency, _ := strconv.Atoi(os.Getenv("LABRUN_CONCURRENCY"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for range max(concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(cc, method, deadline); err != nil {
				fmt.Fprintln(os.Stderr, err)
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if hopSrv != nil {
		hopSrv.GracefulStop() // a hop outlives its caller's giving up: B's handlers end first
	}
	if failed > 0 {
		cc.Close()
		os.Exit(1)
	}
}

// call makes one call: unary, or a server stream read to its end.
func call(cc *grpc.ClientConn, method string, deadline time.Duration) error {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if deadline > 0 {
		ctx, cancel = context.WithTimeout(ctx, deadline)
	}
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("labrun-fault", os.Getenv("LABRUN_GRPC_FAULT"), "labrun-call", os.Getenv("LABRUN_GRPC_CALL")))
	req, resp := []byte{}, []byte{}
	if !strings.HasSuffix(method, "/Stream") {
		return cc.Invoke(ctx, method, &req, &resp)
	}
	cs, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method)
	if err == nil {
		err = cs.SendMsg(&req)
	}
	if err == nil {
		err = cs.CloseSend()
	}
	for err == nil {
		err = cs.RecvMsg(&resp)
	}
	if err.Error() == "EOF" {
		return nil
	}
	return err
}

// hopServer is the chain's middle hop B: a grpc-go server on loopback.
type hopServer struct {
	*grpc.Server
	addr string
}

// serveHop starts B: every call it gets works hop, then calls method on target (C) with the
// handler's context, so that the caller's deadline goes on, less what B spent.
func serveHop(target, method string, hop time.Duration) (*hopServer, error) {
	c, err := grpc.NewClient("passthrough:///"+target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		ctx := ss.Context()
		var req []byte
		if err := ss.RecvMsg(&req); err != nil {
			return err
		}
		select {
		case <-time.After(hop):
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
		ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("labrun-fault", os.Getenv("LABRUN_GRPC_FAULT"), "labrun-call", os.Getenv("LABRUN_GRPC_CALL")))
		resp := []byte{}
		if err := c.Invoke(ctx, method, &req, &resp); err != nil {
			return err
		}
		return ss.SendMsg(&resp)
	}))
	go s.Serve(ln)
	return &hopServer{Server: s, addr: ln.Addr().String()}, nil
}
