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

// GoConfig sets up Go's own net/http client with the settings nearest to a Config and none of
// labrun's layers: no lease timeout, no per-read timeout, one dial timeout for all addresses.
// Zero means net/http's default.
type GoConfig struct {
	// MaxConnsPerHost bounds connections per host; calls beyond it wait without limit.
	MaxConnsPerHost     int
	MaxIdleConnsPerHost int
	// DialTimeout is net.Dialer.Timeout: one budget for the whole dial.
	DialTimeout           time.Duration
	ResponseHeaderTimeout time.Duration
	// ClientTimeout is http.Client.Timeout, body included.
	ClientTimeout time.Duration
	// Deadline is a context deadline over the whole call, retries included.
	Deadline time.Duration
	// Retries and Backoff are as in Config.
	Retries  int
	Backoff  time.Duration
	Resolver *net.Resolver
	// MaxBody bounds the body read; 0 means DefaultMaxBody.
	MaxBody int64
	// UseLastResponse returns every redirect to the caller (http.ErrUseLastResponse).
	UseLastResponse bool
	TLS             *tls.Config
	// TLSHandshakeTimeout is the Transport's; zero means none, as in a Transport literal.
	TLSHandshakeTimeout time.Duration
}

// GoClient makes calls with net/http's Client as GoConfig sets it up, reported as Results.
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

// Do makes the call with http.Client.Do, reading the whole body; Retries repeat it after any
// failure but the deadline. net/http's own replays are let through, as in a Go user's code,
// and shown: each connection tried is an Attempt.
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

type goSeg struct {
	start                     time.Time
	connectStart, connectDone time.Time
	gotConn, firstByte        time.Time
	reused, dialed, written   bool
}

type goTrace struct {
	mu    sync.Mutex // guards the fields below
	segs  []goSeg
	inHop bool // asked for a connection in this hop already
}

type goTraceKey struct{}

// checkRedirect is net/http's defaultCheckRedirect that also marks a redirect's round trip, to
// tell a replay from a redirect.
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

func useLastResponse(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

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
			if tr.inHop { // a replay on another connection
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

// fail classifies net/http's error.
func (g *GoClient) fail(a Attempt, ctx context.Context, s goSeg, end, callStart time.Time, err error) Attempt {
	g.phases(&a, s, s.start, end)
	a.End = end.Sub(callStart)
	out := vocab.Failed
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrDeadline):
		out, err = vocab.Deadline, fmt.Errorf("%w: %w", ErrDeadline, err)
	case ctx.Err() != nil:
	default:
		out = vocab.ClassifyNetHTTP(err, a.Phase == vocab.PhaseConnect)
	}
	a.Outcome = out
	a.Err = &Error{Outcome: out, Phase: a.Phase, Attempt: a.n, Elapsed: a.End, Err: err}
	return a
}
