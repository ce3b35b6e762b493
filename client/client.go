// Package client is an HTTP client with Apache HttpClient 5's timing semantics on net/http's
// Transport: a bounded lease, a per-read timeout (SO_TIMEOUT), timed-out connections closed,
// exact pool statistics, classified failures with per-attempt phases. Nothing is sent twice
// behind the caller's back: net/http's replays are refused, and a library's own re-sends
// (Config.Rules) are attempts of their own in the Result.
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
	"github.com/labrun/labrun/internal/vocab"
)

// Locks: each mutex guards its own type's fields, and no code holds one while taking another
// or a semaphore, so there is no lock order.

// Client makes calls with the limits of its Config. It is safe for concurrent use.
type Client struct {
	cfg       Config
	transport *http.Transport
	pool      *pool
	evictor   *evictor
	guards    guards // tests switch them off
	dials     atomic.Int64
}

// Dials counts the TCP connects started, every address and retry, refused ones included.
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
	// The lease bounds connections; the Transport's idle cap (default 2) would redial the rest.
	idlePerHost := cfg.MaxPerRoute
	if idlePerHost == 0 {
		idlePerHost = cfg.MaxTotal
	}
	if idlePerHost == 0 {
		idlePerHost = 1 << 16
	}
	c.transport = &http.Transport{
		Proxy:                 nil,
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

// Close stops the idle evictor and closes idle pooled connections; calls in flight go on.
func (c *Client) Close() {
	c.evictor.shutdown()
	c.transport.CloseIdleConnections()
}

// Stats is a snapshot of the pool in HttpClient 5's terms.
type Stats struct {
	Leased    int
	Pending   int
	Available int
	// Max is the total limit (0: unlimited).
	Max int
}

// Stats returns the pool statistics now.
func (c *Client) Stats() Stats { return c.pool.stats() }

// Attempt is one attempt of a call.
type Attempt struct {
	// Start and End are offsets from the call's start.
	Start, End time.Duration
	Outcome    vocab.Outcome
	// Phase is where the attempt ended (PhaseBody on success).
	Phase vocab.Phase
	// Lease, Connect, Wait (for the first byte) and Body add up to End - Start.
	Lease, Connect, Wait, Body time.Duration
	NewConnection              bool
	// Written: the whole request went into the kernel's send buffer.
	Written bool
	// Status is 0 when no head arrived.
	Status int
	Err    error

	n      int // 1-based
	routes int // addresses the host resolved to (0: no dial)
	remote string
	pinned bool // OkHttp's same-route retry
}

// Result is a finished call.
type Result struct {
	Outcome  vocab.Outcome
	Elapsed  time.Duration
	Attempts []Attempt
	// Status, Header and Body are the last attempt's response on success.
	Status int
	Header http.Header
	Body   []byte
}

// Do makes the call: up to 1+Retries business attempts under one deadline, each reading the
// whole body, with Config.Rules's re-sends and follow-ups. The Result is never nil; the error is
// an *Error matching the Err sentinels with errors.Is; a non-2xx status is not one. A body is
// sent again only with GetBody.
func (c *Client) Do(ctx context.Context, req *http.Request) (*Result, error) {
	start := time.Now()
	if c.cfg.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.cfg.Deadline, ErrDeadline)
		defer cancel()
	}
	res := &Result{}
	cur := req // a follow-up replaces it
	rs := c.newResend()
	retries, follow := 0, &followState{original: req}
	for {
		as, resp := c.attempt(ctx, cur, start, len(res.Attempts)+1, rs)
		res.Attempts = append(res.Attempts, as...)
		a := as[len(as)-1]
		res.Outcome, res.Elapsed = a.Outcome, a.End
		if a.Outcome == vocab.OK {
			res.Status, res.Header, res.Body = resp.status, resp.header, resp.body
			if d, again := c.statusPause(cur, resp, rs, time.Now()); again {
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
			continue
		}
		if retries >= c.cfg.Retries+min(len(regressRetries), 1) || !replayable(cur) {
			return res, a.Err
		}
		retries, rs = retries+1, c.newResend()
		if e := pause(ctx, c.cfg.Backoff, start, a.n); e != nil {
			res.Outcome, res.Elapsed = e.Outcome, e.Elapsed
			return res, e
		}
	}
}

func (c *Client) newResend() *resendState {
	return &resendState{ok: c.cfg.Rules.NewRoutes()}
}

// ctxOutcome classifies a done context: the configured deadline, or the caller's (Failed).
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

// pause waits d before a retry; when ctx is done first it returns attempt n's *Error.
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
