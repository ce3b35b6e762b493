package cli

import (
	"context"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/labrun/labrun/fakesrv/grpcsrv"
)

// TestServeGRPCAfterEMFILE: serve --grpc accepts again once file descriptors are free after a
// shortage (before, its first EMFILE ended its accept loop for good while it ran on and exited
// 0). The server runs in a process limited to 64 descriptors; 80 connections held open make its
// accept fail with EMFILE.
func TestServeGRPCAfterEMFILE(t *testing.T) {
	p := startServeProcessEnv(t, []string{helperNofileEnv + "=64"}, "--grpc")
	exhaustFDs(t, p, p.url)
	cc, err := grpc.NewClient("passthrough:///"+p.url, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs(grpcsrv.CallHeader, "after"))
	if err := cc.Invoke(ctx, grpcsrv.MethodCall, []byte{}, new([]byte), grpc.ForceCodec(grpcsrv.Codec{}), grpc.WaitForReady(true)); err != nil {
		t.Fatalf("a call after the shortage: %v", err)
	}
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t); code != exitPass {
		t.Errorf("got exit %d, want 0; stderr %q", code, p.stderr.String())
	}
}
