package client

import (
	"github.com/labrun/labrun/internal/rules"

	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCheckReads: which pooled connection the libraries' check reads on (and so costs up to
// HealthRead) before a request, without sockets.
func TestCheckReads(t *testing.T) {
	eof := io.EOF
	ok := Config{Rules: rules.Rules{Reuse: rules.Reuse{Check: rules.CheckNonGet}}}
	hc5 := Config{ValidateAfterInactivity: 2 * time.Second}
	tests := []struct {
		name   string
		cfg    Config
		h      health
		method string
		want   bool
	}{
		{"okhttp: fresh connection, successCount 0", ok, health{}, "POST", false},
		{"okhttp: pooled, POST", ok, health{pooled: true, idle: time.Millisecond}, "POST", true},
		{"okhttp: pooled, PUT", ok, health{pooled: true}, "PUT", true},
		{"okhttp: pooled, GET: isHealthy(false)", ok, health{pooled: true, idle: time.Hour}, "GET", false},
		{"okhttp: known dead: refused at once", ok, health{pooled: true, dead: eof}, "POST", false},
		{"hc5: idle longer than validateAfterInactivity", hc5, health{pooled: true, idle: 3 * time.Second}, "GET", true},
		{"hc5: idle exactly the period", hc5, health{pooled: true, idle: 2 * time.Second}, "GET", false},
		{"hc5: closed by the evictor", hc5, health{pooled: true, idle: time.Hour, closed: true}, "GET", false},
		{"hc5: no validation", Config{ValidateAfterInactivity: NoValidation}, health{pooled: true, idle: time.Hour}, "POST", false},
		{"go: the watch reads nothing", Config{}, health{pooled: true, idle: time.Hour}, "POST", false},
	}
	for _, tt := range tests {
		if got := tt.cfg.checkReads(tt.h, tt.method); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestHealthReadDelaysTheRequest: with OkHttp's check, a POST on a pooled connection reaches
// the server at least HealthRead after the call starts (the check's read timed out); the
// connection is reused, not discarded.
func TestHealthReadDelaysTheRequest(t *testing.T) {
	var mu sync.Mutex
	var arrived []time.Time
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived = append(arrived, time.Now())
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
	}))
	defer s.Close()
	c := newClient(t, Config{Rules: rules.Rules{Reuse: rules.Reuse{Check: rules.CheckNonGet}}, ReadTimeout: 5 * time.Second})
	post := func() (*Result, time.Time) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := c.Do(context.Background(), req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		return res, start
	}
	post() // the connection now sits in the pool, successCount 1
	res, start := post()
	mu.Lock()
	defer mu.Unlock()
	if len(arrived) != 2 {
		t.Fatalf("requests at the server: got %d, want 2", len(arrived))
	}
	// At least the check's read; far less than a second, or the check waits for something
	// else (a margin a loaded machine never comes near).
	if got := arrived[1].Sub(start); got < HealthRead || got > time.Second {
		t.Errorf("second POST reached the server after %v, want from the check's %v to well under 1 s", got, HealthRead)
	}
	if a := res.Attempts[len(res.Attempts)-1]; len(res.Attempts) != 1 || a.NewConnection {
		t.Errorf("second POST: got %d attempts, new connection %v; want 1 on the pooled connection", len(res.Attempts), a.NewConnection)
	}
}

// TestHealthReadEndsWhenTheConnectionStirs: the check's read returns as soon as the
// connection's background read does, with bytes (healthy) or the end of the stream (dead),
// without waiting out its timeout; the health take reports then says which.
func TestHealthReadEndsWhenTheConnectionStirs(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int
		err  error
	}{{"bytes", 1, nil}, {"end of stream", 0, io.EOF}} {
		t.Run(tt.name, func(t *testing.T) {
			cn := &conn{idleSince: time.Now()}
			go func() {
				time.Sleep(20 * time.Millisecond)
				cn.afterRead(tt.n, tt.err)
			}()
			start := time.Now()
			cn.healthRead(time.Minute)
			if took := time.Since(start); took > 30*time.Second {
				t.Fatalf("the check waited %v, want it to end when the read returned", took)
			}
			if got := cn.peek(time.Now()); (got.dead != nil) != (tt.err != nil) {
				t.Errorf("dead after the check: got %v, want %v", got.dead, tt.err)
			}
		})
	}
}
