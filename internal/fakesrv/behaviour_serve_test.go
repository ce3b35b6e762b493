package fakesrv

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

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
	if got, want := string(body), "delay must be a duration such as 250ms, 2s or 1m30s, got \"x\"\n"; got != want {
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
		{"signed", "+5000", http.StatusBadRequest, 0, false, -1},
		// Budgets beyond what time.Duration holds (about 292 years) saturate rather than
		// wrap: 18446744073710 ms once wrapped to 448 us and refused the work.
		{"beyond a Duration", "18446744073710", http.StatusOK, 1, false, math.MaxInt64},
		{"beyond an int64", "99999999999999999999999", http.StatusOK, 1, false, math.MaxInt64},
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

func TestStallMax(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		b    Behaviour
		want time.Duration
	}{
		{"per-request cap", nil, Behaviour{Stall: true, MaxStall: 150 * time.Millisecond}, 150 * time.Millisecond},
		{"server cap is shorter", []Option{WithMaxDuration(100 * time.Millisecond)},
			Behaviour{Stall: true, MaxStall: 5 * time.Second}, 100 * time.Millisecond},
		{"reservation stalled with a cap", nil, Behaviour{Order: "3", Stall: true, MaxStall: 100 * time.Millisecond}, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.opts...)
			c, _ := newClient(t)
			start := time.Now()
			resp, body := mustGet(t, c, s, tt.b)
			elapsed := time.Since(start)
			if resp.StatusCode != http.StatusOK || body != "" {
				t.Errorf("answer: got %d %q, want 200 and an empty body", resp.StatusCode, body)
			}
			if elapsed < tt.want || elapsed > tt.want+slack {
				t.Errorf("answer after %v, want between %v and %v", elapsed, tt.want, tt.want+slack)
			}
			got := waitFinished(t, s, 1)
			if got.Behaviour != tt.b {
				t.Errorf("log Behaviour: got %+v, want %+v", got.Behaviour, tt.b)
			}
			if d := got.HeadSent.Sub(got.Arrived); d < tt.want {
				t.Errorf("server answered %v after arrival, want at least %v", d, tt.want)
			}
		})
	}
}

// TestCappedHeader: a request whose durations the max duration caps is told so in
// X-Labrun-Capped, rather than silently served shorter.
func TestCappedHeader(t *testing.T) {
	tests := []struct {
		path string
		want []string
	}{
		{"/delay?delay=5s", []string{"delay 5s capped to 100ms"}},
		{"/reserve?order=1&delay=5s", []string{"delay 5s capped to 100ms"}},
		{"/status/503?delay=5s", []string{"delay 5s capped to 100ms"}},
		{"/stall?max=5s", []string{"stall capped to 100ms"}},
		{"/stall", []string{"stall capped to 100ms"}},
		{"/stall?max=50ms", nil},
		{"/delay?delay=50ms", nil},
		{"/trickle?bytes=3&every=10ms", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			s := newServer(t, WithMaxDuration(100*time.Millisecond))
			c, _ := newClient(t)
			resp, _ := mustFetch(t, c, s, "GET", tt.path, "")
			if got := resp.Header.Values("X-Labrun-Capped"); !slices.Equal(got, tt.want) {
				t.Errorf("X-Labrun-Capped: got %q, want %q", got, tt.want)
			}
		})
	}
	// A trickle says so with its head, before the body ends short.
	s := newServer(t, WithMaxDuration(100*time.Millisecond))
	c, _ := newClient(t)
	resp, err := c.Get(s.URL + "/trickle?bytes=5&every=60ms")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, want := resp.Header.Get("X-Labrun-Capped"), "trickle of 5 bytes every 60ms (300ms) capped to 100ms: the body ends short"; got != want {
		t.Errorf("trickle X-Labrun-Capped: got %q, want %q", got, want)
	}
}
