// Package upstream is the caller's side of the lab: a worker pool, a server for a hop of a call
// chain, and a fake downstream that pauses. The caller is in-process: HTTP would add queues.
package upstream

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/labrun/labrun/internal/fakesrv"
)

// Workers is a FIFO worker pool, as a servlet container's threads.
type Workers struct {
	sem    *semaphore.Weighted
	busy   atomic.Int64
	queued atomic.Int64
}

// NewWorkers returns a pool of n workers; it panics for n < 1.
func NewWorkers(n int) *Workers {
	if n < 1 {
		panic("upstream: NewWorkers needs at least one worker")
	}
	return &Workers{sem: semaphore.NewWeighted(int64(n))}
}

// Do runs f on a free worker, or returns ctx's error if ctx ends the wait.
func (w *Workers) Do(ctx context.Context, f func()) (time.Time, error) {
	w.queued.Add(1)
	err := w.sem.Acquire(ctx, 1)
	w.queued.Add(-1)
	if err != nil {
		return time.Time{}, err
	}
	got := time.Now()
	w.busy.Add(1)
	defer func() {
		w.busy.Add(-1)
		w.sem.Release(1)
	}()
	f()
	return got, nil
}

// Busy counts the workers running a job.
func (w *Workers) Busy() int { return int(w.busy.Load()) }

// Queued counts the jobs waiting for a worker.
func (w *Workers) Queued() int { return int(w.queued.Load()) }

// Server is a loopback server in httptest's shape that counts connections.
type Server struct {
	URL string

	srv    *http.Server
	cancel context.CancelFunc
	done   chan struct{}
	opened atomic.Int64
	closed atomic.Int64
}

const shutdownGrace = 5 * time.Second

// NewServer serves h on a free loopback port.
func NewServer(h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("upstream: listen on loopback: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{URL: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan struct{})}
	s.srv = &http.Server{
		Handler:     h,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				s.opened.Add(1)
			case http.StateClosed, http.StateHijacked:
				s.closed.Add(1)
			}
		},
		ReadHeaderTimeout: 10 * time.Second,
		// Timed-out clients break connections on purpose.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Conns counts the connections accepted and closed.
func (s *Server) Conns() (opened, closed int) {
	return int(s.opened.Load()), int(s.closed.Load())
}

// Close cancels the requests, waits up to shutdownGrace, then closes every connection.
func (s *Server) Close() {
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	_ = s.srv.Close()
	<-s.done
}

// Downstream is fakesrv's handler behind a gate that pauses and serves Capacity at once.
type Downstream struct {
	*Server
	fake  *fakesrv.Server
	slots chan struct{}

	mu    sync.Mutex // guards until, tail and seen
	until time.Time
	tail  Tail
	seen  map[string]bool

	inFlight atomic.Int64
	peak     atomic.Int64
	arrived  atomic.Int64
}

// Tail slows every Every-th call's first request (query "call") by Slow, only calls below Calls
// if > 0. The zero value slows none.
type Tail struct {
	Every int
	Slow  time.Duration
	Calls int
}

// NewDownstream starts a Downstream (capacity 0: no bound).
func NewDownstream(capacity int) (*Downstream, error) {
	if capacity < 0 {
		return nil, fmt.Errorf("upstream: capacity must not be negative, got %d", capacity)
	}
	fake, err := fakesrv.NewUnstarted()
	if err != nil {
		return nil, err
	}
	d := &Downstream{fake: fake}
	if capacity > 0 {
		d.slots = make(chan struct{}, capacity)
	}
	s, err := NewServer(http.HandlerFunc(d.serve))
	if err != nil {
		fake.Close()
		return nil, err
	}
	d.Server = s
	return d, nil
}

// Fake is the fake server behind the gate.
func (d *Downstream) Fake() *fakesrv.Server { return d.fake }

// PauseUntil holds every answer until t.
func (d *Downstream) PauseUntil(t time.Time) {
	d.mu.Lock()
	d.until = t
	d.mu.Unlock()
}

// SetTail sets the tail and forgets which calls arrived.
func (d *Downstream) SetTail(t Tail) {
	d.mu.Lock()
	d.tail, d.seen = t, map[string]bool{}
	d.mu.Unlock()
}

// Reached reports whether the call tagged tag arrived since SetTail.
func (d *Downstream) Reached(tag string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen[tag]
}

// Peak is the most requests held at once since ResetCounts.
func (d *Downstream) Peak() int { return int(d.peak.Load()) }

// Arrived counts the requests since ResetCounts.
func (d *Downstream) Arrived() int { return int(d.arrived.Load()) }

// ResetCounts restarts Peak from the requests held now, and Arrived from 0.
func (d *Downstream) ResetCounts() {
	d.peak.Store(d.inFlight.Load())
	d.arrived.Store(0)
}

// Close closes the downstream and its fake server.
func (d *Downstream) Close() {
	d.Server.Close()
	d.fake.Close()
}

func (d *Downstream) serve(rw http.ResponseWriter, r *http.Request) {
	d.arrived.Add(1)
	n := d.inFlight.Add(1)
	// Uncounted before the last flush: the next request may come first.
	w := &answered{ResponseWriter: rw, done: func() { d.inFlight.Add(-1) }}
	defer w.finish()
	for {
		p := d.peak.Load()
		if n <= p || d.peak.CompareAndSwap(p, n) {
			break
		}
	}
	d.mu.Lock()
	until := d.until
	tag := r.URL.Query().Get("call")
	if t := d.tail; t.Every > 0 {
		if n, err := strconv.Atoi(tag); err == nil && n%t.Every == 0 && !d.seen[tag] && (t.Calls == 0 || n < t.Calls) {
			until = time.Now().Add(t.Slow)
		}
	}
	if d.seen != nil {
		d.seen[tag] = true
	}
	d.mu.Unlock()
	if wait := time.Until(until); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-r.Context().Done():
			t.Stop()
			abort()
		case <-t.C:
		}
	}
	if d.slots != nil {
		select {
		case <-r.Context().Done():
			abort()
		case d.slots <- struct{}{}:
		}
		defer func() { <-d.slots }()
	}
	d.fake.Handler().ServeHTTP(w, r)
}

// answered calls done once the answer completes or the handler returns.
type answered struct {
	http.ResponseWriter
	done    func()
	once    sync.Once
	status  int
	written int64
}

func (a *answered) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *answered) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	n, err := a.ResponseWriter.Write(p)
	a.written += int64(n)
	return n, err
}

func (a *answered) FlushError() error {
	if a.complete() {
		a.finish()
	}
	return http.NewResponseController(a.ResponseWriter).Flush()
}

func (a *answered) Flush() { _ = a.FlushError() }

// Unwrap gives http.ResponseController the connection.
func (a *answered) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// complete: head and declared body written.
func (a *answered) complete() bool {
	if a.status == 0 || a.status < 200 {
		return false
	}
	if a.status == http.StatusNoContent || a.status == http.StatusNotModified {
		return true
	}
	cl, err := strconv.ParseInt(a.Header().Get("Content-Length"), 10, 64)
	return err == nil && a.written >= cl
}

func (a *answered) finish() { a.once.Do(a.done) }

// abort ends a request whose client left with a FIN: a 200 would draw an RST, skipping the
// caller's TIME_WAIT.
func abort() { panic(http.ErrAbortHandler) }

// Hedge calls do(ctx, 0), and do(ctx, 1) if no success after delay; the first success wins. It
// returns the value, the copies sent and the last error if both failed. Idempotent calls only.
func Hedge[T any](ctx context.Context, delay time.Duration, do func(ctx context.Context, copy int) (T, error)) (T, int, error) {
	type result struct {
		v   T
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, 2)
	send := func(copy int) {
		go func() {
			v, err := do(ctx, copy)
			results <- result{v, err}
		}()
	}
	send(0)
	sent, failed := 1, 0
	timer := time.NewTimer(delay)
	defer timer.Stop()
	var zero T
	var last error
	for {
		select {
		case <-timer.C:
			if sent == 1 {
				send(1)
				sent++
			}
		case r := <-results:
			if r.err == nil {
				return r.v, sent, nil
			}
			last, failed = r.err, failed+1
			if failed == sent && sent == 2 {
				return zero, sent, last
			}
			if sent == 1 {
				timer.Reset(0)
			}
		case <-ctx.Done():
			return zero, sent, ctx.Err()
		}
	}
}
