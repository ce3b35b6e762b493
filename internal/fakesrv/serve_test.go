package fakesrv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestWithAddrRefusesRemote(t *testing.T) {
	tests := []struct {
		addr string
		want string
	}{
		{"0.0.0.0:8080", "fakesrv: refusing to listen on 0.0.0.0:8080: not a loopback address (allow it with WithAllowRemote)"},
		{":8080", "fakesrv: refusing to listen on :8080: not a loopback address (allow it with WithAllowRemote)"},
		{"[::]:0", "fakesrv: refusing to listen on [::]:0: not a loopback address (allow it with WithAllowRemote)"},
		{"10.1.2.3:0", "fakesrv: refusing to listen on 10.1.2.3:0: not a loopback address (allow it with WithAllowRemote)"},
		{"[::2]:0", "fakesrv: refusing to listen on [::2]:0: not a loopback address (allow it with WithAllowRemote)"},
		{"example.com:0", "fakesrv: refusing to listen on example.com:0: not a loopback address (allow it with WithAllowRemote)"},
		{"localhost.example.com:0", "fakesrv: refusing to listen on localhost.example.com:0: not a loopback address (allow it with WithAllowRemote)"},
		{"127.0.0.1", "fakesrv: listen address: address 127.0.0.1: missing port in address"},
		{"127.0.0.1:99999", "fakesrv: listen address: address 99999: invalid port"},
		{"127.0.0.1:-1", "fakesrv: listen address: address -1: invalid port"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			s, err := New(WithAddr(tt.addr))
			if err == nil {
				s.Close()
				t.Fatalf("New(WithAddr(%q)): got a server on %s, want %q", tt.addr, s.URL, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			var ae *AddrError
			if !errors.As(err, &ae) || ae.Addr != tt.addr || ae.NotLoopback != strings.Contains(tt.want, "refusing") {
				t.Errorf("got %#v, want an *AddrError for %s", err, tt.addr)
			}
		})
	}
}

func TestWithAddrLoopback(t *testing.T) {
	tests := []struct {
		name     string
		opts     []Option
		wantHost string // "" accepts either loopback family
		ipv6     bool   // skipped where the machine has no IPv6 loopback
	}{
		{"default", nil, "127.0.0.1", false},
		{"localhost", []Option{WithAddr("localhost:0")}, "", false},
		{"LOCALHOST", []Option{WithAddr("LOCALHOST:0")}, "", false},
		{"127.0.0.2", []Option{WithAddr("127.0.0.2:0")}, "127.0.0.2", false},
		{"ipv6", []Option{WithAddr("[::1]:0")}, "::1", true},
		{"ipv4-mapped", []Option{WithAddr("[::ffff:127.0.0.1]:0")}, "127.0.0.1", false},
		// Bound on every interface, but these connect only through loopback (URL).
		{"0.0.0.0, allowed", []Option{WithAddr("0.0.0.0:0"), WithAllowRemote(true)}, "127.0.0.1", false},
		{"empty host, allowed", []Option{WithAddr(":0"), WithAllowRemote(true)}, "127.0.0.1", false},
		{":: allowed", []Option{WithAddr("[::]:0"), WithAllowRemote(true)}, "::1", true},
		{"loopback with remote allowed", []Option{WithAddr("127.0.0.1:0"), WithAllowRemote(true)}, "127.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.opts...)
			if err != nil {
				var opErr *net.OpError
				if tt.ipv6 && errors.As(err, &opErr) {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(s.Close)
			u, err := url.Parse(s.URL)
			if err != nil {
				t.Fatalf("parse URL %q: %v", s.URL, err)
			}
			ip := net.ParseIP(u.Hostname())
			if ip == nil || !ip.IsLoopback() || u.Port() == "0" || u.Port() == "" {
				t.Errorf("URL: got %q, want a loopback host and a real port", s.URL)
			}
			if tt.wantHost != "" && u.Hostname() != tt.wantHost {
				t.Errorf("URL host: got %q, want %q", u.Hostname(), tt.wantHost)
			}
			c, _ := newClient(t)
			if resp, body := mustFetch(t, c, s, "GET", "/delay?call=1", ""); resp.StatusCode != http.StatusOK {
				t.Errorf("GET /delay: got %d %q, want 200", resp.StatusCode, body)
			}
		})
	}
}

// TestShutdownWaitsForInFlight: Shutdown lets a request in flight complete, then returns.
func TestShutdownWaitsForInFlight(t *testing.T) {
	s := newServer(t)
	c, tr := newClient(t)
	const delay = 300 * time.Millisecond

	type answer struct {
		status int
		body   string
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		resp, body, err := fetch(context.Background(), c, s, "GET", "/delay?delay=300ms&bytes=3", "")
		if err != nil {
			done <- answer{err: err}
			return
		}
		done <- answer{resp.StatusCode, body, nil}
	}()
	waitFor(t, "the request to arrive", func() bool { return len(s.Requests()) == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	returned := time.Now()

	a := <-done
	if a.err != nil || a.status != http.StatusOK || a.body != "xxx" {
		t.Errorf("request in flight: got %d %q %v, want 200 %q", a.status, a.body, a.err, "xxx")
	}
	got := s.Requests()[0]
	if got.Finished.IsZero() || returned.Before(got.Finished) {
		t.Errorf("Shutdown returned at %v, before the request finished at %v", returned, got.Finished)
	}
	// net/http polls for idle connections at most every 500 ms.
	if late := returned.Sub(got.Arrived); late < delay || late > delay+500*time.Millisecond+slack {
		t.Errorf("Shutdown returned %v after the arrival, want between %v and %v", late, delay, delay+500*time.Millisecond+slack)
	}
	if got.Status != http.StatusOK || got.ClientGone {
		t.Errorf("log: got Status=%d ClientGone=%v, want 200 false", got.Status, got.ClientGone)
	}

	// The listener is closed: a new request fails.
	if _, _, err := fetch(context.Background(), c, s, "GET", "/delay", ""); err == nil {
		t.Errorf("request after Shutdown: got an answer, want an error")
	}
	if got := s.ConnsOpen(); got != 0 {
		t.Errorf("ConnsOpen after Shutdown: got %d, want 0", got)
	}
	s.Close() // harmless after Shutdown
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: got %v, want nil", err)
	}
	tr.CloseIdleConnections()
	goleak.VerifyNone(t)
}

// TestShutdownContextExpires: a stall does not complete, so Shutdown ends through its ctx,
// cancels the stall and leaves no goroutine.
func TestShutdownContextExpires(t *testing.T) {
	s := newServer(t)
	c, tr := newClient(t)
	errc := make(chan error, 1)
	go func() {
		_, _, err := fetch(context.Background(), c, s, "GET", "/stall", "")
		errc <- err
	}()
	waitFor(t, "the stall to arrive", func() bool { return len(s.Requests()) == 1 })

	const wait = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	err := s.Shutdown(ctx)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown: got %v, want context.DeadlineExceeded", err)
	}
	if took < wait || took > wait+slack {
		t.Errorf("Shutdown took %v, want between %v and %v", took, wait, wait+slack)
	}
	if err := <-errc; err == nil {
		t.Errorf("the stall got an answer, want an error after Shutdown")
	}
	got := s.Requests()[0]
	if got.Finished.IsZero() || got.ClientGone || got.Status != 0 {
		t.Errorf("log: got Finished=%v ClientGone=%v Status=%d, want finished by the server, unanswered",
			got.Finished, got.ClientGone, got.Status)
	}
	tr.CloseIdleConnections()
	goleak.VerifyNone(t)
}

// TestShutdownClosesSilentConnections: a connection that sent nothing holds no request, and
// Shutdown closes it at once on every protocol (net/http alone waits 5 s, or ctx's end, for
// one); over h2c a stream in flight on another connection still completes.
func TestShutdownClosesSilentConnections(t *testing.T) {
	for _, p := range []Protocol{HTTP1, HTTP1TLS, H2C, HTTP2} {
		t.Run(string(p), func(t *testing.T) {
			s := newServer(t, WithProtocol(p))
			nc, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimPrefix(s.URL, "http://"), "https://"))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			waitFor(t, "the connection to be accepted", func() bool { return s.ConnsOpen() == 1 })
			var inFlight chan error
			if p == H2C {
				var h2c http.Protocols
				h2c.SetUnencryptedHTTP2(true)
				tr := &http.Transport{Protocols: &h2c}
				t.Cleanup(tr.CloseIdleConnections)
				inFlight = make(chan error, 1)
				go func() {
					resp, body, err := fetch(context.Background(), &http.Client{Transport: tr}, s, "GET", "/delay?delay=300ms&bytes=3", "")
					if err == nil && (resp.StatusCode != http.StatusOK || body != "xxx") {
						err = fmt.Errorf("got %d %q", resp.StatusCode, body)
					}
					inFlight <- err
				}()
				waitFor(t, "the request to arrive", func() bool { return len(s.Requests()) == 1 })
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			err = s.Shutdown(ctx)
			if took := time.Since(start); err != nil || took > time.Second {
				t.Errorf("Shutdown: got %v after %v, want nil within 1s", err, took)
			}
			if inFlight != nil {
				if err := <-inFlight; err != nil {
					t.Errorf("the stream in flight: %v, want 200 xxx", err)
				}
			}
			nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := nc.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the silent connection: read got %v, want it closed", err)
			}
		})
	}
}

func TestShutdownAfterClose(t *testing.T) {
	s := newServer(t)
	s.Close()
	start := time.Now()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown after Close: got %v, want nil", err)
	}
	if d := time.Since(start); d > slack {
		t.Errorf("Shutdown after Close took %v, want it at once", d)
	}
}

func ExampleServer_Stats() {
	s, err := New()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	resp, err := c.Get(s.URL + "/status/503?retry-after=120")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("%d, Retry-After %s: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)

	resp, err = c.Get(s.URL + "/redirect/2")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)

	st := s.Stats()
	fmt.Println(st.Requests["status"], st.Requests["redirect"], st.ConnectionsAccepted)
	// Output:
	// 503, Retry-After 120: status 503 Service Unavailable
	// 200
	// 1 3 1
}
