package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// TestTimeoutClosesConnection: the connection of a timed-out call never returns to the pool,
// so the next call dials anew even though the pool had one connection.
func TestTimeoutClosesConnection(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{MaxPerRoute: 1, ReadTimeout: 150 * ms})
	if _, err := get(t, c, s.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, c, s.URL+"/?delay=1s"); !errors.Is(err, ErrReadTimeout) {
		t.Fatalf("got %v, want a read timeout", err)
	}
	res, err := get(t, c, s.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Attempts[0].NewConnection {
		t.Error("the call after a timeout reused a connection, want a new one")
	}
	if got := s.accepted.Load(); got != 2 {
		t.Errorf("server accepted %d connections, want 2", got)
	}
}

// TestIdleConnectionKeepsFullBudget: a pooled connection idle for longer than the read timeout
// survives (no deadline on the Transport's background read) and the next call on it gets the
// whole read timeout (no stale deadline).
func TestIdleConnectionKeepsFullBudget(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{MaxPerRoute: 1, ReadTimeout: 300 * ms})
	if _, err := get(t, c, s.URL+"/"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * ms) // idle for more than twice the read timeout
	if got := c.Stats(); got.Available != 1 {
		t.Fatalf("got %+v after idling, want 1 available", got)
	}
	res, err := get(t, c, s.URL+"/?delay=200ms")
	if err != nil {
		t.Fatalf("call on the idle connection: %v", err)
	}
	if res.Attempts[0].NewConnection {
		t.Error("the idle connection was not reused")
	}
	if got := s.accepted.Load(); got != 1 {
		t.Errorf("server accepted %d connections, want 1", got)
	}
}

// slowBody is a request body that takes a while to send.
type slowBody struct {
	chunks int
	pause  time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.chunks == 0 {
		return 0, io.EOF
	}
	time.Sleep(b.pause)
	b.chunks--
	p[0] = 'x'
	return 1, nil
}

// TestReadTimeoutIgnoresUpload: like SO_TIMEOUT, the read timeout bounds reads only; a slow
// request upload longer than it is fine.
func TestReadTimeoutIgnoresUpload(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{ReadTimeout: 150 * ms})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/", &slowBody{chunks: 4, pause: 100 * ms})
	res, err := c.Do(context.Background(), req)
	if err != nil {
		t.Fatalf("got %v, want success after a 400 ms upload", err)
	}
	within(t, "elapsed", res.Elapsed, 400*ms)
}

// TestWriteTimeout: a request body the server never reads fills the socket buffers; the
// write timeout ends the call instead of a hang.
func TestWriteTimeout(t *testing.T) {
	hold := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-hold // never reads the body
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(hold) })
	c := newClient(t, Config{WriteTimeout: 200 * ms})
	req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(strings.Repeat("x", 64<<20)))
	res, err := c.Do(context.Background(), req)
	if err == nil || res.Outcome != vocab.Failed || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("got %s, %v; want a failure on the write timeout", res.Outcome, err)
	}
	if res.Elapsed > 5*slack {
		t.Errorf("took %v, want about the write timeout", res.Elapsed)
	}
}

// TestTLS: the read timeout and the statistics work through a TLS connection as well.
func TestTLS(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("stall") != "" {
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(s.Close)
	c := newClient(t, Config{ReadTimeout: 150 * ms, TLS: s.Client().Transport.(*http.Transport).TLSClientConfig})
	if _, err := get(t, c, s.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Stats(), (Stats{Available: 1}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	res, err := get(t, c, s.URL+"/?stall=1")
	if !errors.Is(err, ErrReadTimeout) {
		t.Fatalf("got %v, want a read timeout", err)
	}
	within(t, "elapsed", res.Elapsed, 150*ms)
	if got, want := c.Stats(), (Stats{}); got != want {
		t.Errorf("got %+v after the timeout, want %+v", got, want)
	}
}
