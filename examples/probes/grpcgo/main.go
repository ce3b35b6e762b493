// Command grpcgo is a labrun probe --grpc for grpc-go: it calls LABRUN_GRPC_METHOD on the
// target LABRUN_URL with the metadata labrun-fault: LABRUN_GRPC_FAULT and labrun-call:
// LABRUN_GRPC_CALL, LABRUN_CONCURRENCY calls at once on one ClientConn, reads a stream to its
// end, and exits 0 when every call ended OK.
//
// At its defaults grpc-go sets no deadline and no retry policy. PROBE_DEADLINE (a Go duration)
// gives every call a context deadline (sent as grpc-timeout); PROBE_MAX_ATTEMPTS a retry
// policy for UNAVAILABLE (backoff 0.1 s x2, up to 1 s):
//
//	go build -o /tmp/grpcgo ./probes/grpcgo   # in examples/
//	labrun probe --grpc -- /tmp/grpcgo
//	PROBE_DEADLINE=1.5s PROBE_MAX_ATTEMPTS=3 labrun probe --grpc --deadline 1.5s --retries 2 -- /tmp/grpcgo
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
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
	cc, err := grpc.NewClient("passthrough:///"+os.Getenv("LABRUN_URL"), opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer cc.Close()
	method := os.Getenv("LABRUN_GRPC_METHOD")
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
