package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test to share.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServe starts labrun serve, uses it, and stops it as SIGINT would, with a request in
// flight that must still be answered.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- runContext(ctx, []string{"labrun", "serve"}, &stdout, &stderr, terminals{}, experiments.All())
	}()
	var url string
	deadline := time.Now().Add(5 * time.Second)
	for url == "" {
		if time.Now().After(deadline) {
			t.Fatal("no URL on stdout within 5 s")
		}
		if out := stdout.String(); strings.HasSuffix(out, "\n") {
			url = strings.TrimSpace(out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.Contains(url, "\n") {
		t.Fatalf("got stdout %q, want one loopback URL", url)
	}
	resp, err := http.Post(url+"/reserve?order=9", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	inFlight := make(chan int, 1)
	go func() {
		resp, err := http.Get(url + "/delay?delay=300ms")
		if err != nil {
			inFlight <- 0
			return
		}
		resp.Body.Close()
		inFlight <- resp.StatusCode
	}()
	time.Sleep(50 * time.Millisecond) // the request is being served
	resp, err = http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		TotalReservations int `json:"total_reservations"`
	}
	err = json.NewDecoder(resp.Body).Decode(&stats)
	resp.Body.Close()
	if err != nil || stats.TotalReservations != 1 {
		t.Errorf("got stats %+v (%v), want 1 reservation", stats, err)
	}
	cancel() // SIGINT
	if got := <-inFlight; got != http.StatusOK {
		t.Errorf("the request in flight got status %d, want 200: shutdown must be graceful", got)
	}
	if got := <-code; got != exitPass {
		t.Errorf("got exit %d, want 0", got)
	}
	if err := stderr.String(); !strings.Contains(err, "/trickle?bytes=N") || !strings.HasSuffix(err, "labrun: stopped\n") {
		t.Errorf("got stderr %q, want the endpoint list and a stop line", err)
	}
}

func TestServeRefusesRemote(t *testing.T) {
	got := runArgs(t, context.Background(), experiments.All(), false, "serve", "--addr", "0.0.0.0:0")
	if got.code != exitUsage || !strings.Contains(got.stderr, "not a loopback address") || got.stdout != "" {
		t.Errorf("got %+v, want exit 2 refusing a non-loopback address", got)
	}
	got = runArgs(t, context.Background(), experiments.All(), false, "serve", "--max-duration", "0s")
	if got.code != exitUsage || strings.TrimSpace(got.stderr) != "labrun: --max-duration must be positive, got 0s" {
		t.Errorf("got %+v", got)
	}
}
