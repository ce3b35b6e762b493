package fakesrv

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/vocab"
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

func TestDelay(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	b := Behaviour{Delay: 150 * time.Millisecond, Bytes: 1000}

	start := time.Now()
	resp, body := mustGet(t, c, s, b)
	elapsed := time.Since(start)

	if elapsed < b.Delay || elapsed > b.Delay+slack {
		t.Errorf("answer after %v, want between %v and %v", elapsed, b.Delay, b.Delay+slack)
	}
	if got, want := resp.StatusCode, http.StatusOK; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}
	if got, want := resp.ContentLength, int64(b.Bytes); got != want {
		t.Errorf("Content-Length: got %d, want %d", got, want)
	}
	if got, want := body, strings.Repeat("x", b.Bytes); got != want {
		t.Errorf("body: got %d bytes, want %d", len(got), len(want))
	}

	got := waitFinished(t, s, 1)
	want := Request{Seq: 1, Path: b.Path(), Behaviour: b, BytesSent: b.Bytes, Status: http.StatusOK}
	if got.Seq != want.Seq || got.Path != want.Path || got.Behaviour != want.Behaviour ||
		got.BytesSent != want.BytesSent || got.Status != want.Status || got.ClientGone || got.Reserved {
		t.Errorf("log: got %+v, want %+v", got, want)
	}
	if d := got.HeadSent.Sub(got.Arrived); d < b.Delay {
		t.Errorf("server sent the head %v after arrival, want at least %v", d, b.Delay)
	}
}

func TestTrickle(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	b := Behaviour{Bytes: 5, Every: 60 * time.Millisecond}
	total := time.Duration(b.Bytes) * b.Every

	start := time.Now()
	resp, err := c.Get(s.URL + b.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if head := time.Since(start); head > slack {
		t.Errorf("head after %v, want it at once (< %v)", head, slack)
	}
	if got, want := resp.ContentLength, int64(b.Bytes); got != want {
		t.Errorf("Content-Length: got %d, want %d", got, want)
	}
	// Read one byte at a time and check each against its absolute schedule: byte k is sent
	// at headTime + k*Every, and the head was sent after start.
	buf := make([]byte, 1)
	for k := 1; k <= b.Bytes; k++ {
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatalf("byte %d: %v", k, err)
		}
		if at, want := time.Since(start), time.Duration(k)*b.Every; at < want {
			t.Errorf("byte %d after %v, want not before %v", k, at, want)
		}
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("end of body: %v", err)
	}
	if elapsed := time.Since(start); elapsed < total || elapsed > total+slack {
		t.Errorf("body complete after %v, want between %v and %v", elapsed, total, total+slack)
	}

	got := waitFinished(t, s, 1)
	if got.BytesSent != b.Bytes || got.ClientGone || got.Status != http.StatusOK {
		t.Errorf("log: got BytesSent=%d ClientGone=%v Status=%d, want %d false 200",
			got.BytesSent, got.ClientGone, got.Status, b.Bytes)
	}
	if end := got.HeadSent.Add(total); got.Finished.Before(end) {
		t.Errorf("finished %v after head, want at least %v (absolute schedule)",
			got.Finished.Sub(got.HeadSent), total)
	}
}

func TestStallEndsWhenClientLeaves(t *testing.T) {
	tests := []struct {
		method string
		body   string
	}{
		{http.MethodGet, ""},
		{http.MethodPost, "order=42&qty=1"},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			s := newServer(t)
			c, _ := newClient(t)
			const wait = 100 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, tt.method, s.URL+Behaviour{Stall: true}.Path(), strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got status %d, want the client's own timeout", resp.StatusCode)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error: got %v, want context.DeadlineExceeded", err)
			}

			got := waitFinished(t, s, 1)
			if !got.ClientGone || got.Status != 0 || !got.HeadSent.IsZero() || !got.Behaviour.Stall {
				t.Errorf("log: got %+v, want a stall with ClientGone, no head", got)
			}
			if held := got.Finished.Sub(got.Arrived); held > wait+slack {
				t.Errorf("handler held the request %v, want it released within %v of the client leaving", held, slack)
			}
		})
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

func TestReservationCountedOnArrival(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	b := Behaviour{Order: "42", Delay: 300 * time.Millisecond}

	// The client gives up long before the answer; the reservation is committed anyway.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := get(ctx, c, s, b); err == nil {
		t.Fatal("got a response, want the client's timeout")
	}
	waitFor(t, "the reservation", func() bool { return s.Reservations("42") == 1 })
	got := waitFinished(t, s, 1)
	if !got.Reserved || got.Duplicate || !got.ClientGone || got.Status != 0 {
		t.Errorf("log: got %+v, want Reserved, ClientGone, no answer", got)
	}

	// Without idempotence a retry reserves again.
	b.Delay = 0
	resp, body := mustGet(t, c, s, b)
	if got, want := body, "reserved order=42\n"; got != want {
		t.Errorf("body: got %q, want %q", got, want)
	}
	if got, want := resp.Header.Get("X-Reservation"), "new"; got != want {
		t.Errorf("X-Reservation: got %q, want %q", got, want)
	}
	mustGet(t, c, s, Behaviour{Order: "43", Bytes: 99}) // Bytes is ignored for reservations

	counts := []struct {
		name      string
		got, want int
	}{
		{"Reservations(42)", s.Reservations("42"), 2},
		{"Reservations(43)", s.Reservations("43"), 1},
		{"Reservations(44)", s.Reservations("44"), 0},
		{"TotalReservations", s.TotalReservations(), 3},
	}
	for _, n := range counts {
		if n.got != n.want {
			t.Errorf("%s: got %d, want %d", n.name, n.got, n.want)
		}
	}
}

func TestIdempotentReservation(t *testing.T) {
	tests := []struct {
		name       string
		opts       []Option
		perRequest bool
	}{
		{"server-wide", []Option{WithIdempotent(true)}, false},
		{"per request", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.opts...)
			c, _ := newClient(t)
			first := Behaviour{Order: "7", Delay: 200 * time.Millisecond, Idempotent: tt.perRequest}
			retry := Behaviour{Order: "7", Idempotent: tt.perRequest}

			type answer struct {
				kind, body string
				err        error
			}
			firstc := make(chan answer, 1)
			go func() {
				resp, body, err := get(context.Background(), c, s, first)
				if err != nil {
					firstc <- answer{err: err}
					return
				}
				firstc <- answer{resp.Header.Get("X-Reservation"), body, nil}
			}()
			waitFor(t, "the first reservation", func() bool { return s.Reservations("7") == 1 })

			resp, body := mustGet(t, c, s, retry)
			a := <-firstc
			if a.err != nil {
				t.Fatalf("first request: %v", a.err)
			}
			if got, want := a.kind, "new"; got != want {
				t.Errorf("first X-Reservation: got %q, want %q", got, want)
			}
			if got, want := resp.Header.Get("X-Reservation"), "duplicate"; got != want {
				t.Errorf("retry X-Reservation: got %q, want %q", got, want)
			}
			if body != a.body {
				t.Errorf("retry body: got %q, want the first result %q", body, a.body)
			}
			if got, want := s.Reservations("7"), 1; got != want {
				t.Errorf("Reservations: got %d, want %d", got, want)
			}

			reqs := s.Requests()
			if len(reqs) != 2 {
				t.Fatalf("log: got %d requests, want 2", len(reqs))
			}
			f, r := reqs[0], reqs[1]
			if !f.Reserved || f.Duplicate || r.Reserved || !r.Duplicate {
				t.Errorf("log: got first Reserved=%v Duplicate=%v, retry Reserved=%v Duplicate=%v; want true false false true",
					f.Reserved, f.Duplicate, r.Reserved, r.Duplicate)
			}
			if due := f.Arrived.Add(first.Delay); r.HeadSent.Before(due) {
				t.Errorf("duplicate answered %v before the first answer time", due.Sub(r.HeadSent))
			}

			// Once the first answer time has passed, a duplicate answers at once.
			mustGet(t, c, s, retry)
			late := waitFinished(t, s, 3)
			if d := late.HeadSent.Sub(late.Arrived); !late.Duplicate || d > slack {
				t.Errorf("late duplicate: got Duplicate=%v after %v, want true at once", late.Duplicate, d)
			}
		})
	}
}

func TestConnectionCounts(t *testing.T) {
	s := newServer(t)
	c, tr := newClient(t)

	mustGet(t, c, s, Behaviour{})
	mustGet(t, c, s, Behaviour{Bytes: 10})
	if got, want := s.ConnsAccepted(), 1; got != want {
		t.Errorf("ConnsAccepted after 2 keep-alive requests: got %d, want %d", got, want)
	}
	if got, want := s.ConnsOpen(), 1; got != want {
		t.Errorf("ConnsOpen: got %d, want %d", got, want)
	}

	tr.CloseIdleConnections()
	waitFor(t, "ConnsOpen to drop to 0", func() bool { return s.ConnsOpen() == 0 })
	if got, want := s.ConnsAccepted(), 1; got != want {
		t.Errorf("ConnsAccepted after closing: got %d, want %d", got, want)
	}

	mustGet(t, c, s, Behaviour{})
	if got, want := s.ConnsAccepted(), 2; got != want {
		t.Errorf("ConnsAccepted after a new connection: got %d, want %d", got, want)
	}
}

func TestReset(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	mustGet(t, c, s, Behaviour{Order: "1"})
	mustGet(t, c, s, Behaviour{})

	s.Reset()
	counts := []struct {
		name      string
		got, want int
	}{
		{"len(Requests)", len(s.Requests()), 0},
		{"Reservations(1)", s.Reservations("1"), 0},
		{"TotalReservations", s.TotalReservations(), 0},
		{"ConnsAccepted", s.ConnsAccepted(), 0},
		{"ConnsOpen", s.ConnsOpen(), 1}, // the idle keep-alive connection still exists
	}
	for _, n := range counts {
		if n.got != n.want {
			t.Errorf("after Reset %s: got %d, want %d", n.name, n.got, n.want)
		}
	}

	// Numbering restarts, and a reservation after Reset is new again even when idempotent.
	resp, _ := mustGet(t, c, s, Behaviour{Order: "1", Idempotent: true})
	if got, want := resp.Header.Get("X-Reservation"), "new"; got != want {
		t.Errorf("X-Reservation after Reset: got %q, want %q", got, want)
	}
	if got := waitFinished(t, s, 1); got.Seq != 1 {
		t.Errorf("Seq after Reset: got %d, want 1", got.Seq)
	}
	if got, want := s.ConnsAccepted(), 0; got != want {
		t.Errorf("ConnsAccepted on the reused connection: got %d, want %d", got, want)
	}
}

func TestMaxDuration(t *testing.T) {
	const maxDur = 100 * time.Millisecond
	tests := []struct {
		name      string
		b         Behaviour
		wantBody  string
		wantBytes int  // BytesSent in the log
		wantErr   bool // the body ends short of its Content-Length
	}{
		{"delay capped", Behaviour{Delay: 5 * time.Second}, "", 0, false},
		{"stall answers empty at the cap", Behaviour{Stall: true}, "", 0, false},
		{"trickle cut at the cap", Behaviour{Bytes: 5, Every: 60 * time.Millisecond}, "", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, WithMaxDuration(maxDur))
			c, _ := newClient(t)
			start := time.Now()
			_, body, err := get(context.Background(), c, s, tt.b)
			elapsed := time.Since(start)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Errorf("error: got %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && body != tt.wantBody {
				t.Errorf("body: got %q, want %q", body, tt.wantBody)
			}
			if elapsed > maxDur+slack {
				t.Errorf("ended after %v, want the cap %v (+%v)", elapsed, maxDur, slack)
			}
			got := waitFinished(t, s, 1)
			if got.BytesSent != tt.wantBytes || got.Status != http.StatusOK || got.ClientGone {
				t.Errorf("log: got BytesSent=%d Status=%d ClientGone=%v, want %d 200 false",
					got.BytesSent, got.Status, got.ClientGone, tt.wantBytes)
			}
			if d := got.Finished.Sub(got.Arrived); d < 60*time.Millisecond {
				t.Errorf("handler ended after %v, want it held until the cap", d)
			}
		})
	}
}

func TestBadRequest(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	resp, err := c.Get(s.URL + "/delay?delay=x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.StatusCode, http.StatusBadRequest; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}
	if got, want := string(body), "delay: time: invalid duration \"x\"\n"; got != want {
		t.Errorf("body: got %q, want %q", got, want)
	}
	if got := waitFinished(t, s, 1); got.Status != http.StatusBadRequest || got.Path != "/delay?delay=x" {
		t.Errorf("log: got Status=%d Path=%q, want 400 /delay?delay=x", got.Status, got.Path)
	}
}

// TestBudget: with X-Deadline-Ms shorter than the work, the server answers 503 at once and
// reserves nothing; with enough budget it works as usual.
func TestBudget(t *testing.T) {
	tests := []struct {
		name     string
		budget   string
		status   int
		reserved int
		rejected bool
		logged   time.Duration
	}{
		{"too short", "100", http.StatusServiceUnavailable, 0, true, 100 * time.Millisecond},
		{"enough", "5000", http.StatusOK, 1, false, 5 * time.Second},
		{"zero", "0", http.StatusServiceUnavailable, 0, true, 0},
		{"malformed", "soon", http.StatusBadRequest, 0, false, -1},
		{"negative", "-5", http.StatusBadRequest, 0, false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			c, _ := newClient(t)
			b := Behaviour{Order: "7", Delay: 150 * time.Millisecond}
			req, err := http.NewRequest(http.MethodPost, s.URL+b.Path(), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(vocab.DeadlineHeader, tt.budget)
			start := time.Now()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			if resp.StatusCode != tt.status {
				t.Errorf("got status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status != http.StatusOK && took >= b.Delay {
				t.Errorf("a refused request took %v, want an answer at once (< %v)", took, b.Delay)
			}
			if got := s.Reservations("7"); got != tt.reserved {
				t.Errorf("got %d reservations, want %d", got, tt.reserved)
			}
			got := waitFinished(t, s, 1)
			if got.Rejected != tt.rejected || got.Budget != tt.logged {
				t.Errorf("log: got Rejected=%v Budget=%v, want %v %v", got.Rejected, got.Budget, tt.rejected, tt.logged)
			}
		})
	}
}

func TestLogLimit(t *testing.T) {
	s := newServer(t, WithLogLimit(4))
	c, _ := newClient(t)
	for i := 0; i < 10; i++ {
		mustGet(t, c, s, Behaviour{})
	}
	log := s.Requests()
	if len(log) > 4 || len(log) == 0 || log[len(log)-1].Seq != 10 {
		t.Errorf("got %d entries ending with seq %d, want at most 4 ending with 10", len(log), log[len(log)-1].Seq)
	}
	if got := s.Stats().Requests["delay"]; got != 10 {
		t.Errorf("got %d delay requests counted, want 10: the limit must not touch the counters", got)
	}
	if _, err := New(WithLogLimit(-1)); err == nil {
		t.Error("New accepted a negative log limit")
	}
}
