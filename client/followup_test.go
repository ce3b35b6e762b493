package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/labrun/labrun/internal/vocab"
)

// statusServer answers every request with the status and headers of its query (and /loop
// with a redirect to itself), and records the requests' methods and bodies.
type statusServer struct {
	*httptest.Server
	mu     sync.Mutex // guards bodies
	bodies []string
}

func newStatusServer(t *testing.T) *statusServer {
	t.Helper()
	s := &statusServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, r.Method+" "+string(b))
		s.mu.Unlock()
		if r.URL.Path == "/loop" {
			http.Redirect(w, r, "/loop", http.StatusFound)
			return
		}
		q := r.URL.Query()
		if v := q.Get("retry-after"); v != "" {
			w.Header().Set("Retry-After", v)
		}
		if loc := q.Get("location"); loc != "" {
			w.Header().Set("Location", loc)
		}
		code, _ := strconv.Atoi(q.Get("code"))
		w.WriteHeader(code)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *statusServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

func TestFollowUps(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		method   string
		query    string
		requests int
		status   int
		failed   string
	}{
		{"408 repeated once, even a POST", Config{FollowUps: true, RetryOnConnectionFailure: true}, "POST", "/?code=408", 2, 408, ""},
		{"408 not repeated without recovery", Config{FollowUps: true}, "POST", "/?code=408", 1, 408, ""},
		{"408 not repeated with Retry-After 5", Config{FollowUps: true, RetryOnConnectionFailure: true}, "POST", "/?code=408&retry-after=5", 1, 408, ""},
		{"503 repeated on Retry-After 0", Config{FollowUps: true}, "GET", "/?code=503&retry-after=0", 2, 503, ""},
		{"503 not repeated on Retry-After 5", Config{FollowUps: true}, "GET", "/?code=503&retry-after=5", 1, 503, ""},
		{"401 returned", Config{FollowUps: true}, "GET", "/?code=401", 1, 401, ""},
		{"408 with Retry-After -1 is a delay", Config{FollowUps: true, RetryOnConnectionFailure: true}, "POST", "/?code=408&retry-after=-1", 1, 408, ""},
		{"503 with Retry-After 00 is zero", Config{FollowUps: true}, "GET", "/?code=503&retry-after=00", 2, 503, ""},
		{"503 with Retry-After +0 is not digits", Config{FollowUps: true}, "GET", "/?code=503&retry-after=%2B0", 1, 503, ""},
		{"no follow-ups without the option", Config{}, "GET", "/?code=503&retry-after=0", 1, 503, ""},
		{"redirect to a 200", Config{FollowUps: true}, "GET", "/?code=302&location=%2F%3Fcode%3D200", 2, 200, ""},
		{"redirect loop", Config{FollowUps: true}, "GET", "/loop", 21, 302, "too many follow-up requests: 21"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStatusServer(t)
			c := newClient(t, tt.cfg)
			req, _ := http.NewRequest(tt.method, s.URL+tt.query, strings.NewReader("order=1"))
			res, err := c.Do(context.Background(), req)
			if got := len(s.requests()); got != tt.requests {
				t.Errorf("server got %d requests, want %d", got, tt.requests)
			}
			if tt.failed != "" {
				var e *Error
				if !errors.As(err, &e) || e.Outcome != vocab.Failed || !strings.Contains(err.Error(), tt.failed) {
					t.Errorf("got %v, want a failure %q", err, tt.failed)
				}
				return
			}
			if err != nil || res.Status != tt.status {
				t.Errorf("got status %d, %v; want %d", res.Status, err, tt.status)
			}
		})
	}
}

func TestRedirectMethods(t *testing.T) {
	for _, tt := range []struct {
		code int
		want string
	}{{307, "POST order=1"}, {308, "POST order=1"}, {302, "GET "}, {303, "GET "}} {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			s := newStatusServer(t)
			c := newClient(t, Config{FollowUps: true})
			target := url.QueryEscape("/?code=200")
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/?code=%d&location=%s", s.URL, tt.code, target), strings.NewReader("order=1"))
			if _, err := c.Do(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := s.requests()
			if len(got) != 2 || got[1] != tt.want {
				t.Errorf("got requests %q, want the follow-up %q", got, tt.want)
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	const long = int(^uint(0) >> 1)
	tests := []struct {
		v    string
		want int
	}{
		{"0", 0}, {"00", 0}, {"5", 5}, {"", long}, {"-1", long}, {"+0", long}, {" 1", long},
		{"Wed, 21 Oct 2015 07:28:00 GMT", long}, {"99999999999999999999999", long},
	}
	for _, tt := range tests {
		if got := retryAfterSeconds(tt.v); got != tt.want {
			t.Errorf("retryAfterSeconds(%q): got %d, want %d", tt.v, got, tt.want)
		}
	}
}
