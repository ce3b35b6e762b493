package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// How an attempt keeps net/http from re-sending its request. The Transport sends a request
// again on a new connection, inside one RoundTrip and without telling anybody, when a reused
// connection fails before the response head and shouldRetryRequest allows it (transport.go:
// nothingWrittenError, errServerClosedIdle, transportReadFromServerError with isReplayable).
// None of the libraries labrun stands for does that, so an attempt stops it twice over:
//
//  1. Before net/http learns that the connection failed. Every failure reaches the Transport
//     through the connection: a failed Read or Write, or Close (conn.go). The connection tells
//     its attempt first, which cancels the round trip's context with the failure as cause
//     (connLost); Transport.roundTrip checks that context at the top of its retry loop and
//     returns the cause instead of retrying. A connection that failed while pooled and was
//     handed out before net/http noticed is caught when it is taken (health.dead).
//  2. Whatever the reason, a second connection within one round trip is a replay: onGotConn
//     sees it before pconn.roundTrip queues the request for writing, makes every write on it
//     fail before a byte reaches the socket, and cancels the round trip. This holds for any
//     retry path net/http has or will have, since each gets its connection through getConn,
//     which calls GotConn first (HTTP/1; labrun never speaks HTTP/2, which calls it itself).
//
// A pooled connection that the reuse check condemns (reuse.go) is refused the same way, and
// then the attempt sends its request again itself (roundTrip): nothing was written, so that
// costs no attempt. Rejected designs: taking GetBody away and wrapping the body, to make the
// request look non-replayable, changes the wire (a body of unknown length goes out chunked,
// where net/http sends Content-Length: 0 for an empty POST) and cannot cover a GET without a
// body, which net/http replays after nothingWrittenError whatever its method.

// attemptState follows one attempt through the Transport's hooks, which run on the
// Transport's goroutines.
type attemptState struct {
	ctx    context.Context         // the attempt's context, cancelled when the attempt ends
	cancel context.CancelCauseFunc // cancels ctx, with ErrReadTimeout when the read timeout fires
	pool   *pool
	lease  *lease        // the attempt's lease, released when the attempt ends
	cfg    *Config       // the client's configuration
	method string        // the request's method, for the reuse check
	route  int           // the resolved address to dial, with Config.RoutePerAttempt
	pin    string        // the address to dial instead, with rules.Resend.CurrentRoute
	call   *resendState  // the call's, for its resolved addresses (RoutePerAttempt); nil otherwise
	guards guards        // the client's guards (tests switch them off)
	ttl    time.Duration // Config.TimeToLive

	mu        sync.Mutex              // guards the fields below
	rtCancel  context.CancelCauseFunc // cancels the current round trip
	rtConns   int                     // connections the current round trip got
	discarded error                   // why the current round trip's connection was discarded
	replays   []time.Time             // net/http's replays let through (guards off): when
	conn      *conn                   // the connection the attempt got
	pooled    bool                    // the Transport put the connection back in its idle pool
	reused    bool
	remote    string // the address of the connection, to pin its route
	gotConn   time.Time
	check     time.Duration // the health check's read on the connection, after gotConn
	firstByte time.Time
	writes    int // requests written whole, over all round trips
	routes    int // how many addresses the host resolved to
	pinned    bool

	headFired atomic.Bool // Config.HeadTimeout fired before the response head

	// lookingUp is set while a lookup runs under rules.Connect.TimerLateInLookup, and held is the cancellation
	// that came meanwhile, applied when it returns; both guarded by mu.
	lookingUp bool
	held      error
}

// guards are the two layers that stop net/http's replays, both on in a Client; tests switch
// them off to show what each catches.
type guards struct {
	noConnHooks bool // layer 1: connection failures cancel the round trip
	noRefusal   bool // layer 2: a second connection in one round trip is refused
}

type stateKey struct{}

// attempt makes one attempt. Its lease is held until the body is read or the attempt failed;
// a failed attempt closes its connection so that a late response never reaches the next
// borrower. It returns the attempt, preceded by any that net/http re-sent by itself (only
// with the guards off).
func (c *Client) attempt(ctx context.Context, req *http.Request, callStart time.Time, n int, rs *resendState) ([]Attempt, *response) {
	start := time.Now()
	a := Attempt{Start: start.Sub(callStart), Phase: vocab.PhaseLease, n: n}
	l, err := c.pool.acquire(ctx, req.URL.Scheme+"://"+req.URL.Host)
	leased := time.Now()
	a.Lease = leased.Sub(start)
	if err != nil {
		return []Attempt{fail(ctx, a, nil, callStart, leased, err)}, nil
	}
	actx, cancel := context.WithCancelCause(ctx)
	st := &attemptState{ctx: actx, cancel: cancel, pool: c.pool, lease: l, cfg: &c.cfg, method: req.Method,
		guards: c.guards, ttl: c.cfg.TimeToLive}
	st.route, st.pin = rs.ok.Next()
	if c.cfg.Rules.Connect.Addresses == rules.RoutePerAttempt {
		st.call = rs
	}
	defer st.end()

	var head *time.Timer
	if c.cfg.HeadTimeout > 0 {
		// From the attempt's start, lease and connect included, to the response head.
		head = time.AfterFunc(c.cfg.HeadTimeout-time.Since(start), func() {
			st.headFired.Store(true)
			if !st.holdCancel(ErrReadTimeout) {
				st.cancel(ErrReadTimeout)
			}
		})
	}
	resp, err := c.roundTrip(req, st)
	if head != nil {
		head.Stop()
	}
	if err != nil {
		return st.withReplays(fail(ctx, a, st, callStart, leased, err), callStart), nil
	}
	a.Status = resp.StatusCode
	body, err := readBody(resp, c.cfg.MaxBody)
	if err != nil {
		return st.withReplays(fail(ctx, a, st, callStart, leased, err), callStart), nil
	}
	end := time.Now()
	st.phases(&a, leased, end)
	a.End, a.Outcome, a.Phase = end.Sub(callStart), vocab.OK, vocab.PhaseBody
	return st.withReplays(a, callStart), &response{status: resp.StatusCode, header: resp.Header, body: body}
}

// maxDiscards bounds the pooled connections one attempt discards before it gives up; each
// discard closes one, so the bound is a safety net only.
const maxDiscards = 64

// roundTrip sends req on st's lease. When the reuse check discards the pooled connection the
// Transport chose, nothing was written: the request goes again, on the next pooled connection
// or a new one.
func (c *Client) roundTrip(req *http.Request, st *attemptState) (*http.Response, error) {
	for i := 0; ; i++ {
		areq, err := c.request(req, st)
		if err != nil {
			return nil, err
		}
		resp, err := c.transport.RoundTrip(areq)
		why := st.takeDiscarded()
		if err == nil || why == nil {
			return resp, err
		}
		switch {
		case !replayable(req):
			return nil, fmt.Errorf("%w, and the request body cannot be sent again: %w", why, err)
		case i+1 >= maxDiscards || st.ctx.Err() != nil:
			return nil, fmt.Errorf("%w: %w", why, err)
		}
	}
}

// request returns what the round trip sends for req: a copy on a new context of the attempt,
// traced by st, with the remaining budget in vocab.DeadlineHeader (Config.PropagateDeadline)
// and the body afresh.
func (c *Client) request(req *http.Request, st *attemptState) (*http.Request, error) {
	rctx, rcancel := context.WithCancelCause(st.ctx)
	st.mu.Lock()
	st.rtCancel, st.rtConns, st.discarded = rcancel, 0, nil
	st.mu.Unlock()
	// A shallow copy is enough: only the context, the body and the headers of the copy change.
	areq := req.WithContext(httptrace.WithClientTrace(context.WithValue(rctx, stateKey{}, st), st.trace()))
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
			return nil, ownError{fmt.Errorf("replay request body: %w", err)}
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

// onGotConn records the connection the attempt got and makes the attempt its owner, unless it
// is a replay or the reuse check condemns it: then nothing may be written on it.
func (st *attemptState) onGotConn(info httptrace.GotConnInfo) {
	cn := asConn(info.Conn)
	now := time.Now()
	st.mu.Lock()
	st.rtConns++
	replay := st.rtConns > 1
	cancel := st.rtCancel
	if replay && !st.guards.noRefusal {
		// The attempt keeps its own connection in its record; this one never carries it.
		st.mu.Unlock()
		if cn != nil {
			cn.discard(errReplaySuppressed)
			cn.Close()
		}
		cancel(errReplaySuppressed)
		return
	}
	if replay {
		st.replays = append(st.replays, now)
	}
	st.conn, st.reused, st.gotConn, st.remote = cn, info.Reused, now, remoteIP(info.Conn)
	st.mu.Unlock()
	st.pool.bind(st.lease, cn)
	if cn == nil {
		return // not labrun's connection: no hooks to act on
	}
	if st.cfg.checkReads(cn.peek(now), st.method) {
		cn.healthRead(HealthRead)
		checked := time.Now()
		st.mu.Lock()
		st.check = checked.Sub(now)
		st.mu.Unlock()
		now = checked
	}
	why := st.cfg.condemn(cn.take(st, now), st.method)
	if why == nil {
		return
	}
	cn.discard(why)
	st.mu.Lock()
	st.conn, st.discarded = nil, why
	st.mu.Unlock()
	cancel(why)
	cn.Close()
}

// connLost cancels the round trip when cn, the attempt's connection, fails before the response
// head, so that the Transport returns the failure instead of replaying the request.
func (st *attemptState) connLost(cn *conn, err error) {
	if st.guards.noConnHooks {
		return
	}
	st.mu.Lock()
	mine := st.conn == cn && st.firstByte.IsZero()
	cancel := st.rtCancel
	st.mu.Unlock()
	if mine && cancel != nil {
		cancel(&lostError{err})
	}
}

// onWroteRequest starts the read timeout once the request is written: like SO_TIMEOUT, it
// bounds reads, never the upload of a request body.
func (st *attemptState) onWroteRequest(info httptrace.WroteRequestInfo) {
	if info.Err == nil {
		st.mu.Lock()
		st.writes++
		st.mu.Unlock()
	}
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
	if cn != nil && cn.disarm(st, time.Now(), st.ttl) {
		cn.Close() // too old to be reused; the Transport drops it from its pool
	}
}

// end stops the attempt's dials and closes the books of its lease.
func (st *attemptState) end() {
	st.cancel(nil)
	st.pool.release(st.lease)
}

// takeDiscarded returns why the round trip's connection was discarded, nil if it was not.
func (st *attemptState) takeDiscarded() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	why := st.discarded
	st.discarded = nil
	return why
}

func (st *attemptState) setRoutes(n int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.routes = n
}

func (st *attemptState) setPinned() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pinned = true
}

func (st *attemptState) connection() *conn {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.conn
}

// remoteIP is the IP address c is connected to, "" if it has none.
func remoteIP(c net.Conn) string {
	if c == nil || c.RemoteAddr() == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return ""
	}
	return host
}

// phases fills the connect, wait and body times of a from the hooks' timestamps, and what
// the attempt's connection was.
func (st *attemptState) phases(a *Attempt, leased, end time.Time) {
	st.mu.Lock()
	gotConn, check, firstByte, reused := st.gotConn, st.check, st.firstByte, st.reused
	a.Written, a.routes, a.remote, a.pinned = st.writes > 0, st.routes, st.remote, st.pinned
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
	if check > 0 && !gotConn.IsZero() {
		// The health check's read belongs to getting the connection, as in HttpClient 5's
		// lease and OkHttp's findHealthyConnection, and in the model: the lease, not the wait.
		a.Lease, a.Wait = a.Lease+check, a.Wait-check
	}
}

// withReplays returns a, preceded by one failed attempt for every time net/http re-sent the
// request on another connection within it. With the guards on there are none; the guards off
// (in tests) show what net/http would do, never silently.
func (st *attemptState) withReplays(a Attempt, callStart time.Time) []Attempt {
	st.mu.Lock()
	replays, writes := st.replays, st.writes
	st.mu.Unlock()
	if len(replays) == 0 {
		return []Attempt{a}
	}
	out := make([]Attempt, 0, len(replays)+1)
	from := a.Start
	for i, at := range replays {
		end := at.Sub(callStart)
		x := Attempt{Start: from, End: end, Outcome: vocab.Failed, Phase: vocab.PhaseWait, Wait: end - from,
			Written: writes > i, n: a.n + i}
		x.Err = &Error{Outcome: vocab.Failed, Phase: vocab.PhaseWait, Attempt: x.n, Elapsed: end, Err: errResent}
		out = append(out, x)
		from = end
	}
	a.n += len(replays)
	a.Start, a.Lease, a.Connect = from, 0, a.End-from-a.Wait-a.Body
	if e, ok := a.Err.(*Error); ok {
		e.Attempt = a.n
	}
	return append(out, a)
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
	case st != nil && st.headFired.Load() && ctx.Err() == nil && st.cfg.Rules.Read.FromAttemptStart && a.Phase == vocab.PhaseConnect:
		// Not yet connected: ResponseTimerEvent.handle throws HttpConnectTimeoutException.
		out, err = vocab.ConnectTimeout, ErrConnectTimeout
	case st != nil && st.headFired.Load() && ctx.Err() == nil:
		out, err = vocab.ReadTimeout, ErrReadTimeout
	case ctx.Err() != nil:
		out, err = ctxOutcome(ctx)
	case errors.Is(err, ErrConnectTimeout):
		out = vocab.ConnectTimeout
	case errors.Is(err, ErrHandshakeTimeout):
		out = vocab.ReadTimeout
	case vocab.PreFirst(err) != "":
		out = vocab.PreFirst(err)
	}
	if cn != nil && !pooled {
		cn.Close() // a pooled connection may already serve another call
	}
	a.Outcome = out
	a.Err = &Error{Outcome: out, Phase: a.Phase, Attempt: a.n, Elapsed: a.End, Err: err}
	return a
}
