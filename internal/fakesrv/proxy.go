package fakesrv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Server with WithUpstream is a proxy: every request but /labrun/'s is forwarded to the
// upstream, its fault rules applied by method and path. The rules are read for each request,
// so a rule set at run time (POST /labrun/faults) applies to keep-alive connections already
// open.

// The proxy's control paths; every other path is forwarded.
const (
	ProxyStatsPath  = "/labrun/stats"
	ProxyFaultsPath = "/labrun/faults"
	proxyResetPath  = "/labrun/stats/reset"
	forwardEndpoint = "upstream"
	maxControlBody  = 64 << 10
	maxUpstreamURL  = 2048
)

// ParseUpstream checks a proxy's upstream URL: http (HTTP/1.1), https, or h2c (HTTP/2 over
// TCP with prior knowledge); a host, loopback unless allowRemote; no user, path, query or
// fragment. Host names other than localhost are not resolved: without allowRemote they are
// refused.
func ParseUpstream(raw string, allowRemote bool) (*url.URL, error) {
	if len(raw) > maxUpstreamURL {
		return nil, fmt.Errorf("the upstream URL is at most %d bytes, got %d", maxUpstreamURL, len(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the upstream URL: %v", errors.Unwrap(err))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "h2c":
		return nil, fmt.Errorf("the upstream URL %q: want scheme http, https or h2c", raw)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("the upstream URL %q has no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("the upstream URL %q carries a user: put credentials in the client's requests", raw)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return nil, fmt.Errorf("the upstream URL %q must be scheme://host:port alone: paths are the client's", raw)
	case !allowRemote && !isLoopbackHost(u.Hostname()):
		return nil, &AddrError{Addr: u.Host, NotLoopback: true, Err: errors.New("the upstream is not a loopback address")}
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// WithUpstream makes the server a proxy to u (ParseUpstream's), with rules as its first fault
// rules (ParseFaultRule's; SetFaultRules replaces them).
func WithUpstream(u *url.URL, rules ...FaultRule) Option {
	return func(o *options) { o.upstream, o.faultRules = u, rules }
}

// ProxyStats is what a proxy's /labrun/stats serves: Stats, with Requests["upstream"] the
// requests that arrived for it, and the proxy's own counts.
type ProxyStats struct {
	Stats
	Upstream string `json:"upstream"`
	// Forwarded counts the requests sent to the upstream; UpstreamErrors those it did not answer
	// (answered 502).
	Forwarded      int `json:"forwarded"`
	UpstreamErrors int `json:"upstream_errors"`
	// Faulted counts the requests each rule matched, by its text.
	Faulted map[string]int `json:"faulted"`
	// ClientsGone counts the requests whose client left before the answer was complete.
	ClientsGone int      `json:"clients_gone"`
	Faults      []string `json:"faults"`
}

// proxy is a Server's upstream side.
type proxy struct {
	upstream  *url.URL
	transport *http.Transport
	rules     atomic.Pointer[[]FaultRule]
	forwarded atomic.Int64
	failed    atomic.Int64
	gone      atomic.Int64

	mu      sync.Mutex // guards faulted
	faulted map[string]int
}

func newProxy(u *url.URL, rules []FaultRule) *proxy {
	t := &http.Transport{
		Proxy:               nil, // the upstream is reached directly, whatever the environment says
		DisableCompression:  true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	target := *u
	if u.Scheme == "h2c" {
		var ps http.Protocols
		ps.SetUnencryptedHTTP2(true)
		t.Protocols = &ps
		target.Scheme = "http"
	}
	p := &proxy{upstream: &target, transport: t, faulted: map[string]int{}}
	p.rules.Store(&rules)
	return p
}

// SetFaultRules replaces a proxy's fault rules (ParseFaultRule's), for the requests that
// arrive from now on, on any connection; an error for a server that is not a proxy.
func (s *Server) SetFaultRules(rules []FaultRule) error {
	if s.proxy == nil {
		return errors.New("fakesrv: fault rules need WithUpstream")
	}
	if err := checkFaultRules(rules); err != nil {
		return err
	}
	rules = append([]FaultRule(nil), rules...)
	s.proxy.rules.Store(&rules)
	return nil
}

// ProxyStats returns a proxy's counters; the zero value for a server that is not a proxy.
func (s *Server) ProxyStats() ProxyStats {
	p := s.proxy
	if p == nil {
		return ProxyStats{}
	}
	st := ProxyStats{Stats: s.Stats(), Upstream: s.opts.upstream.String(), Forwarded: int(p.forwarded.Load()),
		UpstreamErrors: int(p.failed.Load()), ClientsGone: int(p.gone.Load()), Faults: []string{}}
	p.mu.Lock()
	st.Faulted = maps.Clone(p.faulted)
	p.mu.Unlock()
	for _, r := range *p.rules.Load() {
		st.Faults = append(st.Faults, r.Text)
	}
	return st
}

func (p *proxy) reset() {
	p.forwarded.Store(0)
	p.failed.Store(0)
	p.gone.Store(0)
	p.mu.Lock()
	clear(p.faulted)
	p.mu.Unlock()
}

// match returns the first rule for method and path, counting it.
func (p *proxy) match(method, path string) (FaultRule, bool) {
	for _, r := range *p.rules.Load() {
		if r.matches(method, path) {
			p.mu.Lock()
			p.faulted[r.Text]++
			p.mu.Unlock()
			return r, true
		}
	}
	return FaultRule{}, false
}

// proxyEndpoints is a proxy's table: its control endpoints, then the forwarding one, which
// serves every other path (route's fallback in serveHTTP).
func proxyEndpoints() []Endpoint {
	return []Endpoint{
		{Name: "stats", Methods: []string{"GET", "HEAD"}, Path: ProxyStatsPath, Summary: "the proxy's counters as JSON",
			serve: (*exchange).proxyStats},
		{Name: "stats", Methods: []string{"POST"}, Path: proxyResetPath, Summary: "zeroes the counters and the log (204)",
			serve: (*exchange).statsReset},
		{Name: "faults", Methods: []string{"GET", "HEAD", "POST", "DELETE"}, Path: ProxyFaultsPath,
			Summary: `the fault rules: GET lists them, POST {"faults": [RULE, ...]} replaces them, DELETE clears them`,
			serve:   (*exchange).proxyFaults, keepBody: true},
		{Name: forwardEndpoint, Path: "/", Summary: "forwarded to the upstream, its fault rules applied",
			serve: (*exchange).forward, keepBody: true},
	}
}

// hopHeaders are the hop-by-hop headers a proxy does not forward (RFC 9110, section 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// endToEnd copies h without its hop-by-hop headers, those Connection names included.
func endToEnd(h http.Header) http.Header {
	out := h.Clone()
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			out.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		out.Del(name)
	}
	return out
}

// forward answers a request through the upstream, its fault rule applied (docs/serve.md).
func (x *exchange) forward() bool {
	p := x.s.proxy
	rule, faulted := p.match(x.r.Method, x.r.URL.Path)
	b := rule.Behaviour
	x.rec.Behaviour, x.rec.Fault = b, rule.Text
	x.publish()
	fail, answered, complete := x.draw(&b)
	if answered {
		return complete
	}
	x.rec.Behaviour = b
	if fail && b.Fail != FailClose && b.Fail != FailReset && b.Fail != FailStall {
		if err := x.drain(); err != nil {
			return x.proxyStop(x.bodyFailed(err))
		}
		return x.failNow(b) // a status: answered, not forwarded
	}
	if faulted && rule.Status != 0 {
		if err := x.drain(); err != nil {
			return x.proxyStop(x.bodyFailed(err))
		}
		if !x.waitUntil(x.rec.Arrived.Add(x.capped("delay", x.delayOf(b)))) {
			return x.proxyStop(x.stop())
		}
		return x.text(rule.Status, "labrun fault: status "+statusText(rule.Status))
	}

	delay := x.capped("delay", x.delayOf(b))
	// A client that leaves before the upstream's head cancels the upstream request; after it,
	// the answer is read to its end, so the upstream's connection ends as it would in a pool.
	ctx, cancel := context.WithDeadline(context.WithoutCancel(x.r.Context()), x.rec.Arrived.Add(delay+x.s.opts.maxDuration))
	defer cancel()
	leave := context.AfterFunc(x.r.Context(), cancel)
	resp, err := x.roundTrip(ctx)
	leave()
	if err != nil {
		if x.r.Context().Err() != nil {
			return x.proxyStop(x.stop())
		}
		p.failed.Add(1)
		return x.text(http.StatusBadGateway, "labrun: the upstream did not answer: "+err.Error())
	}
	defer discard(resp.Body, cancel)
	x.rec.Upstream, x.rec.UpstreamAt = resp.StatusCode, time.Now()
	x.publish()
	switch {
	case fail:
		return x.proxyStop(x.failNow(b))
	case b.Stall:
		return x.proxyStop(x.stall(b))
	case !x.waitUntil(x.rec.UpstreamAt.Add(delay)):
		return x.proxyStop(x.stop())
	}
	return x.proxyStop(x.relay(resp, b))
}

// discard reads what is left of an upstream body, at most maxDiscard for at most a second,
// then closes it; cancel ends the upstream request.
func discard(body io.ReadCloser, cancel context.CancelFunc) {
	t := time.AfterFunc(time.Second, cancel)
	defer t.Stop()
	_, _ = io.CopyN(io.Discard, body, maxDiscard)
	_ = body.Close()
}

const maxDiscard = 256 << 10

// proxyStop counts a client's departure; complete is the handler's result.
func (x *exchange) proxyStop(complete bool) bool {
	if x.rec.ClientGone {
		x.s.proxy.gone.Add(1)
	}
	return complete
}

// roundTrip sends the request to the upstream and returns its answer's head; ctx bounds the
// whole exchange with the upstream, body included.
func (x *exchange) roundTrip(ctx context.Context) (*http.Response, error) {
	p := x.s.proxy
	target := *p.upstream
	target.Path, target.RawPath, target.RawQuery = x.r.URL.Path, x.r.URL.RawPath, x.r.URL.RawQuery
	var body io.Reader = http.NoBody
	counted := &countingReader{r: x.r.Body}
	if x.r.ContentLength != 0 {
		body = counted
	}
	out, err := http.NewRequestWithContext(ctx, x.r.Method, target.String(), body)
	if err != nil {
		return nil, err
	}
	out.Header = endToEnd(x.r.Header)
	out.ContentLength = x.r.ContentLength
	p.forwarded.Add(1)
	x.rec.Forwarded = true
	x.publish()
	resp, err := p.transport.RoundTrip(out)
	x.rec.BodyBytes = int(counted.n.Load())
	return resp, err
}

// countingReader counts the bytes read through it, from the transport's goroutine.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// relay sends the upstream's answer: its head, then its body as it comes, a byte every
// b.Every, or at b.Bandwidth bytes per second from the head; its trailers after. An upstream
// body that ends short ends the exchange without completing it.
func (x *exchange) relay(resp *http.Response, b Behaviour) bool {
	every := b.Every
	h := x.w.Header()
	maps.Copy(h, endToEnd(resp.Header))
	for k := range resp.Trailer {
		h.Add("Trailer", k)
	}
	if resp.ContentLength >= 0 {
		h.Set("Content-Length", fmt.Sprint(resp.ContentLength))
	}
	x.w.WriteHeader(resp.StatusCode)
	if err := x.rc.Flush(); err != nil {
		return x.stop()
	}
	x.rec.Status, x.rec.HeadSent = resp.StatusCode, time.Now()
	x.publish()
	buf := make([]byte, 32<<10)
	switch {
	case every > 0:
		buf = buf[:1]
	case b.Bandwidth > 0:
		buf = buf[:max(1, min(len(buf), b.Bandwidth/50))] // about 50 writes a second
	}
	sent := 0
	for k := 1; ; k++ {
		n, err := resp.Body.Read(buf)
		sent += n
		due := x.rec.HeadSent.Add(time.Duration(float64(sent) / float64(max(1, b.Bandwidth)) * float64(time.Second)))
		if b.Bandwidth > 0 && n > 0 && !x.waitUntil(due) {
			return x.stop()
		}
		if n > 0 && !x.body(buf[:n]) {
			return false
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if x.r.Context().Err() != nil {
				return x.stop()
			}
			return false // the upstream cut its body: so does the client's answer
		}
		if every > 0 && !x.waitUntil(x.rec.HeadSent.Add(time.Duration(k)*every)) {
			return x.stop()
		}
	}
	for k, vs := range resp.Trailer {
		h[k] = vs
	}
	return true
}

// proxyStats answers GET /labrun/stats with ProxyStats as JSON.
func (x *exchange) proxyStats() bool {
	return x.json(http.StatusOK, x.s.ProxyStats())
}

// faultsBody is POST /labrun/faults' body and GET's answer.
type faultsBody struct {
	Faults []string `json:"faults"`
}

// proxyFaults lists, replaces or clears the fault rules.
func (x *exchange) proxyFaults() bool {
	var rules []FaultRule
	switch x.r.Method {
	case http.MethodPost:
		data, err := io.ReadAll(io.LimitReader(x.r.Body, maxControlBody+1))
		x.rec.BodyBytes = len(data)
		switch {
		case err != nil:
			return x.stop()
		case len(data) > maxControlBody:
			return x.text(http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is at most %d bytes", maxControlBody))
		}
		var in faultsBody
		if err := json.Unmarshal(data, &in); err != nil || in.Faults == nil {
			return x.text(http.StatusBadRequest, `want {"faults": ["METHOD PATH KEY=VALUE ...", ...]}`)
		}
		if len(in.Faults) > MaxFaultRules {
			return x.text(http.StatusBadRequest, fmt.Sprintf("at most %d fault rules, got %d", MaxFaultRules, len(in.Faults)))
		}
		for _, line := range in.Faults {
			r, err := ParseFaultRule(line)
			if err != nil {
				return x.text(http.StatusBadRequest, err.Error())
			}
			rules = append(rules, r)
		}
		fallthrough
	case http.MethodDelete:
		if err := x.s.SetFaultRules(rules); err != nil {
			return x.text(http.StatusBadRequest, err.Error())
		}
	}
	out := faultsBody{Faults: []string{}}
	for _, r := range *x.s.proxy.rules.Load() {
		out.Faults = append(out.Faults, r.Text)
	}
	return x.json(http.StatusOK, out)
}

func (x *exchange) json(status int, v any) bool {
	data, err := json.Marshal(v)
	if err != nil {
		panic("fakesrv: marshal: " + err.Error()) // only ints, strings and maps of them
	}
	data = append(data, '\n')
	x.w.Header().Set("Content-Type", "application/json")
	return x.head(status, len(data)) && x.body(data)
}
