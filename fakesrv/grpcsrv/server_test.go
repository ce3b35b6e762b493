package grpcsrv

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func start(t *testing.T, opts ...Option) (*Server, *grpc.ClientConn) {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cc, err := grpc.NewClient("passthrough:///"+s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return s, cc
}

func invoke(ctx context.Context, cc *grpc.ClientConn, id, fault string) error {
	ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs(FaultHeader, fault, CallHeader, id))
	var resp []byte
	return cc.Invoke(ctx, MethodCall, []byte{}, &resp, grpc.ForceCodec(Codec{}))
}

func TestDeadlineOnTheWire(t *testing.T) {
	s, cc := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := invoke(ctx, cc, "a", "work=1s,ignore-ctx")
	if got := status.Code(err); got != codes.DeadlineExceeded {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for s.Stats().Executions["a"] == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	st := s.Stats()
	if len(st.Calls) != 1 {
		t.Fatalf("got %d calls, want 1", len(st.Calls))
	}
	c := st.Calls[0]
	t.Logf("%+v tmo=%v ctx=%v exec=%v", c, *c.TimeoutMs, *c.CtxEndMs, *c.ExecutedMs)
	if c.TimeoutMs == nil || *c.TimeoutMs < 250 || *c.TimeoutMs > 300 {
		t.Errorf("grpc-timeout %q, want about 300ms", c.Timeout)
	}
	if c.CtxErr != "Canceled" && c.CtxErr != "DeadlineExceeded" {
		t.Errorf("ctx err %q, want Canceled or DeadlineExceeded", c.CtxErr)
	}
	if !c.Executed || st.Executions["a"] != 1 {
		t.Errorf("executions %v, want a: 1", st.Executions)
	}
	t.Logf("rst %v %v conns %d", st.RSTFromClient, st.RSTFromServer, st.Connections)
	resp, err := http.Get(s.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"grpc_timeout": "`) {
		t.Errorf("/stats: %s", b)
	}
}

func TestRefusedIsRetriedTransparently(t *testing.T) {
	for _, fault := range []string{"refuse=1", "goaway=1"} {
		s, cc := start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := invoke(ctx, cc, "r", fault)
		cancel()
		st := s.Stats()
		t.Logf("%s: err %v streams %d refused %d goaways %d exec %v conns %d", fault, err, st.Streams, st.Refused, st.GoAways, st.Executions, st.Connections)
		if err != nil || st.Streams != 2 || st.Executions["r"] != 1 {
			t.Errorf("%s: got err %v, %d streams, %v; want ok, 2 streams, 1 execution", fault, err, st.Streams, st.Executions)
		}
	}
}

// TestCloseCutsOpenConnections: Close returns while a client still holds its connection and a
// call hangs on a frozen one.
func TestCloseCutsOpenConnections(t *testing.T) {
	s, cc := start(t)
	if err := invoke(context.Background(), cc, "warm", ""); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- invoke(context.Background(), cc, "f", "freeze") }()
	for s.Stats().Streams < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5 s")
	}
	if err := <-done; status.Code(err) != codes.Unavailable {
		t.Errorf("the frozen call got %v, want Unavailable once the server closed", err)
	}
}

func TestBadFaultIsInvalidArgument(t *testing.T) {
	_, cc := start(t)
	err := invoke(context.Background(), cc, "x", "sleep=1s")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `unknown item "sleep"`) {
		t.Errorf("got %v, want InvalidArgument naming the item", err)
	}
}
