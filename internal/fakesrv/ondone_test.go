package fakesrv

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestOnDone: WithOnDone is called once per request when the server is done with it, with
// its log record: an answered request and a stall its client left.
func TestOnDone(t *testing.T) {
	var mu sync.Mutex // guards done
	var done []Request
	s := newServer(t, WithOnDone(func(r Request) {
		mu.Lock()
		done = append(done, r)
		mu.Unlock()
	}))
	c, _ := newClient(t)
	mustGet(t, c, s, Behaviour{Bytes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := get(ctx, c, s, Behaviour{Stall: true}); err == nil {
		t.Fatal("a stall answered")
	}
	waitFor(t, "two requests done", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if got := done[0]; got.Seq != 1 || got.Status != 200 || got.BytesSent != 3 || got.ClientGone || got.Finished.IsZero() {
		t.Errorf("the answered request: got %+v", got)
	}
	if got := done[1]; got.Seq != 2 || !got.ClientGone || got.Status != 0 || got.Finished.IsZero() {
		t.Errorf("the stall: got %+v", got)
	}
}
