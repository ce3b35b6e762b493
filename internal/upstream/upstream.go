// Package upstream is the caller's side of the lab: a bounded pool of workers (a service's
// request threads), a loopback server for a hop of a call chain, and a fake downstream that
// can pause (a GC pause: it takes requests and answers none until the pause ends) and serves
// a bounded number of requests at once, counting what presses on it.
//
// The caller is in-process: its requests and its health check are function calls that wait
// for a worker, not HTTP requests to a listener of its own. The subject is the worker queue;
// an HTTP front would add a client and a server whose own queues blur it, and the health
// check's wait for a worker is what a load balancer's probe sees, whatever carries it.
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

// Workers is a bounded pool of workers handed out first come first served, as a servlet
// container's thread pool takes requests from its queue.
type Workers struct {
	sem    *semaphore.Weighted
	busy   atomic.Int64
	queued atomic.Int64
}

// NewWorkers returns a pool of n workers; it panics for n < 1 (programmer misuse).
func NewWorkers(n int) *Workers {
	if n < 1 {
		panic("upstream: NewWorkers needs at least one worker")
	}
	return &Workers{sem: semaphore.NewWeighted(int64(n))}
}

// Do waits for a worker, runs f on it and frees it. It returns when the worker was had, as
// an instant, or ctx's error when ctx ended the wait first (f then never runs).
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

// Busy is how many workers run a job now.
func (w *Workers) Busy() int { return int(w.busy.Load()) }

// Queued is how many jobs wait for a worker now.
func (w *Workers) Queued() int { return int(w.queued.Load()) }

// Server is a loopback HTTP server in httptest's shape: it listens on 127.0.0.1:0, its URL
// is set, and Close cancels the requests in flight and waits for their handlers. It counts
// the connections it opened and closed.
type Server struct {
	URL string

	srv    *http.Server
	cancel context.CancelFunc // cancels every request's context
	done   chan struct{}
	opened atomic.Int64
	closed atomic.Int64
}

// shutdownGrace bounds Close's wait for handlers that ignore their cancelled context.
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
		// Clients that time out leave broken connections on purpose; net/http would report
		// each one on the process's stderr.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // http.ErrServerClosed after Close
	}()
	return s, nil
}

// Conns returns how many connections the server accepted and how many of them closed.
func (s *Server) Conns() (opened, closed int) {
	return int(s.opened.Load()), int(s.closed.Load())
}

// Close stops the listener, cancels every request's context and waits for the handlers to
// return (Shutdown's wait for the connections to become idle), at most shutdownGrace; then
// it closes every connection.
func (s *Server) Close() {
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	_ = s.srv.Close()
	<-s.done
}

// Downstream is a fake downstream on loopback: fakesrv's handler behind a gate that can
// pause and bounds how many requests are served at once. A request that arrives during a
// pause is held, with its connection, until the pause ends; then it waits for one of the
// downstream's Capacity slots and is served as its Behaviour asks.
type Downstream struct {
	*Server
	fake  *fakesrv.Server
	slots chan struct{} // nil: no bound

	mu    sync.Mutex // guards until, tail and seen
	until time.Time  // the end of the current pause
	tail  Tail
	seen  map[string]bool // the call tags that arrived once since SetTail

	inFlight atomic.Int64
	peak     atomic.Int64
	arrived  atomic.Int64
}

// Tail makes some calls slow: the first request of every Every-th call (by the number in its
// "call" query parameter: 0, Every, 2 x Every, ...) waits Slow more before it is served; a
// second request of the same call, a hedged copy, is served as usual, as another instance
// would. With Calls > 0, only the calls numbered below it are slow: a storm that the first
// calls run into, decided by their number rather than their arrival, so that a late call does
// not change sides. The zero value makes no call slow.
type Tail struct {
	Every int
	Slow  time.Duration
	Calls int
}

// NewDownstream starts a fake downstream that serves capacity requests at once (0: no
// bound).
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

// Fake is the fake server whose handler answers: its log and its reservations.
func (d *Downstream) Fake() *fakesrv.Server { return d.fake }

// PauseUntil makes the downstream answer nothing before t.
func (d *Downstream) PauseUntil(t time.Time) {
	d.mu.Lock()
	d.until = t
	d.mu.Unlock()
}

// SetTail sets the slow tail and forgets which calls arrived.
func (d *Downstream) SetTail(t Tail) {
	d.mu.Lock()
	d.tail, d.seen = t, map[string]bool{}
	d.mu.Unlock()
}

// Reached reports whether a request of the call tagged tag (its "call" query parameter)
// arrived since the last SetTail.
func (d *Downstream) Reached(tag string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen[tag]
}

// Peak is the most requests the downstream held at once since the last ResetCounts: held by
// a pause or a tail, waiting for a slot or being served.
func (d *Downstream) Peak() int { return int(d.peak.Load()) }

// Arrived counts the requests that arrived since the last ResetCounts, served or not.
func (d *Downstream) Arrived() int { return int(d.arrived.Load()) }

// ResetCounts starts a new peak from the requests held now, and a new count of arrivals.
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
	// A request leaves the count when its answer is complete, just before the flush that
	// sends its last byte: the client can read it and send its next request (on another
	// connection, when the pool closes this one) before this handler returns, and a count
	// kept until the return would see both at once.
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

// answered is the downstream's ResponseWriter: it calls done once, when the answer is about
// to be complete on the wire (the flush after its Content-Length's last byte, or after a head
// that has no body) or when the handler returns, whichever comes first.
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

// FlushError is what http.ResponseController calls first.
func (a *answered) FlushError() error {
	if a.complete() {
		a.finish()
	}
	return http.NewResponseController(a.ResponseWriter).Flush()
}

// Flush serves the callers that take an http.Flusher.
func (a *answered) Flush() { _ = a.FlushError() }

// Unwrap lets http.ResponseController reach the connection's deadlines and hijacking.
func (a *answered) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// complete reports whether the head is written and the body, as its Content-Length declares
// it, is written whole; an answer without a Content-Length completes when the handler returns.
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

// abort ends a request whose client left without an answer. Returning normally would let
// net/http send an empty 200 to a peer that closed, whose kernel answers with an RST, and the
// caller's socket would skip TIME_WAIT; http.ErrAbortHandler closes the connection with a FIN.
func abort() { panic(http.ErrAbortHandler) }

// Hedge makes a call with a hedged copy: do(ctx, 0) at once and, when it has not succeeded
// after delay, do(ctx, 1) beside it; the first success wins and the other copy's context is
// cancelled. It returns the winner's value, how many copies were sent, and the last error
// when both failed (or ctx's, when it ended first). Only an idempotent request may be hedged:
// both copies can reach the server.
func Hedge[T any](ctx context.Context, delay time.Duration, do func(ctx context.Context, copy int) (T, error)) (T, int, error) {
	type result struct {
		v   T
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the loser's
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
			if sent == 1 { // the first failed before the delay: the copy goes now
				timer.Reset(0)
			}
		case <-ctx.Done():
			return zero, sent, ctx.Err()
		}
	}
}
