package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/fakesrv/grpcsrv"
)

// TestServeGRPC starts labrun serve --grpc, makes a call that times out against a handler
// that ignores its context, and reads /stats: the grpc-timeout it carried, the execution.
func TestServeGRPC(t *testing.T) {
	s := startServe(t, "--grpc", "--max-concurrent-streams", "5")
	if !strings.Contains(s.stderr.String(), "labrun-fault") {
		t.Errorf("stderr lacks the fault grammar: %q", s.stderr.String())
	}
	cc, err := grpc.NewClient("passthrough:///"+s.url, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs(grpcsrv.FaultHeader, "work=400ms,ignore-ctx", grpcsrv.CallHeader, "c1"))
	var resp []byte
	err = cc.Invoke(ctx, grpcsrv.MethodCall, []byte{}, &resp, grpc.ForceCodec(grpcsrv.Codec{}))
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	var st grpcsrv.Stats
	for end := time.Now().Add(3 * time.Second); st.Executions["c1"] == 0 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		res, err := http.Get("http://" + s.url + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(res.Body).Decode(&st)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if st.Executions["c1"] != 1 || len(st.Calls) != 1 || st.Calls[0].Timeout == "" || st.Connections != 1 {
		t.Errorf("/stats: got %+v, want one call with a grpc-timeout, executed once, on one connection", st)
	}
	if code := s.wait(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}

func TestServeGRPCRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--grpc", "--protocol", "h2"}, "--protocol does not apply to --grpc"},
		{[]string{"--grpc", "--h2"}, "--h2 does not apply to --grpc"},
		{[]string{"--grpc", "--ca-out", "ca.pem"}, "--ca-out does not apply to --grpc"},
		{[]string{"--grpc", "--addr", "10.0.0.1:0"}, "not a loopback address; pass --allow-remote"},
		{[]string{"--grpc", "--max-concurrent-streams", "-1"}, "--max-concurrent-streams must not be negative"},
		{[]string{"--grpc", "--nodes", "2"}, "--nodes needs --h2 or --h2c"},
	} {
		var stdout, stderr syncBuffer
		code := runContext(t.Context(), append([]string{"labrun", "serve"}, tc.args...), &stdout, &stderr, terminals{}, experiments.All())
		if code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.String() != "" {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
