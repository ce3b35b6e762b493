package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/labrun/labrun/vocab"
)

// GoConfig is Go's own net/http client, set up with the settings nearest to a Config and none
// of labrun's layers: no lease timeout (the pool wait has none), no per-read timeout
// (ResponseHeaderTimeout covers the wait for the head only), one dial timeout shared by all of
// a host's addresses. It shows a Go user what their code does. Zero means net/http's default.
type GoConfig struct {
	// MaxConnsPerHost bounds the connections per host; calls beyond it wait without a limit.
	MaxConnsPerHost int
	// MaxIdleConnsPerHost is how many idle connections per host are kept (net/http: 2).
	MaxIdleConnsPerHost int
	// DialTimeout is net.Dialer.Timeout: one budget for the whole dial.
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response head after the request is sent.
	ResponseHeaderTimeout time.Duration
	// ClientTimeout is http.Client.Timeout: a deadline for each request, body included.
	ClientTimeout time.Duration
	// Deadline is a context deadline over the whole call, retries included.
	Deadline time.Duration
	// Retries and Backoff are the business code's retries, as in Config.
	Retries int
	Backoff time.Duration
	// Resolver resolves host names; nil uses net.DefaultResolver.
	Resolver *net.Resolver
	// MaxBody bounds the response body read into memory; 0 means DefaultMaxBody.
	MaxBody int64
}

// GoClient makes calls with net/http's Client and Transport as configured by GoConfig, and
// reports them as Results, classified and timed like Client's.
type GoClient struct {
	cfg GoConfig
	tr  *http.Transport
	hc  *http.Client
}

// NewGo returns a net/http client for cfg.
func NewGo(cfg GoConfig) (*GoClient, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"dial timeout", cfg.DialTimeout}, {"response header timeout", cfg.ResponseHeaderTimeout},
		{"client timeout", cfg.ClientTimeout}, {"deadline", cfg.Deadline}, {"backoff", cfg.Backoff}} {
		if d.v < 0 {
			return nil, fmt.Errorf("client: %s must not be negative, got %v", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"max conns per host", int64(cfg.MaxConnsPerHost)}, {"max idle conns per host", int64(cfg.MaxIdleConnsPerHost)},
		{"retries", int64(cfg.Retries)}, {"max body", cfg.MaxBody}} {
		if n.v < 0 {
			return nil, fmt.Errorf("client: %s must not be negative, got %d", n.name, n.v)
		}
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second, Resolver: cfg.Resolver}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxConnsPerHost:       cfg.MaxConnsPerHost,
		MaxIdleConnsPerHost:   cfg.MaxIdleConnsPerHost,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
		DisableCompression:    true,
	}
	return &GoClient{cfg: cfg, tr: tr, hc: &http.Client{Transport: tr, Timeout: cfg.ClientTimeout}}, nil
}

// Close closes the idle connections.
func (g *GoClient) Close() { g.tr.CloseIdleConnections() }

// Do makes the call with http.Client.Do, which follows up to 10 redirects, reading the whole
// body; Retries repeat it after any failure but the deadline. The Result and the error are as
// Client.Do's. A call's Lease is its wait inside the Transport for a connection.
func (g *GoClient) Do(ctx context.Context, req *http.Request) (*Result, error) {
	start := time.Now()
	if g.cfg.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, g.cfg.Deadline, ErrDeadline)
		defer cancel()
	}
	res := &Result{}
	for n := 1; ; n++ {
		a, resp := g.attempt(ctx, req, start, n)
		res.Attempts = append(res.Attempts, a)
		res.Outcome, res.Elapsed = a.Outcome, a.End
		if a.Outcome == vocab.OK {
			res.Status, res.Header, res.Body = resp.status, resp.header, resp.body
			return res, nil
		}
		if a.Outcome == vocab.Deadline || ctx.Err() != nil || n > g.cfg.Retries || (req.Body != nil && req.GetBody == nil) {
			return res, a.Err
		}
		if e := pause(ctx, g.cfg.Backoff, start, n); e != nil {
			res.Outcome, res.Elapsed = e.Outcome, e.Elapsed
			return res, e
		}
	}
}

// goTrace collects an attempt's timestamps from the Transport's hooks.
type goTrace struct {
	mu                        sync.Mutex // guards the fields below
	connectStart, connectDone time.Time
	gotConn, firstByte        time.Time
	reused, dialed            bool
}

func (g *GoClient) attempt(ctx context.Context, req *http.Request, callStart time.Time, n int) (Attempt, *response) {
	start := time.Now()
	a := Attempt{Start: start.Sub(callStart), n: n}
	tr := &goTrace{}
	trace := &httptrace.ClientTrace{
		ConnectStart: func(string, string) {
			tr.mu.Lock()
			if tr.connectStart.IsZero() {
				tr.connectStart = time.Now()
			}
			tr.dialed = true
			tr.mu.Unlock()
		},
		ConnectDone: func(string, string, error) {
			tr.mu.Lock()
			tr.connectDone = time.Now()
			tr.mu.Unlock()
		},
		GotConn: func(info httptrace.GotConnInfo) {
			tr.mu.Lock()
			tr.gotConn, tr.reused = time.Now(), info.Reused
			tr.mu.Unlock()
		},
		GotFirstResponseByte: func() {
			tr.mu.Lock()
			tr.firstByte = time.Now()
			tr.mu.Unlock()
		},
	}
	areq := req.WithContext(httptrace.WithClientTrace(ctx, trace))
	if req.Body != nil && req.GetBody != nil {
		var err error
		if areq.Body, err = req.GetBody(); err != nil {
			return g.fail(a, ctx, tr, start, callStart, fmt.Errorf("replay request body: %w", err)), nil
		}
	}
	resp, err := g.hc.Do(areq)
	if err != nil {
		return g.fail(a, ctx, tr, start, callStart, err), nil
	}
	a.Status = resp.StatusCode
	body, err := readBody(resp, g.cfg.MaxBody)
	if err != nil {
		return g.fail(a, ctx, tr, start, callStart, err), nil
	}
	end := time.Now()
	g.phases(&a, tr, start, end)
	a.End, a.Outcome, a.Phase = end.Sub(callStart), vocab.OK, vocab.PhaseBody
	return a, &response{status: resp.StatusCode, header: resp.Header, body: body}
}

// phases splits the attempt into lease (waiting inside the Transport), connect, wait and body.
func (g *GoClient) phases(a *Attempt, tr *goTrace, start, end time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var connect time.Duration
	if tr.dialed {
		done := tr.connectDone
		if done.IsZero() {
			done = end
		}
		connect = done.Sub(tr.connectStart)
	}
	a.NewConnection = tr.dialed && !tr.reused
	switch {
	case tr.gotConn.IsZero():
		a.Connect = min(connect, end.Sub(start))
		a.Lease = end.Sub(start) - a.Connect
		a.Phase = vocab.PhaseConnect
		if !tr.dialed {
			a.Phase = vocab.PhaseLease
		}
	case tr.firstByte.IsZero():
		a.Connect = min(connect, tr.gotConn.Sub(start))
		a.Lease, a.Wait, a.Phase = tr.gotConn.Sub(start)-a.Connect, end.Sub(tr.gotConn), vocab.PhaseWait
	default:
		a.Connect = min(connect, tr.gotConn.Sub(start))
		a.Lease = tr.gotConn.Sub(start) - a.Connect
		a.Wait, a.Body, a.Phase = tr.firstByte.Sub(tr.gotConn), end.Sub(tr.firstByte), vocab.PhaseBody
	}
}

// fail classifies net/http's error: the call's deadline or http.Client.Timeout (deadline),
// ResponseHeaderTimeout (read-timeout), a dial timeout (connect-timeout), anything else.
func (g *GoClient) fail(a Attempt, ctx context.Context, tr *goTrace, start, callStart time.Time, err error) Attempt {
	end := time.Now()
	g.phases(&a, tr, start, end)
	a.End = end.Sub(callStart)
	msg := err.Error()
	var ne net.Error
	timeout := errors.As(err, &ne) && ne.Timeout()
	out := vocab.Failed
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrDeadline):
		out, err = vocab.Deadline, fmt.Errorf("%w: %w", ErrDeadline, err)
	case ctx.Err() != nil: // the caller's own cancellation
	case strings.Contains(msg, "Client.Timeout"):
		// "Client.Timeout exceeded while awaiting headers", or, in the body, "Client.Timeout
		// or context cancellation while reading body" (the caller's context is not done).
		out = vocab.Deadline
	case strings.Contains(msg, "timeout awaiting response headers"):
		out = vocab.ReadTimeout
	case timeout && a.Phase == vocab.PhaseConnect:
		out = vocab.ConnectTimeout
	}
	a.Outcome = out
	a.Err = &Error{Outcome: out, Phase: a.Phase, Attempt: a.n, Elapsed: a.End, Err: err}
	return a
}
