package fakesrv

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFailOn: with fail-on=2 the first request on a connection is answered and the second,
// on the same pooled connection, is read, reserved and closed (or reset) unanswered; a
// request on a new connection is the first there, so it is answered.
func TestFailOn(t *testing.T) {
	for _, mode := range []string{FailClose, FailReset} {
		t.Run(mode, func(t *testing.T) {
			s := newServer(t)
			tr := &http.Transport{DisableCompression: true}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			path := Behaviour{Order: "o", Fail: mode, FailOn: 2}.Path()
			post := func() (*http.Response, error) {
				return c.Post(s.URL+path, "text/plain", strings.NewReader("x"))
			}
			resp, err := post()
			if err != nil {
				t.Fatalf("first request: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			// A POST is not replayed by net/http: the failure reaches the caller.
			_, err = post()
			if err == nil {
				t.Fatal("second request on the pooled connection: got an answer, want a failure")
			}
			if mode == FailReset && !errors.Is(err, syscall.ECONNRESET) {
				t.Logf("reset seen as %v", err) // the exact error depends on timing; the log says what the server did
			}
			resp, err = post() // a new connection: its first request
			if err != nil {
				t.Fatalf("third request, new connection: %v", err)
			}
			resp.Body.Close()

			log := s.Requests()
			if len(log) != 3 {
				t.Fatalf("got %d requests in the log, want 3", len(log))
			}
			want := []struct {
				conn, seq int
				failed    string
			}{{1, 1, ""}, {1, 2, mode}, {2, 1, ""}}
			for i, w := range want {
				r := log[i]
				if r.Conn != w.conn || r.ConnSeq != w.seq || r.Failed != w.failed || !r.Reserved {
					t.Errorf("request %d: conn %d seq %d failed %q reserved %v, want conn %d seq %d failed %q reserved",
						i+1, r.Conn, r.ConnSeq, r.Failed, r.Reserved, w.conn, w.seq, w.failed)
				}
			}
			if got := s.Reservations("o"); got != 3 {
				t.Errorf("got %d reservations, want 3: the failed request was executed too", got)
			}
		})
	}
}

func TestParseFail(t *testing.T) {
	tests := []struct {
		query   string
		want    Behaviour
		wantErr string
	}{
		{"fail=close", Behaviour{Fail: FailClose}, ""},
		{"fail=reset&fail-on=3", Behaviour{Fail: FailReset, FailOn: 3}, ""},
		{"fail=explode", Behaviour{}, `fail: unknown mode "explode", want close, reset, stall or a status from 400 to 599`},
		{"fail=close&fail-on=0", Behaviour{}, `fail-on must be a whole number between 1 and 65535, got "0"`},
		{"fail=close&fail-on=-1", Behaviour{}, `fail-on must be a whole number between 1 and 65535, got "-1"`},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", "/delay?"+tt.query, nil)
		got, err := ParseBehaviour("/delay", req.URL.Query())
		switch {
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("%s: got error %v, want %q", tt.query, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("%s: got %+v, %v; want %+v", tt.query, got, err, tt.want)
		}
	}
}
