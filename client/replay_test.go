package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// doer is a client under test.
type doer interface {
	Do(ctx context.Context, req *http.Request) (*Result, error)
}

// call makes one call of method to url, with a small body for anything but GET and the
// headers given as name, value pairs.
func callOnce(t *testing.T, c doer, method, url string, header ...string) (*Result, error) {
	t.Helper()
	var body *strings.Reader
	if method != http.MethodGet {
		body = strings.NewReader("order=42")
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequest(method, url, body)
	} else {
		req, err = http.NewRequest(method, url, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.Do(context.Background(), req)
}

// warm makes one GET that must succeed, leaving its connection pooled.
func warm(t *testing.T, c doer, url string) {
	t.Helper()
	if res, err := callOnce(t, c, http.MethodGet, url); err != nil || res.Outcome != vocab.OK {
		t.Fatalf("warm-up call: %v", err)
	}
}

// TestNoReplay: a pooled connection that the server closes or resets right after reading
// the request. HttpClient 5 with disableAutomaticRetries never sends it again; net/http would
// replay the GET on a new connection. labrun's client, on either of its two guards alone,
// sends nothing twice: the server reads exactly one request and the Result has one attempt,
// which wrote its request. With both guards off net/http's replay happens, and the Result
// shows it as an attempt of its own.
func TestNoReplay(t *testing.T) {
	for _, kill := range []string{"close", "reset"} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			for _, g := range []struct {
				name string
				g    guards
			}{{"both guards", guards{}}, {"refusal alone", guards{noConnHooks: true}}, {"connection hooks alone", guards{noRefusal: true}}} {
				t.Run(fmt.Sprintf("%s %s, %s", method, kill, g.name), func(t *testing.T) {
					s := newDying(t, kill, 0)
					c := newClient(t, Config{})
					c.guards = g.g
					warm(t, c, s.URL)
					res, err := callOnce(t, c, method, s.URL)
					checkOneLostAttempt(t, res, err)
					if got := s.requests.Load() - 1; got != 1 {
						t.Errorf("server read %d requests, want 1", got)
					}
				})
			}
		}
	}
	t.Run("GET close, guards off: net/http replays, shown", func(t *testing.T) {
		s := newDying(t, "close", 0)
		c := newClient(t, Config{})
		c.guards = guards{noConnHooks: true, noRefusal: true}
		warm(t, c, s.URL)
		res, err := callOnce(t, c, http.MethodGet, s.URL)
		if err != nil || len(res.Attempts) != 2 {
			t.Fatalf("got %v in %d attempts, want success in 2", err, len(res.Attempts))
		}
		first := res.Attempts[0]
		if first.Outcome != vocab.Failed || !first.Written || !errors.Is(first.Err, errResent) || first.NewConnection {
			t.Errorf("first attempt: got %s, written %v, new connection %v, %v; want a written, failed replay on the pooled connection",
				first.Outcome, first.Written, first.NewConnection, first.Err)
		}
		if got := s.requests.Load() - 1; got != 2 {
			t.Errorf("server read %d requests, want 2", got)
		}
	})
}

// checkOneLostAttempt asserts one failed attempt that wrote its request and lost the connection.
func checkOneLostAttempt(t *testing.T, res *Result, err error) {
	t.Helper()
	if res.Outcome != vocab.Failed || len(res.Attempts) != 1 {
		t.Fatalf("got %s in %d attempts (%v), want a failure in 1", res.Outcome, len(res.Attempts), err)
	}
	if a := res.Attempts[0]; !a.Written || a.NewConnection || a.Phase != vocab.PhaseWait {
		t.Errorf("got written %v, new connection %v, phase %s; want written on the pooled connection, failed in wait",
			a.Written, a.NewConnection, a.Phase)
	}
	var e *Error
	if !errors.As(err, &e) || e.Outcome != vocab.Failed {
		t.Errorf("got %v, want an *Error with outcome %s", err, vocab.Failed)
	}
}

// TestStaleWithoutValidation: the server's keep-alive timeout (100 ms) closed the pooled
// connection; without any check (NoValidation) the request is written into it and never read,
// and nothing is sent again. net/http, watching its idle connections, would never have used it.
func TestStaleWithoutValidation(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			s := newDying(t, "", 100*ms)
			c := newClient(t, Config{ValidateAfterInactivity: NoValidation})
			warm(t, c, s.URL)
			time.Sleep(300 * ms)
			res, err := callOnce(t, c, method, s.URL)
			checkOneLostAttempt(t, res, err)
			if got := s.requests.Load() - 1; got != 0 {
				t.Errorf("server read %d requests, want 0", got)
			}
		})
	}
}

// TestGoClientShowsReplays: GoClient is net/http itself; its replay of a request whose pooled
// connection died shows as two attempts when the request is replayable, one when it is not.
func TestGoClientShowsReplays(t *testing.T) {
	tests := []struct {
		name     string
		kill     string
		method   string
		header   []string
		attempts int
		want     vocab.Outcome
	}{
		{"GET closed: replayed", "close", http.MethodGet, nil, 2, vocab.OK},
		{"GET reset: replayed", "reset", http.MethodGet, nil, 2, vocab.OK},
		{"POST closed: not replayed", "close", http.MethodPost, nil, 1, vocab.Failed},
		{"POST with Idempotency-Key: replayed", "reset", http.MethodPost, []string{"Idempotency-Key", "k-42"}, 2, vocab.OK},
		{"POST with X-Idempotency-Key: replayed", "close", http.MethodPost, []string{"X-Idempotency-Key", "k-42"}, 2, vocab.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newDying(t, tt.kill, 0)
			g := newGoClient(t, GoConfig{})
			warm(t, g, s.URL)
			res, _ := callOnce(t, g, tt.method, s.URL, tt.header...)
			if res.Outcome != tt.want || len(res.Attempts) != tt.attempts {
				t.Fatalf("got %s in %d attempts, want %s in %d", res.Outcome, len(res.Attempts), tt.want, tt.attempts)
			}
			if got := s.requests.Load() - 1; got != int64(tt.attempts) {
				t.Errorf("server read %d requests, want %d", got, tt.attempts)
			}
			for i, a := range res.Attempts {
				if !a.Written || a.NewConnection != (i > 0) {
					t.Errorf("attempt %d: written %v, new connection %v; want written, new connection %v", i+1, a.Written, a.NewConnection, i > 0)
				}
			}
		})
	}
}
