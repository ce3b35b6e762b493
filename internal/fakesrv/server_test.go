package fakesrv

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// slack is the upper-bound margin for timing assertions. Lower bounds follow from the server's
// schedule and are asserted strictly; upper bounds only catch a server that ignores its
// schedule, so they allow for a loaded 2-core machine.
const slack = 200 * time.Millisecond

// newServer starts a server that is closed when the test ends.
func newServer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// newClient returns a keep-alive client with its own transport, so that connection counts do
// not depend on other tests, and closes its idle connections when the test ends.
func newClient(t *testing.T) (*http.Client, *http.Transport) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, tr
}

// get performs a GET of s.URL+b.Path() and reads the whole body.
func get(ctx context.Context, c *http.Client, s *Server, b Behaviour) (*http.Response, string, error) {
	return fetch(ctx, c, s, http.MethodGet, b.Path(), "")
}

// mustGet is get for requests that must succeed.
func mustGet(t *testing.T, c *http.Client, s *Server, b Behaviour) (*http.Response, string) {
	t.Helper()
	resp, body, err := get(context.Background(), c, s, b)
	if err != nil {
		t.Fatalf("GET %s: %v", b.Path(), err)
	}
	return resp, body
}

// waitFor polls cond until it holds, failing the test after a bounded wait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFinished waits until request seq has finished and returns its log entry.
func waitFinished(t *testing.T, s *Server, seq int) Request {
	t.Helper()
	var got Request
	waitFor(t, "request to finish", func() bool {
		reqs := s.Requests()
		if len(reqs) < seq || reqs[seq-1].Finished.IsZero() {
			return false
		}
		got = reqs[seq-1]
		return true
	})
	return got
}

func TestNewRejectsBadMaxDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "fakesrv: max duration must be positive, got -1s"},
		{0, "fakesrv: max duration must be positive, got 0s"},
	}
	for _, tt := range tests {
		s, err := New(WithMaxDuration(tt.d))
		if err == nil {
			s.Close()
			t.Fatalf("New(WithMaxDuration(%v)): got nil error, want %q", tt.d, tt.want)
		}
		if got := err.Error(); got != tt.want {
			t.Errorf("New(WithMaxDuration(%v)): got %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestLoopbackURL(t *testing.T) {
	s := newServer(t)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatalf("parse URL %q: %v", s.URL, err)
	}
	if got, want := u.Hostname(), "127.0.0.1"; got != want {
		t.Errorf("host: got %q, want %q", got, want)
	}
	if u.Port() == "" || u.Port() == "0" {
		t.Errorf("port: got %q, want a real port", u.Port())
	}
	if strings.HasSuffix(s.URL, "/") || u.Scheme != "http" {
		t.Errorf("URL: got %q, want http://127.0.0.1:PORT", s.URL)
	}
}

func TestCloseStopsRequestsInFlight(t *testing.T) {
	s := newServer(t)
	c, tr := newClient(t)
	inFlight := []Behaviour{
		{Stall: true},
		{Delay: 10 * time.Second},
		{Bytes: 10, Every: time.Second},
		{Order: "9", Delay: 10 * time.Second},
	}
	errc := make(chan error, len(inFlight))
	for _, b := range inFlight {
		go func() {
			_, _, err := get(context.Background(), c, s, b)
			errc <- err
		}()
	}
	waitFor(t, "all requests to arrive", func() bool { return len(s.Requests()) == len(inFlight) })

	start := time.Now()
	s.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v, want under 2s", d)
	}
	s.Close() // a second Close must be harmless

	for range inFlight {
		if err := <-errc; err == nil {
			t.Errorf("a request in flight succeeded, want an error after Close")
		}
	}
	for _, r := range s.Requests() {
		if r.Finished.IsZero() || r.ClientGone {
			t.Errorf("request %s: got Finished=%v ClientGone=%v, want finished by the server", r.Path, r.Finished, r.ClientGone)
		}
	}
	if got := s.ConnsOpen(); got != 0 {
		t.Errorf("ConnsOpen after Close: got %d, want 0", got)
	}
	if got := s.Reservations("9"); got != 1 {
		t.Errorf("Reservations(9): got %d, want 1 (committed on arrival)", got)
	}
	tr.CloseIdleConnections()
	goleak.VerifyNone(t)
}
