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

// net/http re-sends a request on a new connection inside one RoundTrip when a reused one fails
// before the head (transport.go, shouldRetryRequest); no library does, so an attempt stops it
// twice: a failing connection cancels the round trip first (connLost), and onGotConn refuses a
// second connection. Taking GetBody away instead would change the wire and miss GETs.

// attemptState follows one attempt through the Transport's hooks.
type attemptState struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	pool   *pool
	lease  *lease
	cfg    *Config
	method string
	route  int
	pin    string
	call   *resendState
	guards guards
	ttl    time.Duration

	mu        sync.Mutex // guards the fields below
	rtCancel  context.CancelCauseFunc
	rtConns   int
	discarded error
	replays   []time.Time // guards off
	conn      *conn
	pooled    bool
	reused    bool
	remote    string
	gotConn   time.Time
	check     time.Duration
	firstByte time.Time
	writes    int
	routes    int
	pinned    bool

	headFired atomic.Bool

	// lookingUp marks a lookup under rules.Connect.TimerLateInLookup; held is the cancellation
	// applied after it.
	lookingUp bool
	held      error
}

// guards are the two layers that stop net/http's replays; tests switch them off.
type guards struct {
	noConnHooks bool
	noRefusal   bool
}

type stateKey struct{}

// attempt makes one attempt, holding its lease until the body is read; a failure closes the
// connection.
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

const maxDiscards = 64

// roundTrip sends req on st's lease, again when the reuse check discarded the connection.
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

// request copies req onto the attempt's traced context, with the remaining budget in
// vocab.DeadlineHeader (Config.PropagateDeadline) and the body afresh.
func (c *Client) request(req *http.Request, st *attemptState) (*http.Request, error) {
	rctx, rcancel := context.WithCancelCause(st.ctx)
	st.mu.Lock()
	st.rtCancel, st.rtConns, st.discarded = rcancel, 0, nil
	st.mu.Unlock()
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

func (st *attemptState) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn:              st.onGotConn,
		WroteRequest:         st.onWroteRequest,
		GotFirstResponseByte: st.onFirstByte,
		PutIdleConn:          st.onPutIdle,
	}
}

// onGotConn records the attempt's connection; a replay or a condemned one gets no byte.
func (st *attemptState) onGotConn(info httptrace.GotConnInfo) {
	cn := asConn(info.Conn)
	now := time.Now()
	st.mu.Lock()
	st.rtConns++
	replay := st.rtConns > 1
	cancel := st.rtCancel
	if replay && !st.guards.noRefusal {
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
		return
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

// connLost cancels the round trip when cn fails before the head, so net/http does not replay.
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

// onWroteRequest arms the read timeout: like SO_TIMEOUT it never bounds the upload.
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

// onPutIdle disarms the read timeout before net/http's idle read, so a pooled connection lives.
func (st *attemptState) onPutIdle(err error) {
	if err != nil {
		return
	}
	st.mu.Lock()
	cn := st.conn
	st.pooled = true
	st.mu.Unlock()
	// Another call may take it before the lease is released.
	st.pool.putIdle(st.lease)
	if cn != nil && cn.disarm(st, time.Now(), st.ttl) {
		cn.Close()
	}
}

func (st *attemptState) end() {
	st.cancel(nil)
	st.pool.release(st.lease)
}

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
		// The health check's read counts in the lease, as in the libraries and the model.
		a.Lease, a.Wait = a.Lease+check, a.Wait-check
	}
}

// withReplays prepends a failed attempt for each net/http replay (guards off).
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

// fail classifies a failed attempt and closes its connection; st is nil without a lease.
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
		// Not yet connected: the JDK's ResponseTimerEvent.handle throws HttpConnectTimeoutException.
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
		cn.Close() // a pooled one may already serve another call
	}
	a.Outcome = out
	a.Err = &Error{Outcome: out, Phase: a.Phase, Attempt: a.n, Elapsed: a.End, Err: err}
	return a
}
