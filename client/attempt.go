package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"time"

	"github.com/labrun/labrun/vocab"
)

// attemptState follows one attempt through the Transport's hooks, which run on the
// Transport's goroutines.
type attemptState struct {
	ctx    context.Context         // the attempt's context, cancelled when the attempt ends
	cancel context.CancelCauseFunc // cancels ctx, with ErrReadTimeout when the read timeout fires
	pool   *pool
	lease  *lease        // the attempt's lease, released when the attempt ends
	ttl    time.Duration // Config.TimeToLive
	route  int           // the resolved address to dial, with Config.RetryOnConnectionFailure

	mu        sync.Mutex // guards the fields below
	conn      *conn      // the connection the attempt got
	pooled    bool       // the Transport put the connection back in its idle pool
	reused    bool
	gotConn   time.Time
	firstByte time.Time
	routes    int // how many addresses the host resolved to
}

type stateKey struct{}

// attempt makes one attempt. Its lease is held until the body is read or the attempt failed;
// a failed attempt closes its connection so that a late response never reaches the next
// borrower.
func (c *Client) attempt(ctx context.Context, req *http.Request, callStart time.Time, n, route int) (Attempt, *response) {
	start := time.Now()
	a := Attempt{Start: start.Sub(callStart), Phase: vocab.PhaseLease, n: n}
	l, err := c.pool.acquire(ctx, req.URL.Scheme+"://"+req.URL.Host)
	leased := time.Now()
	a.Lease = leased.Sub(start)
	if err != nil {
		return fail(ctx, a, nil, callStart, leased, err), nil
	}
	actx, cancel := context.WithCancelCause(ctx)
	st := &attemptState{ctx: actx, cancel: cancel, pool: c.pool, lease: l, ttl: c.cfg.TimeToLive, route: route}
	defer st.end()

	areq, err := c.request(req, st)
	if err != nil {
		return fail(ctx, a, st, callStart, leased, err), nil
	}
	resp, err := c.transport.RoundTrip(areq)
	if err != nil {
		return fail(ctx, a, st, callStart, leased, err), nil
	}
	a.Status = resp.StatusCode
	body, err := readBody(resp, c.cfg.MaxBody)
	if err != nil {
		return fail(ctx, a, st, callStart, leased, err), nil
	}
	end := time.Now()
	st.phases(&a, leased, end)
	a.End, a.Outcome, a.Phase, a.routes = end.Sub(callStart), vocab.OK, vocab.PhaseBody, st.routeCount()
	return a, &response{status: resp.StatusCode, header: resp.Header, body: body}
}

// request returns what the attempt sends for req: a copy on the attempt's context, traced by
// st, with the remaining budget in vocab.DeadlineHeader (Config.PropagateDeadline) and the
// body afresh.
func (c *Client) request(req *http.Request, st *attemptState) (*http.Request, error) {
	// A shallow copy is enough: only the context, the body and the headers of the copy change.
	areq := req.WithContext(httptrace.WithClientTrace(context.WithValue(st.ctx, stateKey{}, st), st.trace()))
	if dl, ok := st.ctx.Deadline(); ok && c.cfg.PropagateDeadline {
		areq.Header = req.Header.Clone()
		if areq.Header == nil {
			areq.Header = http.Header{}
		}
		areq.Header.Set(vocab.DeadlineHeader, strconv.FormatInt(max(0, time.Until(dl).Milliseconds()), 10))
	}
	if req.Body != nil && req.GetBody != nil {
		var err error
		if areq.Body, err = req.GetBody(); err != nil {
			return nil, fmt.Errorf("replay request body: %w", err)
		}
	}
	return areq, nil
}

// trace returns the Transport hooks that follow the attempt.
func (st *attemptState) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn:              st.onGotConn,
		WroteRequest:         st.onWroteRequest,
		GotFirstResponseByte: st.onFirstByte,
		PutIdleConn:          st.onPutIdle,
	}
}

// onGotConn records the connection the attempt got and makes the attempt its owner.
func (st *attemptState) onGotConn(info httptrace.GotConnInfo) {
	cn := asConn(info.Conn)
	st.mu.Lock()
	st.conn, st.reused, st.gotConn = cn, info.Reused, time.Now()
	st.mu.Unlock()
	st.pool.bind(st.lease, cn)
	if cn != nil {
		cn.take(st)
	}
}

// onWroteRequest starts the read timeout once the request is written: like SO_TIMEOUT, it
// bounds reads, never the upload of a request body.
func (st *attemptState) onWroteRequest(httptrace.WroteRequestInfo) {
	if cn := st.connection(); cn != nil {
		cn.arm(st, time.Now())
	}
}

func (st *attemptState) onFirstByte() {
	now := time.Now()
	st.mu.Lock()
	st.firstByte = now
	st.mu.Unlock()
}

// onPutIdle runs on the connection's read loop before it issues the background read it keeps
// pending while idle: disarming here keeps that read free of a deadline, so an idle pooled
// connection survives, and the next call arms it afresh with its full budget. The Transport
// may already have handed the connection to another call, so the disarm applies only while
// this attempt still owns it.
func (st *attemptState) onPutIdle(err error) {
	if err != nil {
		return
	}
	st.mu.Lock()
	cn := st.conn
	st.pooled = true
	st.mu.Unlock()
	// The connection is back in the pool, and another call may take it before this attempt
	// releases its lease: count it as returned now.
	st.pool.putIdle(st.lease)
	if cn != nil && cn.disarm(st) {
		if st.ttl > 0 && time.Since(cn.born) > st.ttl {
			cn.Close() // too old to be reused; the Transport drops it from its pool
		}
	}
}

// end stops the attempt's dials and closes the books of its lease.
func (st *attemptState) end() {
	st.cancel(nil)
	st.pool.release(st.lease)
}

func (st *attemptState) setRoutes(n int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.routes = n
}

func (st *attemptState) routeCount() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.routes
}

func (st *attemptState) connection() *conn {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.conn
}

// phases fills the connect, wait and body times of a from the hooks' timestamps.
func (st *attemptState) phases(a *Attempt, leased, end time.Time) {
	st.mu.Lock()
	gotConn, firstByte, reused := st.gotConn, st.firstByte, st.reused
	st.mu.Unlock()
	a.NewConnection = !gotConn.IsZero() && !reused
	switch {
	case gotConn.IsZero():
		a.Connect, a.Phase = end.Sub(leased), vocab.PhaseConnect
	case firstByte.IsZero():
		a.Connect, a.Wait, a.Phase = gotConn.Sub(leased), end.Sub(gotConn), vocab.PhaseWait
	default:
		a.Connect, a.Wait, a.Body, a.Phase = gotConn.Sub(leased), firstByte.Sub(gotConn), end.Sub(firstByte), vocab.PhaseBody
	}
}

// fail classifies a failed attempt and closes its connection; st is nil when the attempt got
// no lease.
func fail(ctx context.Context, a Attempt, st *attemptState, callStart, leased time.Time, err error) Attempt {
	end := time.Now()
	a.End = end.Sub(callStart)
	var cn *conn
	pooled := false
	if st != nil {
		st.phases(&a, leased, end)
		a.routes = st.routeCount()
		st.mu.Lock()
		cn, pooled = st.conn, st.pooled
		st.mu.Unlock()
	}
	out := vocab.Failed
	switch {
	case errors.Is(err, errLeaseTimeout):
		out, err = vocab.LeaseTimeout, ErrLeaseTimeout
	case cn != nil && cn.timedOut(ctx):
		out = vocab.ReadTimeout
	case ctx.Err() != nil:
		out, err = ctxOutcome(ctx)
	case errors.Is(err, ErrConnectTimeout):
		out = vocab.ConnectTimeout
	}
	if cn != nil && !pooled {
		cn.Close() // a pooled connection may already serve another call
	}
	a.Outcome = out
	a.Err = &Error{Outcome: out, Phase: a.Phase, Attempt: a.n, Elapsed: a.End, Err: err}
	return a
}
