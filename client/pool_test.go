package client

import (
	"context"
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

// TestPoolBooks follows the pool's books through a lease's life without a socket: what Stats
// shows when a lease waits for its connection, when a connection is dialled, used, pooled,
// taken by another call, and when hooks arrive after the lease ended.
func TestPoolBooks(t *testing.T) {
	ctx := context.Background()
	p := newPool(Config{MaxPerRoute: 2, MaxTotal: 5})
	check := func(step string, want Stats) {
		t.Helper()
		if got := p.stats(); got != want {
			t.Errorf("%s: got %+v, want %+v", step, got, want)
		}
	}
	acquire := func() *lease {
		t.Helper()
		l, err := p.acquire(ctx, "http://a")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	check("empty", Stats{Max: 5})
	l1 := acquire()
	check("leased, no connection yet", Stats{Leased: 1, Max: 5})
	cn := &conn{pool: p}
	p.opened(cn, l1)
	check("dialled for the lease: claimed", Stats{Leased: 1, Max: 5})
	p.bind(l1, cn)
	check("in use", Stats{Leased: 1, Max: 5})
	p.putIdle(l1)
	check("back in the idle pool before the release", Stats{Available: 1, Max: 5})
	p.release(l1)
	check("released", Stats{Available: 1, Max: 5})

	l2 := acquire()
	check("a lease about to take the idle connection", Stats{Leased: 1, Max: 5})
	p.bind(l2, cn)
	check("reused", Stats{Leased: 1, Max: 5})

	// A connection dialled for l3 but taken by l4 is l4's; once l4 pools it, it is available
	// although l3 has not ended.
	l3 := acquire()
	check("route full", Stats{Leased: 2, Max: 5})
	cn2 := &conn{pool: p}
	p.opened(cn2, l3)
	p.release(l2) // cn idle again
	l4 := acquire()
	p.bind(l4, cn2)
	check("l4 took l3's dial", Stats{Leased: 2, Max: 5})
	p.putIdle(l4)
	check("l4 pooled it", Stats{Leased: 1, Available: 1, Max: 5}) // of two idle, l3 is about to take one
	p.release(l4)
	p.release(l3)
	check("all released", Stats{Available: 2, Max: 5})

	// Hooks and dials that arrive after their lease ended change nothing but the set of
	// open connections.
	cn3 := &conn{pool: p}
	p.opened(cn3, l3)
	p.bind(l3, cn3)
	p.putIdle(l3)
	check("late dial and hooks", Stats{Available: 3, Max: 5})
	for _, c := range []*conn{cn, cn2, cn3} {
		p.closed(c)
	}
	check("closed", Stats{Max: 5})
}

// TestPoolAcquireFails: a lease that times out or whose context is done holds nothing and
// leaves no pending call behind.
func TestPoolAcquireFails(t *testing.T) {
	p := newPool(Config{MaxPerRoute: 1, LeaseTimeout: 20 * ms})
	held, err := p.acquire(context.Background(), "http://a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.acquire(context.Background(), "http://a"); !errors.Is(err, errLeaseTimeout) {
		t.Errorf("got %v, want the lease timeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.acquire(ctx, "http://a"); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want the context's cause", err)
	}
	if got, want := p.stats(), (Stats{Leased: 1}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	p.release(held)
	if _, err := p.acquire(context.Background(), "http://b"); err != nil {
		t.Errorf("another route: got %v, want a lease", err)
	}
}
