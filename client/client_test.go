package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ms = time.Millisecond

// slack is the upper margin for timing assertions: generous, so that a loaded 2-core machine
// never fails them, yet far below the differences the tests are about (a read timeout acting
// as a deadline, a stale deadline, a lease that never times out).
const slack = 400 * ms

// server is an httptest server whose handler takes its behaviour from the query:
// delay (before the head), bytes and every (a trickled body). It counts accepted connections.
type server struct {
	*httptest.Server
	accepted atomic.Int64
	requests atomic.Int64
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		q := r.URL.Query()
		delay, _ := time.ParseDuration(q.Get("delay"))
		every, _ := time.ParseDuration(q.Get("every"))
		n, _ := strconv.Atoi(q.Get("bytes"))
		if !sleep(r.Context(), delay) {
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		head := time.Now()
		for k := 1; k <= n; k++ {
			if !sleep(r.Context(), time.Until(head.Add(time.Duration(k)*every))) {
				return
			}
			w.Write([]byte{'x'})
			http.NewResponseController(w).Flush()
		}
	}))
	s.Config.ConnState = func(_ net.Conn, cs http.ConnState) {
		if cs == http.StateNew {
			s.accepted.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func get(t *testing.T, c *Client, url string) (*Result, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(context.Background(), req)
}

// within asserts lo <= got <= lo+slack.
func within(t *testing.T, what string, got, lo time.Duration) {
	t.Helper()
	if got < lo || got > lo+slack {
		t.Errorf("%s: got %v, want between %v and %v", what, got, lo, lo+slack)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5 s")
		}
		time.Sleep(2 * ms)
	}
}

func TestOutcomes(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name    string
		cfg     Config
		query   string
		want    vocab.Outcome
		phase   vocab.Phase
		sent    error // sentinel the error must match
		elapsed time.Duration
	}{
		// The read timeout restarts on every byte: 6 gaps of 120 ms never trip 300 ms.
		{"trickle is not a read timeout", Config{ReadTimeout: 300 * ms}, "bytes=6&every=120ms", vocab.OK, vocab.PhaseBody, nil, 720 * ms},
		{"silent server", Config{ReadTimeout: 200 * ms}, "delay=2s", vocab.ReadTimeout, vocab.PhaseWait, ErrReadTimeout, 200 * ms},
		// Head at once, then a 1 s gap in the body.
		{"gap in the body", Config{ReadTimeout: 200 * ms}, "bytes=1&every=1s", vocab.ReadTimeout, vocab.PhaseBody, ErrReadTimeout, 200 * ms},
		// A deadline cuts a healthy trickle.
		{"deadline cuts trickle", Config{ReadTimeout: 300 * ms, Deadline: 350 * ms}, "bytes=10&every=100ms", vocab.Deadline, vocab.PhaseBody, ErrDeadline, 350 * ms},
		{"deadline in wait", Config{Deadline: 250 * ms}, "delay=2s", vocab.Deadline, vocab.PhaseWait, ErrDeadline, 250 * ms},
		// The JDK's HttpRequest.timeout() (HeadTimeout) ends at the head: a gap in the body
		// longer than it is read out; a silent server is cut as by a read timeout.
		{"head timeout, gap in the body", Config{HeadTimeout: 200 * ms}, "bytes=1&every=300ms", vocab.OK, vocab.PhaseBody, nil, 300 * ms},
		{"head timeout, silent server", Config{HeadTimeout: 200 * ms}, "delay=2s", vocab.ReadTimeout, vocab.PhaseWait, ErrReadTimeout, 200 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.cfg)
			res, err := get(t, c, s.URL+"/?"+tt.query)
			if res.Outcome != tt.want {
				t.Fatalf("got outcome %s (%v), want %s", res.Outcome, err, tt.want)
			}
			within(t, "elapsed", res.Elapsed, tt.elapsed)
			a := res.Attempts[len(res.Attempts)-1]
			if a.Phase != tt.phase {
				t.Errorf("got phase %s, want %s", a.Phase, tt.phase)
			}
			if sum := a.Lease + a.Connect + a.Wait + a.Body; sum != a.End-a.Start {
				t.Errorf("phases add up to %v, want %v", sum, a.End-a.Start)
			}
			if tt.sent == nil {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				return
			}
			if !errors.Is(err, tt.sent) {
				t.Errorf("got %v, want errors.Is %v", err, tt.sent)
			}
			var e *Error
			if !errors.As(err, &e) || e.Outcome != tt.want || e.Attempt != 1 || e.Phase != tt.phase {
				t.Errorf("got %#v, want *Error with outcome %s in %s of attempt 1", e, tt.want, tt.phase)
			}
			if c.Stats().Available != 0 {
				t.Errorf("got %d available connections after a timeout, want 0 (closed)", c.Stats().Available)
			}
		})
	}
}

func TestRetryAfterTimeout(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{ReadTimeout: 100 * ms, Retries: 1})
	if _, err := get(t, c, s.URL+"/"); err != nil { // warm the pool
		t.Fatal(err)
	}
	res, err := get(t, c, s.URL+"/?delay=400ms")
	var e *Error
	if !errors.As(err, &e) || e.Outcome != vocab.ReadTimeout || e.Attempt != 2 {
		t.Fatalf("got %v, want a read timeout on attempt 2", err)
	}
	if len(res.Attempts) != 2 {
		t.Fatalf("got %d attempts, want 2", len(res.Attempts))
	}
	if res.Attempts[0].NewConnection || !res.Attempts[1].NewConnection {
		t.Errorf("got new connections %v, %v; want false, true", res.Attempts[0].NewConnection, res.Attempts[1].NewConnection)
	}
	within(t, "elapsed", res.Elapsed, 200*ms)
	if got := s.requests.Load(); got != 3 {
		t.Errorf("server saw %d requests, want 3 (warm-up and two attempts)", got)
	}
}

// TestDeadlineCoversRetries: 100 ms read timeouts against a 1 s server, five retries, but a
// 250 ms deadline over them all.
func TestDeadlineCoversRetries(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{ReadTimeout: 100 * ms, Retries: 5, Deadline: 250 * ms})
	res, err := get(t, c, s.URL+"/?delay=1s")
	if !errors.Is(err, ErrDeadline) {
		t.Fatalf("got %v, want the deadline", err)
	}
	within(t, "elapsed", res.Elapsed, 250*ms)
	if n := len(res.Attempts); n < 2 || n > 3 {
		t.Errorf("got %d attempts, want 3 (2 on a loaded machine)", n)
	}
}

func TestBackoffCutByDeadline(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{ReadTimeout: 100 * ms, Retries: 1, Backoff: 5 * time.Second, Deadline: 300 * ms})
	res, err := get(t, c, s.URL+"/?delay=1s")
	var e *Error
	if !errors.As(err, &e) || e.Outcome != vocab.Deadline || e.Phase != vocab.PhaseBackoff {
		t.Fatalf("got %v, want the deadline in the backoff", err)
	}
	within(t, "elapsed", res.Elapsed, 300*ms)
	if len(res.Attempts) != 1 {
		t.Errorf("got %d attempts, want 1", len(res.Attempts))
	}
}

func TestCallerCancelIsNotRetried(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{Retries: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 100*ms)
	defer cancel()
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/?delay=2s", nil)
	res, err := c.Do(ctx, req)
	if res.Outcome != vocab.Failed || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %s, %v; want error wrapping context.DeadlineExceeded", res.Outcome, err)
	}
	if errors.Is(err, ErrDeadline) {
		t.Error("the caller's own deadline matched ErrDeadline, want only the configured one")
	}
	if len(res.Attempts) != 1 {
		t.Errorf("got %d attempts, want 1", len(res.Attempts))
	}
}

func TestPostBodyReplayed(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n == 1 {
			<-r.Context().Done() // the first attempt times out
			return
		}
		fmt.Fprint(w, "done")
	}))
	t.Cleanup(s.Close)
	c := newClient(t, Config{ReadTimeout: 100 * ms, Retries: 1})
	req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader("order=42"))
	res, err := c.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != "done" || len(res.Attempts) != 2 {
		t.Errorf("got body %q after %d attempts, want \"done\" after 2", res.Body, len(res.Attempts))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0] != "order=42" || bodies[1] != "order=42" {
		t.Errorf("server got bodies %q, want the same body twice", bodies)
	}
}

func TestMaxBody(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{MaxBody: 4, MaxPerRoute: 1})
	for _, n := range []int{5, 6, 4} { // the last call leaves its connection pooled
		_, err := get(t, c, s.URL+"/?bytes="+strconv.Itoa(n))
		var e *Error
		if tooBig := n > 4; tooBig != (errors.As(err, &e) && e.Outcome == vocab.Failed) {
			t.Errorf("%d-byte body over a 4-byte limit: got %v", n, err)
		}
	}
	if got, want := c.Stats(), (Stats{Available: 1}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestPropagateDeadline(t *testing.T) {
	var got atomic.Value
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Values(vocab.DeadlineHeader))
	}))
	t.Cleanup(s.Close)
	tests := []struct {
		name string
		cfg  Config
		lo   int64 // the budget sent lies in [lo, hi] ms; -1: no header
		hi   int64
	}{
		{"propagated", Config{Deadline: 300 * ms, PropagateDeadline: true}, 100, 300},
		{"off", Config{Deadline: 300 * ms}, -1, -1},
		{"no deadline", Config{PropagateDeadline: true}, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.cfg)
			if _, err := get(t, c, s.URL); err != nil {
				t.Fatal(err)
			}
			vals := got.Load().([]string)
			if tt.lo < 0 {
				if len(vals) != 0 {
					t.Errorf("got header %q, want none", vals)
				}
				return
			}
			if len(vals) != 1 {
				t.Fatalf("got header %q, want one value", vals)
			}
			ms, err := strconv.ParseInt(vals[0], 10, 64)
			if err != nil || ms < tt.lo || ms > tt.hi {
				t.Errorf("got budget %q, want between %d and %d", vals[0], tt.lo, tt.hi)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"defaults", HC5Defaults(), ""},
		{"zero", Config{}, ""},
		{"negative read timeout", Config{ReadTimeout: -1}, "client: read timeout must not be negative, got -1ns"},
		{"negative pool", Config{MaxPerRoute: -1}, "client: max per route must not be negative, got -1"},
		{"negative retries", Config{Retries: -2}, "client: retries must not be negative, got -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if _, err := New(tt.cfg); (err == nil) != (tt.want == "") {
				t.Errorf("New: got %v, want error %v", err, tt.want != "")
			}
		})
	}
}

func TestHC5Defaults(t *testing.T) {
	got := HC5Defaults()
	want := Config{MaxPerRoute: 5, MaxTotal: 25, LeaseTimeout: 3 * time.Minute, ConnectTimeout: 3 * time.Minute}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
