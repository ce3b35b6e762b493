// Package labtest puts your own HTTP client under labrun's lab, inside `go test`: it starts
// labrun's fake server on loopback, runs one of labrun's scenarios (a trickle, a stall, a slow
// reservation a retry can charge twice, a pool queue, a connection closed after the request, a
// redirect loop) against your client, and returns a Row: the call's time and outcome, the
// server's executions and connections, and what labrun's model expects for the limits you
// declare (docs/labtest.md).
//
//	lab := labtest.Start(t)
//	row := lab.Run(ctx, myClient, labtest.Reserve(500*time.Millisecond), labtest.Limits{AttemptTimeout: 300 * time.Millisecond, Retries: 2})
//	if row.Executions != 1 {
//		t.Errorf("the server reserved %d times: %s", row.Executions, row)
//	}
//
// RunHedge and RunStorm do the same for a hedging client and a circuit breaker.
package labtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/labrun/labrun/results"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
)

// Doer is what labtest calls: *http.Client, and most retry libraries' clients (DoerFunc adapts
// the others).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// DoerFunc adapts a function to Doer.
type DoerFunc func(*http.Request) (*http.Response, error)

// Do calls f.
func (f DoerFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }

// Lab is a fake server for one test. Run resets its counters first, so a Lab serves one call
// (or one concurrent batch) at a time.
type Lab struct {
	srv *fakesrv.Server
	mu  sync.Mutex // serialises Run and RunConcurrent, whose counts rely on a reset server
}

// New starts a lab on loopback; Close stops it.
func New() (*Lab, error) {
	srv, err := fakesrv.New()
	if err != nil {
		return nil, fmt.Errorf("labtest: %w", err)
	}
	return &Lab{srv: srv}, nil
}

// Start starts a lab closed when the test ends; it fails the test if the server cannot start.
func Start(tb testing.TB) *Lab {
	tb.Helper()
	lab, err := New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(lab.Close)
	return lab
}

// URL is the fake server's base URL, for requests of your own; "" for a Lab not started.
func (l *Lab) URL() string {
	if l == nil || l.srv == nil {
		return ""
	}
	return l.srv.URL
}

// Close stops the server; calls still waiting on it end. A nil or unstarted Lab does nothing.
func (l *Lab) Close() {
	if l == nil || l.srv == nil {
		return
	}
	l.srv.Close()
}

// Row is what happened to one call, beside what the model expects.
type Row struct {
	Scenario string
	// Elapsed is the time from Do to the end of the body (or the error).
	Elapsed time.Duration
	// Outcome classifies the call's error (Classify).
	Outcome results.Outcome
	Err     error
	// Status is the last response's status, 0 for none.
	Status int
	// Executions counts the requests the server executed: reservations for Reserve, else every
	// request that reached a handler.
	Executions int
	// Requests counts every request the server received.
	Requests int
	// NewConnections counts the connections the server accepted.
	NewConnections int
	// Expected is the model's answer for the declared limits.
	Expected Expectation
}

// Expectation is the model's answer for a scenario and declared limits.
type Expectation struct {
	Outcome results.Outcome
	// Elapsed is when the call ends; Forever when no limit ever ends it.
	Elapsed    time.Duration
	Attempts   int
	Executions int
}

func (r Row) String() string {
	if errors.Is(r.Err, ErrInvalid) {
		return fmt.Sprintf("%s: not run: %v", r.Scenario, r.Err)
	}
	return fmt.Sprintf("%s: %s after %v, %d executions, %d new connections (model: %s after %v, %d executions)",
		r.Scenario, r.Outcome, r.Elapsed.Round(time.Millisecond), r.Executions, r.NewConnections,
		r.Expected.Outcome, r.Expected.Elapsed.Round(time.Millisecond), r.Expected.Executions)
}

// Run makes one call for s with c and returns its row; lim declares c's limits for the model.
// With a bad argument (ErrInvalid) it makes no call and the row's Err says why.
func (l *Lab) Run(ctx context.Context, c Doer, s Scenario, lim Limits) Row {
	if err := l.checkRun(ctx, c, s, lim); err != nil {
		return invalidRow(s, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.srv.Reset()
	row := l.call(ctx, c, s)
	l.count(&row, s)
	row.Expected = lim.expect(s)
	return row
}

// RunConcurrent makes n calls for s at once (a pool queue, when c's pool is smaller) and
// returns their rows in the order they ended, each beside the model's call that ends in that
// place. The counts are the batch's. n lies in 1..MaxConcurrent.
func (l *Lab) RunConcurrent(ctx context.Context, c Doer, s Scenario, n int, lim Limits) []Row {
	err := l.checkRun(ctx, c, s, lim)
	if err == nil && (n < 1 || n > MaxConcurrent) {
		err = invalid("RunConcurrent of %d calls, want 1 to %d", n, MaxConcurrent)
	}
	if err != nil {
		return []Row{invalidRow(s, err)}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.srv.Reset()
	rows := make([]Row, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			rows[i] = l.call(ctx, c, s)
		})
	}
	close(start)
	wg.Wait()
	slices.SortStableFunc(rows, func(a, b Row) int { return cmp.Compare(a.Elapsed, b.Elapsed) })
	preds := lim.expectConcurrent(s, n)
	for i := range rows {
		l.count(&rows[i], s)
		if i < len(preds) {
			rows[i].Expected = preds[i]
		}
	}
	return rows
}

func (l *Lab) call(ctx context.Context, c Doer, s Scenario) Row {
	row := Row{Scenario: s.Name}
	var body io.Reader
	if s.method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequestWithContext(ctx, s.method, l.srv.URL+s.path, body)
	if err != nil {
		row.Outcome, row.Err = results.Failed, err
		return row
	}
	start := time.Now()
	resp, err := c.Do(req)
	switch {
	case err == nil && resp == nil:
		err = errors.New("labtest: the client returned neither a response nor an error")
	case err == nil && resp.Body == nil:
		row.Status, err = resp.StatusCode, errors.New("labtest: the client returned a response with a nil Body")
	case err == nil:
		row.Status = resp.StatusCode
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}
	row.Elapsed = time.Since(start)
	row.Err = err
	row.Outcome = Classify(ctx, err)
	return row
}

// count fills the server's side of a row once the server has seen the requests end.
func (l *Lab) count(r *Row, s Scenario) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		busy := false
		for _, q := range l.srv.Requests() {
			busy = busy || q.Finished.IsZero()
		}
		if !busy {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	r.Requests = len(l.srv.Requests())
	r.Executions = r.Requests
	if s.reserves {
		r.Executions = l.srv.TotalReservations()
	}
	r.NewConnections = l.srv.ConnsAccepted()
}
