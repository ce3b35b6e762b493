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
// net/http. Redirects and other follow-ups are those of the library's rule
// (Config.Rules.FollowUps), the one the model predicts with; the zero Rules follow none.
//
// Nothing is sent twice behind the caller's back: net/http's own replays of a request whose
// reused connection failed are refused (attempt.go), and the re-sends a library makes by itself
// (HttpClient 5's retry strategy, OkHttp's recovery, resend.go) are attempts of their own in
// the Result, each saying whether its request was written.
package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// The package has one file per idea: the call and its retries (client.go), one attempt and
// its trace hooks (attempt.go), the lease and the books behind Stats (pool.go), dialling and
// routes (dial.go), the read-timeout connection (conn.go), what is checked before a pooled
// connection is reused and the idle evictor (reuse.go), what the libraries re-send by
// themselves (resend.go), the follow-ups the library's rule asks for (followup.go) and
// net/http's own client for comparison (goclient.go).
//
// Locks. Each mutex guards its own type's fields only:
//   - pool.mu: the routes' semaphores, the calls pending, the leases held and the open
//     connections with their use (the books behind Stats);
//   - attemptState.mu: what the trace hooks learn of one attempt (its connection, timestamps,
//     routes, its current round trip);
//   - conn.mu: a connection's owner, whether its read timeout is armed, its read deadline, and
//     what it saw while pooled;
//   - goTrace.mu: the timestamps of one GoClient attempt.
//
// No code holds one of them while it takes another, or while it acquires or releases a
// semaphore, so there is no lock order to keep: a hook copies what it needs under one lock,
// lets go, then calls the next type. A connection's use (who holds it, who dialled it) was
// once a field of conn under the client's lock; it is the pool's bookkeeping now, keyed by
// *conn, so that the pool's lock alone makes Stats consistent.

// Client makes calls with the limits of its Config. It is safe for concurrent use.
type Client struct {
	cfg       Config
	transport *http.Transport
	pool      *pool
	evictor   *evictor     // nil without Config.EvictIdle
	guards    guards       // both on; tests switch them off
	dials     atomic.Int64 // TCP connects started, every address and retry counted
}

// Dials counts the TCP connects the client has started: every address it tried and every
// connect a library's rule tried again (the JDK's retry of a refused connect), refused ones
// included, which no server sees.
func (c *Client) Dials() int { return int(c.dials.Load()) }

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	c := &Client{cfg: cfg, pool: newPool(cfg)}
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
		DialTLSContext:        c.dialTLS,
		MaxIdleConns:          cfg.MaxTotal,
		MaxIdleConnsPerHost:   idlePerHost,
		IdleConnTimeout:       cfg.IdleTimeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 0, // the per-read timeout covers the head
	}
	if cfg.EvictIdle > 0 {
		c.startEvictor()
	}
	return c, nil
}

// Config returns the client's configuration.
func (c *Client) Config() Config { return c.cfg }

// Close stops the idle evictor and closes the idle pooled connections. Calls in flight are not
// interrupted.
func (c *Client) Close() {
	c.evictor.shutdown()
	c.transport.CloseIdleConnections()
}

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
func (c *Client) Stats() Stats { return c.pool.stats() }

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
	// Written is true when the whole request was written on the attempt's connection (into
	// the kernel's send buffer: whether the server read it, and executed it, only the server
	// can tell; a connection the server had closed takes the request and loses it).
	Written bool
	// Status is the response status, 0 when no head arrived.
	Status int
	// Err is the attempt's error, nil on success.
	Err error

	n      int    // 1-based number of the attempt
	routes int    // how many addresses the host resolved to (0 when it did not dial)
	remote string // the IP address of the attempt's connection
	pinned bool   // it dialled the pinned address of an OkHttp retry
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

// Do makes the call: up to 1+Retries business attempts under one deadline, each reading the
// whole response body, and within each the re-sends of the library's rules (Config.Rules) and
// follow-ups (Config.Rules.FollowUps). The Result is never nil
// and carries the timings even when the call fails; the error is then an *Error, which matches
// ErrLeaseTimeout, ErrConnectTimeout, ErrReadTimeout or ErrDeadline with errors.Is. A non-2xx
// status is not an error.
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
	rs := c.newResend()
	retries, follow := 0, &followState{original: req}
	for {
		as, resp := c.attempt(ctx, cur, start, len(res.Attempts)+1, rs)
		res.Attempts = append(res.Attempts, as...)
		a := as[len(as)-1]
		res.Outcome, res.Elapsed = a.Outcome, a.End
		if a.Outcome == vocab.OK {
			res.Status, res.Header, res.Body = resp.status, resp.header, resp.body
			if d, again := c.hc5StatusPause(cur, resp, rs, time.Now()); again {
				if e := pause(ctx, d, start, a.n); e != nil {
					res.Outcome, res.Elapsed = e.Outcome, e.Elapsed
					return res, e
				}
				continue
			}
			next, ferr := c.followUp(follow, cur, resp)
			if ferr != nil {
				err := &Error{Outcome: vocab.Failed, Phase: vocab.PhaseBody, Attempt: a.n, Elapsed: a.End, Err: ownError{ferr}}
				res.Outcome, res.Attempts[len(res.Attempts)-1].Err = vocab.Failed, err
				return res, err
			}
			if next == nil {
				return res, nil
			}
			cur, rs = next, c.newResend()
			continue
		}
		if a.Outcome == vocab.Deadline || ctx.Err() != nil {
			return res, a.Err
		}
		if c.resend(cur, a, rs) {
			continue // the library's own re-send, at once
		}
		if retries >= c.cfg.Retries+min(len(regressRetries), 1) || !replayable(cur) {
			return res, a.Err
		}
		retries, rs = retries+1, c.newResend() // a business retry calls the library anew
		if e := pause(ctx, c.cfg.Backoff, start, a.n); e != nil {
			res.Outcome, res.Elapsed = e.Outcome, e.Elapsed
			return res, e
		}
	}
}

// newResend returns the library's re-send state for a new exchange.
func (c *Client) newResend() *resendState {
	return &resendState{ok: okRoutes{currentRoute: c.cfg.Rules.Resend.CurrentRoute,
		perAttempt: c.cfg.Rules.Connect.Addresses == rules.RoutePerAttempt}}
}

// ctxOutcome classifies a done call context: the configured deadline, or the caller's own
// cancellation or deadline (Failed).
func ctxOutcome(ctx context.Context) (vocab.Outcome, error) {
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
	if clock.Sleep(ctx, d) == nil {
		return nil
	}
	out, cause := ctxOutcome(ctx)
	return &Error{Outcome: out, Phase: vocab.PhaseBackoff, Attempt: n, Elapsed: time.Since(start), Err: cause}
}
