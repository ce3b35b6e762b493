package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// sentinels maps each client limit to the error its *Error matches.
var sentinels = map[vocab.Outcome]error{
	vocab.LeaseTimeout:   ErrLeaseTimeout,
	vocab.ConnectTimeout: ErrConnectTimeout,
	vocab.ReadTimeout:    ErrReadTimeout,
	vocab.Deadline:       ErrDeadline,
}

// checkError asserts that err is an *Error with outcome want, a valid outcome, that matches
// want's sentinel and no other, and whose Timeout agrees with its outcome's.
func checkError(t *testing.T, what string, err error, want vocab.Outcome) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: got %T %v, want an *Error", what, err, err)
	}
	if e.Outcome != want || !e.Outcome.Valid() {
		t.Errorf("%s: got outcome %q (valid %v), want %q", what, e.Outcome, e.Outcome.Valid(), want)
	}
	for o, s := range sentinels {
		if got := errors.Is(err, s); got != (e.Outcome == o) {
			t.Errorf("%s: errors.Is(%v, %v) = %v, want %v", what, err, s, got, !got)
		}
	}
	if got, want := e.Timeout(), e.Outcome.Timeout(); got != want {
		t.Errorf("%s: Timeout() = %v, want %v as for outcome %q", what, got, want, e.Outcome)
	}
}

// TestErrorsMatchOutcomes ties the outcomes together: every *Error the client produces, the
// call's and each attempt's, has a valid outcome, matches the sentinel of that outcome and no
// other, and is a timeout exactly when its outcome is. It is Linux-only for its connect row,
// which needs the blackhole of connect_linux_test.go.
func TestErrorsMatchOutcomes(t *testing.T) {
	s := newServer(t)
	refused := func(t *testing.T) string { // an address nobody listens on any more
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		return "http://" + l.Addr().String() + "/"
	}
	tests := []struct {
		name string
		cfg  Config
		url  func(t *testing.T, c *Client) string
		want vocab.Outcome
	}{
		{"lease timeout", Config{MaxPerRoute: 1, LeaseTimeout: 50 * ms}, func(t *testing.T, c *Client) string {
			l, err := c.pool.acquire(context.Background(), s.URL) // the route's only slot
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.pool.release(l) })
			return s.URL + "/"
		}, vocab.LeaseTimeout},
		{"connect timeout", Config{ConnectTimeout: 100 * ms},
			func(t *testing.T, _ *Client) string { return "http://" + blackhole(t) + "/" }, vocab.ConnectTimeout},
		{"read timeout", Config{ReadTimeout: 100 * ms, Retries: 1},
			func(*testing.T, *Client) string { return s.URL + "/?delay=2s" }, vocab.ReadTimeout},
		{"deadline", Config{Deadline: 100 * ms},
			func(*testing.T, *Client) string { return s.URL + "/?delay=2s" }, vocab.Deadline},
		{"deadline in the backoff", Config{ReadTimeout: 50 * ms, Retries: 1, Backoff: 5 * time.Second, Deadline: 200 * ms},
			func(*testing.T, *Client) string { return s.URL + "/?delay=2s" }, vocab.Deadline},
		{"connection refused", Config{Retries: 1},
			func(t *testing.T, _ *Client) string { return refused(t) }, vocab.Failed},
		{"too many follow-ups", Config{Rules: rules.Rules{FollowUps: rules.OkHttp313(rules.OkHttpSettings{}).FollowUps}},
			func(t *testing.T, _ *Client) string { return followServer(t).URL + "/redirect-loop" }, vocab.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.cfg)
			req, err := http.NewRequest(http.MethodGet, tt.url(t, c), nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Do(context.Background(), req)
			checkError(t, "call", err, tt.want)
			if res.Outcome != tt.want {
				t.Errorf("got result outcome %q, want %q", res.Outcome, tt.want)
			}
			for i, a := range res.Attempts {
				if a.Err == nil {
					continue
				}
				want := a.Outcome
				if want == vocab.OK {
					// The exchange of the 21st follow-up succeeded; the call failed on it.
					want = vocab.Failed
				}
				checkError(t, fmt.Sprintf("attempt %d", i+1), a.Err, want)
			}
		})
	}
}
