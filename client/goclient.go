package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/vocab"
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
	// UseLastResponse returns every redirect to the caller: a CheckRedirect that returns
	// http.ErrUseLastResponse. Without it net/http follows up to 10.
	UseLastResponse bool
	// TLS configures https connections; nil uses the system's roots.
	TLS *tls.Config
	// TLSHandshakeTimeout is net/http's Transport.TLSHandshakeTimeout. Zero means none, as
	// in a Transport literal (http.DefaultTransport sets 10 s): only the call's deadline or
	// http.Client.Timeout then ends a handshake the server never answers.
	TLSHandshakeTimeout time.Duration
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
		{"client timeout", cfg.ClientTimeout}, {"deadline", cfg.Deadline}, {"backoff", cfg.Backoff},
		{"TLS handshake timeout", cfg.TLSHandshakeTimeout}} {
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
		TLSClientConfig:       cfg.TLS,
		TLSHandshakeTimeout:   cfg.TLSHandshakeTimeout,
	}
	check := checkRedirect
	if cfg.UseLastResponse {
		check = useLastResponse
	}
	return &GoClient{cfg: cfg, tr: tr, hc: &http.Client{Transport: tr, Timeout: cfg.ClientTimeout, CheckRedirect: check}}, nil
}

// Close closes the idle connections.
func (g *GoClient) Close() { g.tr.CloseIdleConnections() }

// Do makes the call with http.Client.Do, which follows up to 10 redirects, reading the whole
// body; Retries repeat it after any failure but the deadline. The Result and the error are as
// Client.Do's. A call's Lease is its wait inside the Transport for a connection.
//
// net/http re-sends a request by itself when a reused connection fails before the response
// head and the request is replayable (transport.go: shouldRetryRequest, isReplayable): GET,
// HEAD, OPTIONS, TRACE or an Idempotency-Key or X-Idempotency-Key header, with no body or
// GetBody; or any method when nothing was written (nothingWrittenError). GoClient lets it, as
// a Go user's code would, and shows it: every connection the Transport tried within one round
// trip is an Attempt of the Result, the ones it gave up on failed with errResent.
func (g *GoClient) Do(ctx context.Context, req *http.Request) (*Result, error) {
	start := time.Now()
	if g.cfg.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, g.cfg.Deadline, ErrDeadline)
		defer cancel()
	}
	res := &Result{}
	for n := 1; ; n++ {
		as, resp := g.attempt(ctx, req, start, len(res.Attempts)+1)
		res.Attempts = append(res.Attempts, as...)
		a := as[len(as)-1]
		res.Outcome, res.Elapsed = a.Outcome, a.End
		if a.Outcome == vocab.OK {
			res.Status, res.Header, res.Body = resp.status, resp.header, resp.body
			return res, nil
		}
		if a.Outcome == vocab.Deadline || ctx.Err() != nil || n > g.cfg.Retries || (req.Body != nil && req.GetBody == nil) {
			return res, a.Err
		}
		if e := pause(ctx, g.cfg.Backoff, start, a.n); e != nil {
			res.Outcome, res.Elapsed = e.Outcome, e.Elapsed
			return res, e
		}
	}
}

// goSeg is one connection net/http tried within an attempt: the first, then one per replay.
type goSeg struct {
	start                     time.Time // when the Transport asked for the connection
	connectStart, connectDone time.Time
	gotConn, firstByte        time.Time
	reused, dialed, written   bool
}

// goTrace collects an attempt's timestamps from the Transport's hooks.
type goTrace struct {
	mu    sync.Mutex // guards the fields below
	segs  []goSeg    // never empty
	inHop bool       // the current round trip (one per redirect) asked for a connection already
}

type goTraceKey struct{}

// checkRedirect is net/http's default redirect policy (client.go defaultCheckRedirect: stop
// after 10 redirects), which also marks the start of the redirect's round trip, so that a
// second connection within one round trip is told from a redirect's. (Wrapping the Transport
// instead would make http.Client treat it as an unknown RoundTripper and cancel through
// Request.Cancel, not as a Go user's client does.)
func checkRedirect(req *http.Request, via []*http.Request) error {
	if tr, ok := req.Context().Value(goTraceKey{}).(*goTrace); ok {
		tr.mu.Lock()
		tr.inHop = false
		tr.mu.Unlock()
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// useLastResponse is the CheckRedirect of GoConfig.UseLastResponse.
func useLastResponse(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// update applies f to the current connection's timestamps.
func (tr *goTrace) update(f func(s *goSeg)) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	f(&tr.segs[len(tr.segs)-1])
}

func (tr *goTrace) hooks() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn: func(string) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			if tr.inHop { // the Transport's retry loop: a replay on another connection
				tr.segs = append(tr.segs, goSeg{start: time.Now()})
			}
			tr.inHop = true
		},
		ConnectStart: func(string, string) {
			tr.update(func(s *goSeg) {
				if s.connectStart.IsZero() {
					s.connectStart = time.Now()
				}
				s.dialed = true
			})
		},
		ConnectDone: func(string, string, error) { tr.update(func(s *goSeg) { s.connectDone = time.Now() }) },
		GotConn: func(info httptrace.GotConnInfo) {
			tr.update(func(s *goSeg) { s.gotConn, s.reused = time.Now(), info.Reused })
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			tr.update(func(s *goSeg) { s.written = s.written || info.Err == nil })
		},
		GotFirstResponseByte: func() { tr.update(func(s *goSeg) { s.firstByte = time.Now() }) },
	}
}

// attempt makes one call of http.Client.Do and returns its attempts: one per connection the
// Transport tried, the last one classified by how the call ended.
func (g *GoClient) attempt(ctx context.Context, req *http.Request, callStart time.Time, n int) ([]Attempt, *response) {
	start := time.Now()
	tr := &goTrace{segs: []goSeg{{start: start}}}
	areq := req.WithContext(httptrace.WithClientTrace(context.WithValue(ctx, goTraceKey{}, tr), tr.hooks()))
	var resp *http.Response
	var err error
	if req.Body != nil && req.GetBody != nil {
		if areq.Body, err = req.GetBody(); err != nil {
			err = fmt.Errorf("replay request body: %w", err)
		}
	}
	if err == nil {
		resp, err = g.hc.Do(areq)
	}
	var body []byte
	if err == nil {
		body, err = readBody(resp, g.cfg.MaxBody)
	}
	end := time.Now()
	tr.mu.Lock()
	segs := append([]goSeg(nil), tr.segs...)
	tr.mu.Unlock()
	out := make([]Attempt, 0, len(segs))
	for i, s := range segs[:len(segs)-1] {
		next := segs[i+1].start
		a := Attempt{Start: s.start.Sub(callStart), End: next.Sub(callStart), Outcome: vocab.Failed, n: n + i}
		g.phases(&a, s, s.start, next)
		a.Err = &Error{Outcome: vocab.Failed, Phase: a.Phase, Attempt: a.n, Elapsed: a.End, Err: errResent}
		out = append(out, a)
	}
	last := segs[len(segs)-1]
	a := Attempt{Start: last.start.Sub(callStart), n: n + len(segs) - 1}
	if err != nil {
		return append(out, g.fail(a, ctx, last, end, callStart, err)), nil
	}
	a.Status = resp.StatusCode
	g.phases(&a, last, last.start, end)
	a.End, a.Outcome, a.Phase = end.Sub(callStart), vocab.OK, vocab.PhaseBody
	return append(out, a), &response{status: resp.StatusCode, header: resp.Header, body: body}
}

// phases splits the attempt into lease (waiting inside the Transport), connect, wait and body.
func (g *GoClient) phases(a *Attempt, s goSeg, start, end time.Time) {
	var connect time.Duration
	if s.dialed {
		done := s.connectDone
		if done.IsZero() {
			done = end
		}
		connect = done.Sub(s.connectStart)
	}
	a.NewConnection, a.Written = s.dialed && !s.reused, s.written
	switch {
	case s.gotConn.IsZero():
		a.Connect = min(connect, end.Sub(start))
		a.Lease = end.Sub(start) - a.Connect
		a.Phase = vocab.PhaseConnect
		if !s.dialed {
			a.Phase = vocab.PhaseLease
		}
	case s.firstByte.IsZero():
		a.Connect = min(connect, s.gotConn.Sub(start))
		a.Lease, a.Wait, a.Phase = s.gotConn.Sub(start)-a.Connect, end.Sub(s.gotConn), vocab.PhaseWait
	default:
		a.Connect = min(connect, s.gotConn.Sub(start))
		a.Lease = s.gotConn.Sub(start) - a.Connect
		a.Wait, a.Body, a.Phase = s.firstByte.Sub(s.gotConn), end.Sub(s.firstByte), vocab.PhaseBody
	}
}

// fail classifies net/http's error: the call's deadline or http.Client.Timeout (deadline),
// ResponseHeaderTimeout (read-timeout), a dial timeout (connect-timeout), anything else.
func (g *GoClient) fail(a Attempt, ctx context.Context, s goSeg, end, callStart time.Time, err error) Attempt {
	g.phases(&a, s, s.start, end)
	a.End = end.Sub(callStart)
	out := vocab.Failed
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrDeadline):
		out, err = vocab.Deadline, fmt.Errorf("%w: %w", ErrDeadline, err)
	case ctx.Err() != nil: // the caller's own cancellation
	default:
		out = vocab.ClassifyNetHTTP(err, a.Phase == vocab.PhaseConnect)
	}
	a.Outcome = out
	a.Err = &Error{Outcome: out, Phase: a.Phase, Attempt: a.n, Elapsed: a.End, Err: err}
	return a
}
