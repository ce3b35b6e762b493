package fakesrv

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fetch sends method to s.URL+path with body (none when empty) and reads the whole answer.
func fetch(ctx context.Context, c *http.Client, s *Server, method, path, body string) (*http.Response, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, rd)
	if err != nil {
		return nil, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// mustFetch is fetch for requests that must get an answer.
func mustFetch(t *testing.T, c *http.Client, s *Server, method, path, body string) (*http.Response, string) {
	t.Helper()
	resp, b, err := fetch(context.Background(), c, s, method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, b
}

// noRedirects makes c return a redirect to the caller instead of following it.
func noRedirects(c *http.Client) *http.Client {
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantBody   string
		wantRetry  string
		want1xx    int // an informational status expected before the final one
	}{
		{"ok", "GET", "/status/200", 200, "status 200 OK\n", "", 0},
		{"teapot by POST", "POST", "/status/418", 418, "status 418 I'm a teapot\n", "", 0},
		{"retry-after seconds", "GET", "/status/503?retry-after=120", 503, "status 503 Service Unavailable\n", "120", 0},
		{"retry-after date, any method", "DELETE", "/status/429?retry-after=Wed,+21+Oct+2015+07:28:00+GMT&call=3",
			429, "status 429 Too Many Requests\n", "Wed, 21 Oct 2015 07:28:00 GMT", 0},
		{"code without a name", "GET", "/status/599", 599, "status 599\n", "", 0},
		{"no content", "GET", "/status/204", 204, "", "", 0},
		{"not modified", "GET", "/status/304", 304, "", "", 0},
		{"switching protocols", "GET", "/status/101", 101, "", "", 0},
		{"informational", "GET", "/status/103?retry-after=1", 200,
			"status 103 Early Hints sent as an informational response, then this 200\n", "1", 103},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			c, _ := newClient(t)
			var got1xx int
			trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
				got1xx = code
				return nil
			}}
			ctx := httptrace.WithClientTrace(context.Background(), trace)
			resp, body, err := fetch(ctx, c, s, tt.method, tt.path, "x=1")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if body != tt.wantBody {
				t.Errorf("body: got %q, want %q", body, tt.wantBody)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.wantRetry {
				t.Errorf("Retry-After: got %q, want %q", got, tt.wantRetry)
			}
			if got1xx != tt.want1xx {
				t.Errorf("informational status: got %d, want %d", got1xx, tt.want1xx)
			}
			got := waitFinished(t, s, 1)
			if got.Endpoint != "status" || got.Status != tt.wantStatus || got.BytesSent != len(tt.wantBody) {
				t.Errorf("log: got Endpoint=%q Status=%d BytesSent=%d, want status %d %d",
					got.Endpoint, got.Status, got.BytesSent, tt.wantStatus, len(tt.wantBody))
			}
		})
	}
}

func TestStatusDelay(t *testing.T) {
	tests := []struct {
		name   string
		opts   []Option
		path   string
		want   time.Duration // answer time
		logged time.Duration // Behaviour.Delay in the log
	}{
		{"delay", nil, "/status/503?delay=150ms", 150 * time.Millisecond, 150 * time.Millisecond},
		{"capped by the max duration", []Option{WithMaxDuration(100 * time.Millisecond)}, "/status/503?delay=5s",
			100 * time.Millisecond, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.opts...)
			c, _ := newClient(t)
			start := time.Now()
			resp, _ := mustFetch(t, c, s, "GET", tt.path, "")
			elapsed := time.Since(start)
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("status: got %d, want 503", resp.StatusCode)
			}
			if elapsed < tt.want || elapsed > tt.want+slack {
				t.Errorf("answer after %v, want between %v and %v", elapsed, tt.want, tt.want+slack)
			}
			got := waitFinished(t, s, 1)
			if d := got.HeadSent.Sub(got.Arrived); d < tt.want {
				t.Errorf("server sent the head %v after arrival, want at least %v", d, tt.want)
			}
			if got.Behaviour != (Behaviour{Delay: tt.logged}) {
				t.Errorf("log Behaviour: got %+v, want Delay %v", got.Behaviour, tt.logged)
			}
		})
	}
}

func TestStatusDelayEndsWhenClientLeaves(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	const wait = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, _, err := fetch(ctx, c, s, "GET", "/status/500?delay=10s", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error: got %v, want context.DeadlineExceeded", err)
	}
	got := waitFinished(t, s, 1)
	if !got.ClientGone || got.Status != 0 {
		t.Errorf("log: got ClientGone=%v Status=%d, want true 0", got.ClientGone, got.Status)
	}
	if held := got.Finished.Sub(got.Arrived); held > wait+slack {
		t.Errorf("handler held the request %v, want it released within %v of the client leaving", held, slack)
	}
}

func TestRedirect(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)

	// Go's client follows up to 10 redirects: /redirect/3 is 4 requests.
	resp, body := mustFetch(t, c, s, "GET", "/redirect/3", "")
	if resp.StatusCode != http.StatusOK || body != "done\n" {
		t.Errorf("answer: got %d %q, want 200 %q", resp.StatusCode, body, "done\n")
	}
	var paths []string
	for _, r := range s.Requests() {
		if r.Endpoint != "redirect" {
			t.Errorf("log %s: got Endpoint %q, want redirect", r.Path, r.Endpoint)
		}
		paths = append(paths, r.Path)
	}
	if want := []string{"/redirect/3", "/redirect/2", "/redirect/1", "/redirect/0"}; !slices.Equal(paths, want) {
		t.Errorf("hops: got %q, want %q", paths, want)
	}
	if got, want := s.Stats().Requests["redirect"], 4; got != want {
		t.Errorf("Stats redirect: got %d, want %d", got, want)
	}

	// One hop at a time: the query follows the redirect.
	nc := noRedirects(c)
	resp, body = mustFetch(t, nc, s, "GET", "/redirect/5?call=7", "")
	if got, want := resp.StatusCode, http.StatusFound; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}
	if got, want := resp.Header.Get("Location"), "/redirect/4?call=7"; got != want {
		t.Errorf("Location: got %q, want %q", got, want)
	}
	if got, want := body, "redirect to /redirect/4?call=7\n"; got != want {
		t.Errorf("body: got %q, want %q", got, want)
	}
}

func TestRedirectLoop(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	const follow = 5
	var seen int
	c.CheckRedirect = func(_ *http.Request, via []*http.Request) error {
		seen = len(via)
		if len(via) > follow {
			return http.ErrUseLastResponse // stop after following 5 redirects
		}
		return nil
	}
	resp, _ := mustFetch(t, c, s, "GET", "/redirect-loop?call=1", "")
	if got, want := resp.StatusCode, http.StatusFound; got != want {
		t.Errorf("last status: got %d, want %d", got, want)
	}
	if got, want := resp.Header.Get("Location"), "/redirect-loop?call=1"; got != want {
		t.Errorf("Location: got %q, want %q", got, want)
	}
	if seen != follow+1 {
		t.Fatalf("client saw %d requests, want %d", seen, follow+1)
	}
	// The original request and 5 redirects: 6 hops, each one request.
	if got, want := s.Stats().Requests["redirect-loop"], follow+1; got != want {
		t.Errorf("Stats redirect-loop: got %d, want %d", got, want)
	}
	reqs := s.Requests()
	if len(reqs) != follow+1 {
		t.Fatalf("log: got %d requests, want %d", len(reqs), follow+1)
	}
	for _, r := range reqs {
		if r.Endpoint != "redirect-loop" || r.Status != http.StatusFound || r.Path != "/redirect-loop?call=1" {
			t.Errorf("log: got %s %s %d, want redirect-loop /redirect-loop?call=1 302", r.Endpoint, r.Path, r.Status)
		}
	}
	if got, want := s.ConnsAccepted(), 1; got != want {
		t.Errorf("ConnsAccepted: got %d, want %d (the hops reuse one connection)", got, want)
	}
}

func TestConnectionFaults(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		path    string
		body    string
		wantErr func(error) bool
		errName string
	}{
		{"close after read, GET", "GET", "/close-after-read", "", isEOF, "io.EOF"},
		{"close after read, POST", "POST", "/close-after-read?call=2", strings.Repeat("b", 100_000), isEOF, "io.EOF"},
		{"reset, GET", "GET", "/reset", "", isReset, "syscall.ECONNRESET"},
		{"reset, PUT", "PUT", "/reset?call=1", "order=1", isReset, "syscall.ECONNRESET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			c, _ := newClient(t) // a fresh connection: Go's transport retries only reused ones
			resp, _, err := fetch(context.Background(), c, s, tt.method, tt.path, tt.body)
			if err == nil {
				t.Fatalf("got status %d, want an error", resp.StatusCode)
			}
			if !tt.wantErr(err) {
				t.Errorf("error: got %v, want %s", err, tt.errName)
			}
			got := waitFinished(t, s, 1)
			name := strings.TrimPrefix(strings.SplitN(tt.path, "?", 2)[0], "/")
			if got.Endpoint != name || got.Status != 0 || !got.HeadSent.IsZero() || got.ClientGone {
				t.Errorf("log: got %+v, want endpoint %s, no answer", got, name)
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("log: got %d requests, want 1", n)
			}
			if got, want := s.Stats().Requests[name], 1; got != want {
				t.Errorf("Stats %s: got %d, want %d", name, got, want)
			}
			waitFor(t, "ConnsOpen to drop to 0", func() bool { return s.ConnsOpen() == 0 })
		})
	}
}

// TestConnectionFaultRetried shows what the exact counters are for: on a reused keep-alive
// connection, Go's transport retries an idempotent request once when the connection breaks
// before any answer, so one client call is two requests on two connections. (This is
// net/http's documented behaviour for replayable requests, not the server's; if a Go release
// changes it, this test says so.)
func TestConnectionFaultRetried(t *testing.T) {
	for _, path := range []string{"/reset", "/close-after-read"} {
		t.Run(path, func(t *testing.T) {
			s := newServer(t)
			c, _ := newClient(t)
			mustFetch(t, c, s, "GET", "/delay", "") // leaves an idle connection to reuse
			if _, _, err := fetch(context.Background(), c, s, "GET", path, ""); err == nil {
				t.Fatalf("GET %s: got an answer, want an error", path)
			}
			name := path[1:]
			if got, want := s.Stats().Requests[name], 2; got != want {
				t.Errorf("Stats %s: got %d, want %d (the call and its retry)", name, got, want)
			}
			if got, want := s.ConnsAccepted(), 2; got != want {
				t.Errorf("ConnsAccepted: got %d, want %d", got, want)
			}
		})
	}
}

// isEOF reports whether err is the end of a connection closed without an answer.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// isReset reports whether err is a connection reset by the peer.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
