package fakesrv

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

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

func TestStats(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	for _, p := range []string{"/reserve?order=a", "/reserve?order=b&call=2", "/reserve?order=a", "/delay", "/status/500", "/nope"} {
		mustFetch(t, c, s, "GET", p, "")
	}

	resp, body := mustFetch(t, c, s, "GET", "/stats", "")
	if got, want := resp.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status: got %d, want %d", got, want)
	}
	if got, want := resp.Header.Get("Content-Type"), "application/json"; got != want {
		t.Errorf("Content-Type: got %q, want %q", got, want)
	}

	// The shape: exactly these keys, every endpoint name present.
	var shape map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &shape); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range shape {
			if !yield(k) {
				return
			}
		}
	})
	wantKeys := []string{"connections_accepted", "connections_open", "dropped", "requests", "reservations", "seeds", "total_reservations"}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("keys: got %q, want %q", keys, wantKeys)
	}

	var got Stats
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	want := Stats{
		Requests: map[string]int{
			"reserve": 3, "trickle": 0, "stall": 0, "delay": 1, "status": 1, "redirect": 0,
			"redirect-loop": 0, "flaky": 0, "moved": 0, "echo": 0, "challenge": 0, "close-after-read": 0, "reset": 0, "body-cut": 0, "stats": 1, "other": 1,
		},
		Reservations:        map[string]int{"a": 2, "b": 1},
		TotalReservations:   3,
		ConnectionsAccepted: 1,
		ConnectionsOpen:     1,
		Seeds:               map[string]SeedStats{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stats:\ngot  %+v\nwant %+v", got, want)
	}

}

// TestStatsMethods: HEAD gives the head only, the other methods are refused, and POST
// /stats/reset zeroes everything but the open connections.
func TestStatsMethods(t *testing.T) {
	s := newServer(t)
	c, _ := newClient(t)
	for _, p := range []string{"/reserve?order=a", "/reserve?order=a"} {
		mustFetch(t, c, s, "GET", p, "")
	}
	resp, body := mustFetch(t, c, s, "HEAD", "/stats", "")
	if resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD /stats: got %d %q, want 200 and no body", resp.StatusCode, body)
	}
	refused := []struct{ method, path, allow string }{
		{"POST", "/stats", "GET, HEAD"},
		{"DELETE", "/stats", "GET, HEAD"},
		{"GET", "/stats/reset", "POST"},
	}
	for _, r := range refused {
		resp, body := mustFetch(t, c, s, r.method, r.path, "")
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != r.allow {
			t.Errorf("%s %s: got %d Allow %q, want 405 Allow %q", r.method, r.path, resp.StatusCode, resp.Header.Get("Allow"), r.allow)
		}
		if wantBody := "method " + r.method + " not allowed on " + r.path + ", want " + r.allow + "\n"; body != wantBody {
			t.Errorf("%s %s: body %q, want %q", r.method, r.path, body, wantBody)
		}
	}
	if got, want := s.Reservations("a"), 2; got != want {
		t.Fatalf("a refused reset reset: Reservations(a) got %d, want %d", got, want)
	}

	resp, body = mustFetch(t, c, s, "POST", "/stats/reset", "")
	if resp.StatusCode != http.StatusNoContent || body != "" {
		t.Errorf("POST /stats/reset: got %d %q, want 204 and no body", resp.StatusCode, body)
	}
	got := s.Stats()
	want := Stats{Requests: map[string]int{}, Reservations: map[string]int{}, ConnectionsOpen: 1, Seeds: map[string]SeedStats{}}
	for _, name := range endpointNames(endpointTable()) {
		want.Requests[name] = 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after reset:\ngot  %+v\nwant %+v", got, want)
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("log after reset: got %d requests, want 0", n)
	}
	_, body = mustFetch(t, c, s, "GET", "/stats", "")
	if wantBody := `"reservations":{}`; !strings.Contains(body, wantBody) || !strings.Contains(body, `"stats":1`) {
		t.Errorf("stats after reset: got %s, want %s and one stats request", body, wantBody)
	}
}
