package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

func newGoClient(t *testing.T, cfg GoConfig) *GoClient {
	t.Helper()
	g, err := NewGo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

func goGet(t *testing.T, g *GoClient, url string) (*Result, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g.Do(context.Background(), req)
}

// TestGoClientOutcomes: what net/http's own settings do, classified like labrun's client.
func TestGoClientOutcomes(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name    string
		cfg     GoConfig
		query   string
		want    vocab.Outcome
		phase   vocab.Phase
		elapsed time.Duration
	}{
		// ResponseHeaderTimeout covers the head only: a 400 ms gap in the body passes a 200 ms
		// "read timeout" that labrun's client would fire.
		{"no read timeout on the body", GoConfig{ResponseHeaderTimeout: 200 * ms}, "bytes=2&every=400ms", vocab.OK, vocab.PhaseBody, 800 * ms},
		{"header timeout", GoConfig{ResponseHeaderTimeout: 200 * ms}, "delay=2s", vocab.ReadTimeout, vocab.PhaseWait, 200 * ms},
		// Client.Timeout is a deadline: it cuts a healthy trickle.
		{"Client.Timeout cuts a trickle", GoConfig{ClientTimeout: 250 * ms}, "bytes=10&every=100ms", vocab.Deadline, vocab.PhaseBody, 250 * ms},
		{"context deadline", GoConfig{Deadline: 250 * ms}, "delay=2s", vocab.Deadline, vocab.PhaseWait, 250 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGoClient(t, tt.cfg)
			res, err := goGet(t, g, s.URL+"/?"+tt.query)
			if res.Outcome != tt.want {
				t.Fatalf("got %s (%v), want %s", res.Outcome, err, tt.want)
			}
			within(t, "elapsed", res.Elapsed, tt.elapsed)
			a := res.Attempts[0]
			if a.Phase != tt.phase {
				t.Errorf("got phase %s, want %s", a.Phase, tt.phase)
			}
			if sum := a.Lease + a.Connect + a.Wait + a.Body; sum != a.End-a.Start {
				t.Errorf("phases add up to %v, want %v", sum, a.End-a.Start)
			}
			if tt.want != vocab.OK {
				var e *Error
				if !errors.As(err, &e) || e.Outcome != tt.want {
					t.Errorf("got error %v, want an *Error with outcome %s", err, tt.want)
				}
			}
		})
	}
}

// TestGoClientPoolWaitHasNoTimeout: with MaxConnsPerHost 1 a second call waits for the first
// without any limit of its own, then reuses its connection.
func TestGoClientPoolWaitHasNoTimeout(t *testing.T) {
	s := newServer(t)
	g := newGoClient(t, GoConfig{MaxConnsPerHost: 1})
	done := make(chan *Result, 2)
	for i := 0; i < 2; i++ {
		go func() {
			res, _ := goGet(t, g, s.URL+"/?delay=200ms")
			done <- res
		}()
	}
	first, second := <-done, <-done
	if first.Outcome != vocab.OK || second.Outcome != vocab.OK {
		t.Fatalf("got %s and %s, want two successes", first.Outcome, second.Outcome)
	}
	// The second call waits for the first from its own start, which may come a little after the
	// first's (two goroutines): 400 ms less that skew, which a loaded machine makes a few ms.
	within(t, "second call", second.Elapsed, 380*ms)
	if second.Attempts[0].Lease < 150*ms {
		t.Errorf("the second call waited %v for a connection, want about 200 ms", second.Attempts[0].Lease)
	}
	if got := s.accepted.Load(); got != 1 {
		t.Errorf("server accepted %d connections, want 1", got)
	}
}

func TestGoClientRetry(t *testing.T) {
	s := newServer(t)
	g := newGoClient(t, GoConfig{ResponseHeaderTimeout: 100 * ms, Retries: 1})
	res, err := goGet(t, g, s.URL+"/?delay=1s")
	if !errors.Is(err, ErrReadTimeout) || len(res.Attempts) != 2 {
		t.Fatalf("got %v after %d attempts, want a read timeout after 2", err, len(res.Attempts))
	}
	within(t, "elapsed", res.Elapsed, 200*ms)
}

func TestNewGoValidates(t *testing.T) {
	if _, err := NewGo(GoConfig{DialTimeout: -1}); err == nil {
		t.Error("NewGo accepted a negative dial timeout")
	}
}
