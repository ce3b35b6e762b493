// Package client is an HTTP client with Apache HttpClient 5's timing semantics, built on
// net/http's Transport. It adds only what net/http lacks:
//
//   - a lease: a call waits for one of its route's connections, bounded by a lease timeout;
//   - a read timeout that is an idle timeout per blocking read (SO_TIMEOUT), not a deadline;
//   - a connection that timed out is closed, never returned to the pool;
//   - exact pool statistics (leased, pending, available, max);
//   - classified failures and per-attempt phase timings, with business retries under one
//     deadline.
//
// Connect timeouts come from net.Dialer and the deadline from the call's context, as in plain
// net/http. Redirects are not followed: a call is one request.
package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labrun/labrun/vocab"
	"golang.org/x/sync/semaphore"
)

// Client makes calls with the limits of its Config. It is safe for concurrent use.
type Client struct {
	cfg       Config
	transport *http.Transport
	total     *semaphore.Weighted // nil when MaxTotal is not set

	mu      sync.Mutex // guards routes, conns, leased, pending, unbound, returned, and attemptState.bound and .returned
	routes  map[string]*semaphore.Weighted
	conns   map[*conn]struct{} // open connections
	leased  int
	pending int
	unbound int // leases whose attempt has not got its connection yet
	// returned counts leases whose connection is back in the pool while the attempt has not
	// released the lease yet: in HttpClient 5's terms they are no longer leased.
	returned int
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	c := &Client{cfg: cfg, routes: map[string]*semaphore.Weighted{}, conns: map[*conn]struct{}{}}
	if cfg.MaxTotal > 0 {
		c.total = semaphore.NewWeighted(int64(cfg.MaxTotal))
	}
	// The lease bounds the connections in use, so the Transport's own pool only has to keep
	// every connection the lease allows: idle ones beyond its per-host cap (default 2) would
	// be closed and redialled.
	idlePerHost := cfg.MaxPerRoute
	if idlePerHost == 0 {
		idlePerHost = cfg.MaxTotal
	}
	if idlePerHost == 0 {
		idlePerHost = 1 << 16
	}
	c.transport = &http.Transport{
		Proxy:                 nil, // a lab measures the route it names, never a proxy
		DialContext:           c.dial,
		MaxIdleConns:          cfg.MaxTotal,
		MaxIdleConnsPerHost:   idlePerHost,
		IdleConnTimeout:       cfg.IdleTimeout,
		TLSClientConfig:       cfg.TLS,
		TLSHandshakeTimeout:   cfg.ConnectTimeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 0, // the per-read timeout covers the head
	}
	return c, nil
}

// Config returns the client's configuration.
func (c *Client) Config() Config { return c.cfg }

// Close closes the idle pooled connections. Calls in flight are not interrupted.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// Stats is a snapshot of the pool in HttpClient 5's terms.
type Stats struct {
	// Leased counts the connections leased to calls now.
	Leased int
	// Pending counts the calls waiting for a lease.
	Pending int
	// Available counts the idle pooled connections a call could reuse.
	Available int
	// Max is the total connection limit (0: unlimited).
	Max int
}

// Stats returns the pool statistics at this moment.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{Leased: c.leased - c.returned, Pending: c.pending, Max: c.cfg.MaxTotal}
	for cn := range c.conns {
		if cn.user == nil && !cn.claimed {
			s.Available++
		}
	}
	// In HttpClient 5 a lease is a connection. Here a lease comes first and the Transport
	// then hands over an idle connection if it has one, so an idle connection that a leased
	// attempt is about to take is not available any more.
	s.Available = max(0, s.Available-c.unbound)
	return s
}

// Attempt is what happened in one attempt of a call.
type Attempt struct {
	// Start and End are offsets from the start of the call.
	Start, End time.Duration
	Outcome    vocab.Outcome
	// Phase is where the attempt ended (PhaseBody for a success).
	Phase vocab.Phase
	// Lease, Connect, Wait and Body are the time spent in each phase: waiting for a lease,
	// getting a connection (dialling it when it is new), writing the request and waiting for
	// the first response byte, reading the body. They add up to End - Start.
	Lease, Connect, Wait, Body time.Duration
	// NewConnection is true when the attempt dialled its connection.
	NewConnection bool
	// Status is the response status, 0 when no head arrived.
	Status int
	// Err is the attempt's error, nil on success.
	Err error

	n      int // 1-based number of the attempt
	routes int // how many addresses the host resolved to (0 when it did not dial)
}

// Result is a finished call.
type Result struct {
	Outcome vocab.Outcome
	// Elapsed is the time from the start of the call to its end.
	Elapsed  time.Duration
	Attempts []Attempt
	// Status, Header and Body are the last attempt's response, when it succeeded.
	Status int
	Header http.Header
	Body   []byte
}

// Do makes the call: up to 1+Retries attempts under one deadline, each reading the whole
// response body. The Result is never nil and carries the timings even when the call fails;
// the error is then an *Error, which matches ErrLeaseTimeout, ErrConnectTimeout,
// ErrReadTimeout or ErrDeadline with errors.Is. A non-2xx status is not an error.
//
// A request with a body is repeated only if it has GetBody (http.NewRequest sets it). When ctx
// is cancelled the call ends at once with outcome Failed, its connection closed.
func (c *Client) Do(ctx context.Context, req *http.Request) (*Result, error) {
	start := time.Now()
	if c.cfg.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.cfg.Deadline, ErrDeadline)
		defer cancel()
	}
	res := &Result{}
	cur := req // the current exchange's request; a follow-up replaces it
	retries, followUps, route, prior := 0, 0, 0, 0
	for n := 1; ; n++ {
		a, resp := c.attempt(ctx, cur, start, n, route)
		res.Attempts = append(res.Attempts, a)
		res.Outcome, res.Elapsed = a.Outcome, a.End
		if a.Outcome == vocab.OK {
			res.Status, res.Header, res.Body = resp.status, resp.header, resp.body
			next := c.followUp(cur, resp, prior)
			if next == nil {
				return res, nil
			}
			if followUps++; followUps > MaxFollowUps {
				err := &Error{Outcome: vocab.Failed, Phase: vocab.PhaseBody, Attempt: n, Elapsed: a.End,
					Err: fmt.Errorf("too many follow-up requests: %d", followUps)}
				res.Outcome, res.Attempts[len(res.Attempts)-1].Err = vocab.Failed, err
				return res, err
			}
			cur, prior, route = next, resp.status, 0
			continue
		}
		if a.Outcome == vocab.Deadline || ctx.Err() != nil {
			return res, a.Err
		}
		replayable := cur.Body == nil || cur.GetBody != nil
		// OkHttp's connection recovery: a connect that failed on one route goes on at once
		// with the next, without counting as a retry of the business code.
		if c.cfg.RoutePerAttempt && c.cfg.RetryOnConnectionFailure && a.Phase == vocab.PhaseConnect && route+1 < a.routes && replayable {
			route++
			continue
		}
		if retries >= c.cfg.Retries || !replayable {
			return res, a.Err
		}
		retries, route = retries+1, 0
		if e := pause(ctx, c.cfg.Backoff, start, n); e != nil {
			res.Outcome, res.Elapsed = e.Outcome, e.Elapsed
			return res, e
		}
	}
}

// MaxFollowUps is OkHttp's limit on follow-up requests in one call (Config.FollowUps): the
// 21st fails the call with "too many follow-up requests: 21".
const MaxFollowUps = 20

// followUp returns the request OkHttp's rules send after resp, or nil (Config.FollowUps):
// redirects are followed; a 408 is repeated once, even a non-idempotent request, unless
// recovery is off, the body cannot be sent again, the previous response was a 408 too, or
// Retry-After asks for a delay; a 503 is repeated once, only on Retry-After: 0; a 401 or 407
// is returned (the default authenticator gives up).
func (c *Client) followUp(req *http.Request, resp *response, prior int) *http.Request {
	if !c.cfg.FollowUps {
		return nil
	}
	retryAfter := resp.header.Get("Retry-After")
	switch resp.status {
	case 300, 301, 302, 303, 307, 308:
		loc := resp.header.Get("Location")
		if loc == "" {
			return nil
		}
		u, err := req.URL.Parse(loc)
		if err != nil {
			return nil
		}
		method, body := req.Method, req.GetBody
		if method != http.MethodGet && method != http.MethodHead && resp.status != 307 && resp.status != 308 {
			method, body = http.MethodGet, nil
		}
		next, err := http.NewRequestWithContext(req.Context(), method, u.String(), nil)
		if err != nil {
			return nil
		}
		next.Header = req.Header.Clone()
		if body != nil {
			next.GetBody = body
			next.Body, _ = body()
		}
		return next
	case 408:
		if !c.cfg.RetryOnConnectionFailure || prior == 408 || (req.Body != nil && req.GetBody == nil) {
			return nil
		}
		if retryAfter != "" && retryAfterSeconds(retryAfter) > 0 {
			return nil
		}
		return req
	case 503:
		if prior == 503 || retryAfter == "" || retryAfterSeconds(retryAfter) != 0 {
			return nil
		}
		return req
	}
	return nil
}

// retryAfterSeconds reads Retry-After as OkHttp does: digits only; anything else (an HTTP
// date, "-1", "+0") counts as a long delay.
func retryAfterSeconds(v string) int {
	const long = int(^uint(0) >> 1)
	for _, r := range v {
		if r < '0' || r > '9' {
			return long
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return long
	}
	return n
}

// ctxOutcome classifies a done call context: the configured deadline, or the caller's own
// cancellation or deadline (Failed).
func (c *Client) ctxOutcome(ctx context.Context) (vocab.Outcome, error) {
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrDeadline) {
		return vocab.Deadline, cause
	}
	return vocab.Failed, cause
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// attemptState follows one attempt through the Transport's hooks, which run on the
// Transport's goroutines.
type attemptState struct {
	ctx    context.Context         // the attempt's context, cancelled when the attempt ends
	cancel context.CancelCauseFunc // cancels ctx, with ErrReadTimeout when the read timeout fires

	mu        sync.Mutex // guards the fields below
	conn      *conn      // the connection the attempt got
	dialed    []*conn    // connections dialled for it (another call may have taken them)
	done      bool       // the attempt ended: a dial finishing now is nobody's
	pooled    bool       // the Transport put the connection back in its idle pool
	reused    bool
	gotConn   time.Time
	firstByte time.Time
	route     int // the resolved address to dial, with Config.RetryOnConnectionFailure
	routes    int // how many addresses the host resolved to

	bound    bool // the attempt got its connection or ended; guarded by Client.mu
	returned bool // the attempt's connection went back to the pool; guarded by Client.mu
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

type stateKey struct{}

// attempt makes one attempt. Its lease is held until the body is read or the attempt failed;
// a failed attempt closes its connection so that a late response never reaches the next
// borrower.
func (c *Client) attempt(ctx context.Context, req *http.Request, callStart time.Time, n, route int) (Attempt, *response) {
	start := time.Now()
	a := Attempt{Start: start.Sub(callStart), Phase: vocab.PhaseLease, n: n}
	sem, err := c.lease(ctx, req.URL.Scheme+"://"+req.URL.Host)
	leased := time.Now()
	a.Lease = leased.Sub(start)
	if err != nil {
		return c.fail(a, ctx, callStart, leased, err, nil), nil
	}
	actx, cancel := context.WithCancelCause(ctx)
	st := &attemptState{ctx: actx, cancel: cancel, route: route}
	defer c.end(st, sem)

	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			cn := asConn(info.Conn)
			st.mu.Lock()
			st.conn, st.reused, st.gotConn = cn, info.Reused, time.Now()
			st.mu.Unlock()
			c.mu.Lock()
			if !st.bound {
				st.bound = true
				c.unbound--
			}
			if cn != nil {
				cn.user, cn.claimed = st, false
			}
			c.mu.Unlock()
			if cn != nil {
				cn.take(st)
			}
		},
		// The read timeout starts once the request is written: like SO_TIMEOUT, it bounds
		// reads, never the upload of a request body.
		WroteRequest: func(httptrace.WroteRequestInfo) {
			if cn := st.connection(); cn != nil {
				cn.arm(st, time.Now())
			}
		},
		GotFirstResponseByte: func() {
			now := time.Now()
			st.mu.Lock()
			st.firstByte = now
			st.mu.Unlock()
		},
		// PutIdleConn runs on the connection's read loop before it issues the background read
		// it keeps pending while idle: disarming here keeps that read free of a deadline, so
		// an idle pooled connection survives, and the next call arms it afresh with its full
		// budget. The Transport may already have handed the connection to another call, so
		// the disarm applies only while this attempt still owns it.
		PutIdleConn: func(err error) {
			if err != nil {
				return
			}
			st.mu.Lock()
			cn := st.conn
			st.pooled = true
			st.mu.Unlock()
			// The connection is back in the pool, and another call may take it before this
			// attempt releases its lease: count it as returned now.
			c.mu.Lock()
			if !st.returned {
				st.returned = true
				c.returned++
			}
			if cn != nil && cn.user == st {
				cn.user = nil
			}
			c.mu.Unlock()
			if cn != nil && cn.disarm(st) {
				if ttl := c.cfg.TimeToLive; ttl > 0 && time.Since(cn.born) > ttl {
					cn.Close() // too old to be reused; the Transport drops it from its pool
				}
			}
		},
	}
	// A shallow copy is enough: only the context, the body and the headers of the copy change.
	areq := req.WithContext(httptrace.WithClientTrace(context.WithValue(actx, stateKey{}, st), trace))
	if dl, ok := ctx.Deadline(); ok && c.cfg.PropagateDeadline {
		areq.Header = req.Header.Clone()
		if areq.Header == nil {
			areq.Header = http.Header{}
		}
		areq.Header.Set(vocab.DeadlineHeader, strconv.FormatInt(max(0, time.Until(dl).Milliseconds()), 10))
	}
	if req.Body != nil && req.GetBody != nil {
		if areq.Body, err = req.GetBody(); err != nil {
			return c.fail(a, ctx, callStart, leased, fmt.Errorf("replay request body: %w", err), st), nil
		}
	}
	resp, err := c.transport.RoundTrip(areq)
	if err != nil {
		return c.fail(a, ctx, callStart, leased, err, st), nil
	}
	a.Status = resp.StatusCode
	body, err := readBody(resp, c.cfg.MaxBody)
	if err != nil {
		return c.fail(a, ctx, callStart, leased, err, st), nil
	}
	end := time.Now()
	c.phases(&a, st, leased, end)
	a.End, a.Outcome, a.Phase, a.routes = end.Sub(callStart), vocab.OK, vocab.PhaseBody, st.routeCount()
	return a, &response{status: resp.StatusCode, header: resp.Header, body: body}
}

// end closes the books of an attempt that held a lease: it stops the attempt's dials, frees
// its connections for the statistics and gives the lease back, the last two in one step
// (as HttpClient 5 releases a connection), so that leased + available never exceeds max.
func (c *Client) end(st *attemptState, sem *semaphore.Weighted) {
	st.cancel(nil)
	st.mu.Lock()
	st.done = true
	cn, dialed := st.conn, st.dialed
	st.mu.Unlock()
	c.mu.Lock()
	for _, d := range dialed {
		d.claimed = false // pooled for the next call, unless someone uses it already
	}
	if cn != nil && cn.user == st {
		cn.user = nil
	}
	if !st.bound {
		st.bound = true
		c.unbound--
	}
	if st.returned {
		c.returned--
	}
	c.leased--
	c.mu.Unlock()
	if c.total != nil {
		c.total.Release(1)
	}
	if sem != nil {
		sem.Release(1)
	}
}

// asConn finds labrun's connection under c (a *tls.Conn wraps it for https).
func asConn(c net.Conn) *conn {
	for c != nil {
		if cn, ok := c.(*conn); ok {
			return cn
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = u.NetConn()
	}
	return nil
}

// readBody reads and closes resp's body, refusing one larger than max bytes.
func readBody(resp *http.Response, max int64) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > max {
		return nil, fmt.Errorf("response body of %d bytes is larger than %d", resp.ContentLength, max)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err == nil && int64(len(body)) > max {
		err = fmt.Errorf("response body larger than %d bytes", max)
	}
	return body, err
}

// pause waits d before a retry, or less when ctx is done first; it then returns the backoff's
// failure as an *Error of attempt n: the configured deadline, or the caller's cancellation.
func pause(ctx context.Context, d time.Duration, start time.Time, n int) *Error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		out, cause := vocab.Deadline, context.Cause(ctx)
		if !errors.Is(cause, ErrDeadline) {
			out = vocab.Failed
		}
		return &Error{Outcome: out, Phase: vocab.PhaseBackoff, Attempt: n, Elapsed: time.Since(start), Err: cause}
	}
}

// phases fills the connect, wait and body times of a from the hooks' timestamps.
func (c *Client) phases(a *Attempt, st *attemptState, leased, end time.Time) {
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

// fail classifies a failed attempt and closes its connection.
func (c *Client) fail(a Attempt, ctx context.Context, callStart, leased time.Time, err error, st *attemptState) Attempt {
	end := time.Now()
	a.End = end.Sub(callStart)
	var cn *conn
	pooled := false
	if st != nil {
		c.phases(&a, st, leased, end)
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
		out, err = c.ctxOutcome(ctx)
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

var errLeaseTimeout = errors.New("lease timeout")

// lease waits for a connection slot of the route (and of the whole pool), bounded by the
// lease timeout and the call's context. It returns the route's semaphore (nil when the route
// has no limit) for end to release.
func (c *Client) lease(ctx context.Context, route string) (*semaphore.Weighted, error) {
	c.mu.Lock()
	sem := c.routes[route]
	if sem == nil && c.cfg.MaxPerRoute > 0 {
		sem = semaphore.NewWeighted(int64(c.cfg.MaxPerRoute))
		c.routes[route] = sem
	}
	c.pending++
	c.mu.Unlock()

	// Fast path: a free slot needs no timer. TryAcquire fails while others wait, so the
	// queue stays first come, first served.
	var err error
	var until time.Time // the lease timeout, one budget for both waits
	if c.cfg.LeaseTimeout > 0 {
		until = time.Now().Add(c.cfg.LeaseTimeout)
	}
	if !tryAcquire(sem) {
		err = wait(ctx, sem, until)
	}
	if err == nil && !tryAcquire(c.total) {
		if err = wait(ctx, c.total, until); err != nil && sem != nil {
			sem.Release(1)
		}
	}
	c.mu.Lock()
	c.pending--
	if err == nil {
		c.leased++
		c.unbound++
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return sem, nil
}

func tryAcquire(sem *semaphore.Weighted) bool { return sem == nil || sem.TryAcquire(1) }

// wait blocks for a slot of sem until the lease timeout (zero: none) or ctx is done. It
// returns errLeaseTimeout, or the cause of ctx.
func wait(ctx context.Context, sem *semaphore.Weighted, until time.Time) error {
	lctx := ctx
	if !until.IsZero() {
		var cancel context.CancelFunc
		lctx, cancel = context.WithDeadlineCause(ctx, until, errLeaseTimeout)
		defer cancel()
	}
	if err := sem.Acquire(lctx, 1); err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(lctx), errLeaseTimeout) {
			return errLeaseTimeout
		}
		return context.Cause(ctx)
	}
	return nil
}

// dial opens a new connection with the connect timeout. The Transport detaches dials from the
// request's cancellation so that a late connection can serve a later request; HttpClient 5
// aborts the connect of a cancelled request instead, and a cancelled call must not leave a
// dial running for minutes, so the dial is tied to its attempt again here.
func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	st, _ := ctx.Value(stateKey{}).(*attemptState)
	if st != nil {
		dctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(st.ctx, cancel)
		defer stop()
		ctx = dctx
	}
	nc, err := c.dialRoutes(ctx, st, network, addr)
	if err != nil {
		return nil, err
	}
	cn := &conn{Conn: nc, client: c, readTimeout: c.cfg.ReadTimeout, writeTimeout: c.cfg.WriteTimeout, born: time.Now()}
	// Until a call gets it, the connection is claimed by the attempt that dialled it, so it
	// does not show as available; the attempt's end releases the claim. Lock order: the
	// attempt's mutex, then the client's.
	if st != nil {
		st.mu.Lock()
		defer st.mu.Unlock()
	}
	c.mu.Lock()
	c.conns[cn] = struct{}{}
	if st != nil && !st.done {
		cn.claimed = true
		st.dialed = append(st.dialed, cn)
	}
	c.mu.Unlock()
	return cn, nil
}

// dialRoutes resolves addr's host and connects. HttpClient 5 tries every address in turn,
// each with the full connect timeout; with RoutePerAttempt, as in OkHttp, each address is a
// route of its own attempt, and this dials the attempt's route only.
func (c *Client) dialRoutes(ctx context.Context, st *attemptState, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips := []string{host}
	if net.ParseIP(host) == nil {
		r := c.cfg.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		if ips, err = r.LookupHost(ctx, host); err != nil {
			return nil, err
		}
	}
	if st != nil {
		st.mu.Lock()
		st.routes = len(ips)
		route := st.route
		st.mu.Unlock()
		if c.cfg.RoutePerAttempt {
			ips = ips[route%len(ips) : route%len(ips)+1]
		}
	}
	d := net.Dialer{Timeout: c.cfg.ConnectTimeout}
	for _, ip := range ips {
		var nc net.Conn
		if nc, err = d.DialContext(ctx, network, net.JoinHostPort(ip, port)); err == nil {
			return nc, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	var ne net.Error
	if c.cfg.ConnectTimeout > 0 && errors.As(err, &ne) && ne.Timeout() && (st == nil || st.ctx.Err() == nil) {
		return nil, fmt.Errorf("%w (%v): %w", ErrConnectTimeout, c.cfg.ConnectTimeout, err)
	}
	return nil, err
}

// conn is a pooled connection with an SO_TIMEOUT-style read timeout: while armed (a call's
// request is written and its response not yet read), every Read may block at most
// readTimeout, the deadline being set afresh at the start of each Read, so any byte that
// arrives restarts the clock.
type conn struct {
	net.Conn
	client       *Client
	readTimeout  time.Duration
	writeTimeout time.Duration
	born         time.Time

	mu    sync.Mutex    // guards owner, armed and the read deadline
	owner *attemptState // the attempt that got the connection last
	armed bool

	firedAt   atomic.Int64 // UnixNano of the read timeout, 0 if it never fired
	closeOnce sync.Once

	// guarded by client.mu
	user    *attemptState // the attempt holding the connection under its lease, for Stats
	claimed bool          // dialled for an attempt that has not ended or got it yet
}

// take makes st the connection's owner, with no read deadline until its request is written.
func (cn *conn) take(st *attemptState) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.owner, cn.armed = st, false
	cn.Conn.SetReadDeadline(time.Time{})
}

// arm starts the read timeout at now, also for a read that is already pending, if st still
// owns the connection.
func (cn *conn) arm(st *attemptState, now time.Time) {
	if cn.readTimeout <= 0 {
		return
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.owner != st {
		return // the response was read and the connection pooled before this hook ran
	}
	cn.armed = true
	cn.Conn.SetReadDeadline(now.Add(cn.readTimeout))
}

// disarm clears the read timeout of a connection going back to the pool, if st still owns it,
// and reports whether it did.
func (cn *conn) disarm(st *attemptState) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.owner != st {
		return false
	}
	cn.owner = nil
	if cn.armed {
		cn.armed = false
		cn.Conn.SetReadDeadline(time.Time{})
	}
	return true
}

// Write bounds each blocking write by the write timeout, when one is set.
func (cn *conn) Write(p []byte) (int, error) {
	if cn.writeTimeout > 0 {
		cn.Conn.SetWriteDeadline(time.Now().Add(cn.writeTimeout))
	}
	return cn.Conn.Write(p)
}

func (cn *conn) Read(p []byte) (int, error) {
	cn.mu.Lock()
	if cn.armed {
		cn.Conn.SetReadDeadline(time.Now().Add(cn.readTimeout))
	}
	cn.mu.Unlock()
	n, err := cn.Conn.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		cn.mu.Lock()
		st, armed := cn.owner, cn.armed
		cn.mu.Unlock()
		if armed && st != nil {
			cn.firedAt.CompareAndSwap(0, time.Now().UnixNano())
			// A failed read of the first response byte on a reused connection makes the
			// Transport replay an idempotent request on a new connection, silently doubling
			// the wait. Cancelling the attempt before the error reaches the Transport stops
			// that: it checks the request's context before every retry.
			st.cancel(ErrReadTimeout)
		}
	}
	return n, err
}

// timedOut reports whether the read timeout ended the connection's call, and did so before
// the call's context was done (a read timeout and a deadline firing together count as the
// deadline).
func (cn *conn) timedOut(ctx context.Context) bool {
	at := cn.firedAt.Load()
	if at == 0 {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && ctx.Err() != nil && !time.Unix(0, at).Before(dl) {
		return false
	}
	return true
}

func (cn *conn) Close() error {
	err := net.ErrClosed
	cn.closeOnce.Do(func() {
		err = cn.Conn.Close()
		cn.client.mu.Lock()
		delete(cn.client.conns, cn)
		cn.client.mu.Unlock()
	})
	return err
}
