package fakesrv_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/labrun/labrun/fakesrv"
	impl "github.com/labrun/labrun/internal/fakesrv"
)

// TestWordsMatch: the public constants are the server's own words.
func TestWordsMatch(t *testing.T) {
	for _, c := range [][2]string{
		{string(fakesrv.HTTP1), string(impl.HTTP1)}, {string(fakesrv.HTTP1TLS), string(impl.HTTP1TLS)},
		{string(fakesrv.HTTP2), string(impl.HTTP2)}, {string(fakesrv.H2C), string(impl.H2C)},
		{fakesrv.FailClose, impl.FailClose}, {fakesrv.FailReset, impl.FailReset},
	} {
		if c[0] != c[1] {
			t.Errorf("public %q, server %q", c[0], c[1])
		}
	}
}

// TestServerSawRequests: a call through Client shows in Requests and Reservations, on
// every protocol; Reset forgets them.
func TestServerSawRequests(t *testing.T) {
	for _, p := range []fakesrv.Protocol{fakesrv.HTTP1, fakesrv.HTTP1TLS, fakesrv.HTTP2, fakesrv.H2C} {
		t.Run(string(p), func(t *testing.T) {
			s, err := fakesrv.New(fakesrv.WithProtocol(p), fakesrv.WithMaxDuration(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			b := fakesrv.Behaviour{Delay: 10 * time.Millisecond, Order: "o1", Bytes: 3}
			resp, err := s.Client().Post(s.URL+b.Path(), "text/plain", nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			reqs := settled(t, s)
			if len(reqs) != 1 || reqs[0].Endpoint != "reserve" || !reqs[0].Reserved || reqs[0].Behaviour != b || reqs[0].Status != 200 {
				t.Fatalf("requests %+v", reqs)
			}
			if got := s.Reservations("o1"); got != 1 {
				t.Errorf("reservations %d, want 1", got)
			}
			s.Reset()
			if n := len(s.Requests()); n != 0 {
				t.Errorf("%d requests after Reset", n)
			}
		})
	}
}

// TestParseBehaviourRoundTrip: ParseBehaviour reads Path back, and names a bad parameter.
func TestParseBehaviourRoundTrip(t *testing.T) {
	b := fakesrv.Behaviour{Bytes: 10, Every: 40 * time.Millisecond, Fail: fakesrv.FailReset, FailOn: 2}
	u, err := url.Parse(b.Path())
	if err != nil {
		t.Fatal(err)
	}
	got, err := fakesrv.ParseBehaviour(u.Path, u.Query())
	if err != nil || got != b {
		t.Fatalf("ParseBehaviour(%q) = %+v, %v; want %+v", b.Path(), got, err, b)
	}
	if _, err := fakesrv.ParseBehaviour("/delay", url.Values{"delay": {"soon"}}); err == nil {
		t.Error("delay=soon parsed")
	}
}

func ExampleNew() {
	s, err := fakesrv.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	resp, err := s.Client().Get(s.URL + fakesrv.Behaviour{Delay: time.Millisecond}.Path())
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	r := s.Requests()[0]
	fmt.Println(r.Method, r.Path, r.Endpoint)
	// Output: GET /delay?delay=1ms delay
}

// TestHandlerApart: an unstarted server's Handler answers under another server; Start then
// starts its own listener. An idle timeout is an option the server takes.
func TestHandlerApart(t *testing.T) {
	s, err := fakesrv.NewUnstarted(fakesrv.WithIdleTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := httptest.NewServer(s.Handler())
	defer other.Close()
	resp, err := other.Client().Get(other.URL + "/status/418")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 418 || len(settled(t, s)) != 1 || s.URL != "" {
		t.Errorf("status %d, %d requests, URL %q; want 418, 1, \"\"", resp.StatusCode, len(s.Requests()), s.URL)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	resp, err = s.Client().Get(s.URL + "/status/204")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Errorf("after Start: status %d, want 204", resp.StatusCode)
	}
}

// settled returns the server's requests once the last has finished: a client may read the
// whole answer before the handler returns.
func settled(t *testing.T, s *fakesrv.Server) []fakesrv.Request {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		reqs := s.Requests()
		if len(reqs) > 0 && !reqs[len(reqs)-1].Finished.IsZero() || time.Now().After(end) {
			return reqs
		}
	}
}

// TestSeededRequests: a seeded request's number and draw reach the public log.
func TestSeededRequests(t *testing.T) {
	s, err := fakesrv.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := fakesrv.Behaviour{DelayDist: "uniform:1ms:2ms", FailRate: 0.5, Seed: 9}
	for range 4 {
		if resp, err := s.Client().Get(s.URL + b.Path()); err == nil {
			resp.Body.Close()
		}
	}
	for i, r := range s.Requests() {
		if r.SeedNo != i+1 || r.Drawn < time.Millisecond || r.Drawn > 2*time.Millisecond {
			t.Errorf("request %d: number %d, drew %v", i+1, r.SeedNo, r.Drawn)
		}
	}
}
