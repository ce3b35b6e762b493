package client

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestLeaseTimeout(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{MaxPerRoute: 1, LeaseTimeout: 150 * ms})
	done := make(chan error)
	go func() {
		_, err := get(t, c, s.URL+"/?delay=800ms")
		done <- err
	}()
	waitFor(t, func() bool { return c.Stats().Leased == 1 })
	type out struct {
		res *Result
		err error
	}
	second := make(chan out)
	go func() {
		res, err := get(t, c, s.URL+"/")
		second <- out{res, err}
	}()
	waitFor(t, func() bool { return c.Stats().Pending == 1 })
	if got, want := c.Stats(), (Stats{Leased: 1, Pending: 1}); got != want {
		t.Errorf("got %+v while one call waits, want %+v", got, want)
	}
	o := <-second
	if !errors.Is(o.err, ErrLeaseTimeout) {
		t.Fatalf("got %v, want a lease timeout", o.err)
	}
	within(t, "lease wait", o.res.Attempts[0].Lease, 150*ms)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := c.Stats(), (Stats{Available: 1}); got != want {
		t.Errorf("got %+v at rest, want %+v", got, want)
	}
	if got := s.requests.Load(); got != 1 {
		t.Errorf("server saw %d requests, want 1: a call that never got a lease sends nothing", got)
	}
}

// TestPoolQueue: 6 calls through 2 connections, 200 ms each, finish in three batches.
func TestPoolQueue(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{MaxPerRoute: 2, MaxTotal: 10})
	var mu sync.Mutex
	var ends []time.Duration
	var wg sync.WaitGroup
	stop := make(chan struct{})
	sampled := make(chan error, 1)
	go func() { // the pool never shows more connections than it may hold
		var err error
		for {
			select {
			case <-stop:
				sampled <- err
				return
			default:
			}
			if s := c.Stats(); err == nil && (s.Leased > 2 || s.Leased+s.Available > 2 || s.Pending < 0) {
				err = fmt.Errorf("stats %+v exceed a pool of 2", s)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	for i := 0; i < 6; i++ {
		wg.Go(func() {
			res, err := get(t, c, s.URL+"/?delay=200ms")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ends = append(ends, res.Elapsed)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(stop)
	if err := <-sampled; err != nil {
		t.Error(err)
	}
	if len(ends) != 6 {
		t.Fatalf("got %d results, want 6", len(ends))
	}
	count := map[int]int{}
	for _, e := range ends {
		count[int(e/(200*ms))]++ // batch k ends in [k*200, (k+1)*200) ms
	}
	if count[1] != 2 || count[2] != 2 || count[3] != 2 {
		t.Errorf("got end times %v, want two calls in each of the batches at 200, 400, 600 ms", ends)
	}
	if got, want := c.Stats(), (Stats{Available: 2, Max: 10}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestTimeToLive(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{TimeToLive: 50 * ms})
	if _, err := get(t, c, s.URL+"/"); err != nil { // a fresh connection is young enough
		t.Fatal(err)
	}
	if got := c.Stats().Available; got != 1 {
		t.Fatalf("got %d available, want 1", got)
	}
	if _, err := get(t, c, s.URL+"/?delay=100ms"); err != nil { // the connection ages past 50 ms
		t.Fatal(err)
	}
	waitFor(t, func() bool { return c.Stats().Available == 0 })
	res, err := get(t, c, s.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Attempts[0].NewConnection {
		t.Error("a connection older than its time to live was reused")
	}
}
