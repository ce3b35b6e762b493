package fakesrv

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/dist"
)

// newProxy starts a proxy in front of a real server whose handler is h, with rules.
func newProxyServer(t *testing.T, h http.Handler, h2c bool, rules ...string) *Server {
	t.Helper()
	up := httptest.NewUnstartedServer(h)
	raw := "http://"
	if h2c {
		up.Config.Protocols = new(http.Protocols)
		up.Config.Protocols.SetUnencryptedHTTP2(true)
		raw = "h2c://"
	}
	up.Start()
	t.Cleanup(up.Close)
	u, err := ParseUpstream(raw+up.Listener.Addr().String(), false)
	if err != nil {
		t.Fatal(err)
	}
	var parsed []FaultRule
	for _, line := range rules {
		r, err := ParseFaultRule(line)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, r)
	}
	return newServer(t, WithUpstream(u, parsed...))
}

// hello answers "hello" with the request's method, path and body length in headers.
var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	w.Header().Set("X-Seen", r.Method+" "+r.URL.RequestURI()+" "+r.Proto)
	w.Header().Set("X-Body", strings.Repeat("b", int(n)))
	io.WriteString(w, "hello")
})

func TestProxyForwards(t *testing.T) {
	for _, h2c := range []bool{false, true} {
		t.Run(map[bool]string{false: "http1", true: "h2c"}[h2c], func(t *testing.T) {
			s := newProxyServer(t, hello, h2c)
			c, _ := newClient(t)
			resp, err := c.Post(s.URL+"/a/b?x=1", "text/plain", strings.NewReader("abc"))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			proto := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2c]
			if string(body) != "hello" || resp.Header.Get("X-Seen") != "POST /a/b?x=1 "+proto || resp.Header.Get("X-Body") != "bbb" {
				t.Errorf("got %q, %v; want the upstream's hello to POST /a/b?x=1 over %s with 3 body bytes", body, resp.Header, proto)
			}
			rec := waitFinished(t, s, 1)
			if !rec.Forwarded || rec.Upstream != 200 || rec.BodyBytes != 3 || rec.Endpoint != forwardEndpoint {
				t.Errorf("got log %+v, want forwarded, upstream 200, 3 body bytes", rec)
			}
		})
	}
}

// TestProxyH2CFront: a client speaking h2c to the proxy, which speaks HTTP/1.1 upstream; a
// reset rule resets the stream alone.
func TestProxyH2CFront(t *testing.T) {
	up := httptest.NewServer(hello)
	t.Cleanup(up.Close)
	u, _ := ParseUpstream(up.URL, false)
	rule, _ := ParseFaultRule("GET /broken fail=reset")
	s := newServer(t, WithProtocol(H2C), WithUpstream(u, rule))
	tr := s.ClientTransport()
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	resp, err := c.Get(s.URL + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.Header.Get("X-Seen") != "GET /ok HTTP/1.1" {
		t.Errorf("got %s, %v; want HTTP/2 to the proxy, HTTP/1.1 upstream", resp.Proto, resp.Header)
	}
	if _, err := c.Get(s.URL + "/broken"); err == nil || !strings.Contains(err.Error(), "INTERNAL_ERROR") {
		t.Errorf("got %v, want the stream reset", err)
	}
	if resp, err := c.Get(s.URL + "/ok"); err != nil || s.ConnsAccepted() != 1 {
		t.Errorf("got %v, %v with %d connections; want the connection serving on", resp, err, s.ConnsAccepted())
	} else {
		resp.Body.Close()
	}
}

// TestProxyFaults: each kind of rule, as the client and the log see it.
func TestProxyFaults(t *testing.T) {
	s := newProxyServer(t, hello, false,
		"POST /status status=503 delay=100ms",
		"POST /reset fail=reset",
		"POST /close fail=close",
		"POST /second fail=reset fail-on=2",
		"POST /trickle every=100ms",
		"* /slow/* delay=200ms",
	)
	c, tr := newClient(t)
	do := func(path string) (*http.Response, string, time.Duration, error) {
		start := time.Now()
		// A POST, which net/http does not send again by itself after a reset.
		resp, err := c.Post(s.URL+path, "", nil)
		if err != nil {
			return nil, "", time.Since(start), err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body), time.Since(start), err
	}

	resp, body, took, err := do("/status")
	if err != nil || resp.StatusCode != 503 || took < 100*time.Millisecond || took > 100*time.Millisecond+slack {
		t.Errorf("status: got %v %q after %v (%v), want 503 after 100 ms", resp, body, took, err)
	}
	if _, _, _, err := do("/reset"); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("fail=reset: got %v, want a connection reset", err)
	}
	if _, _, _, err := do("/close"); !errors.Is(err, io.EOF) {
		t.Errorf("fail=close: got %v, want EOF", err)
	}
	tr.CloseIdleConnections()
	if resp, _, _, err := do("/second"); err != nil || resp.StatusCode != 200 {
		t.Errorf("fail-on=2, first request: got %v, %v; want the upstream's 200", resp, err)
	}
	if _, _, _, err := do("/second"); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("fail-on=2, second request: got %v, want a connection reset", err)
	}
	resp, body, took, err = do("/trickle")
	if err != nil || body != "hello" || took < 400*time.Millisecond || took > 400*time.Millisecond+slack {
		t.Errorf("every=100ms: got %q after %v (%v), want hello over 400 ms", body, took, err)
	}
	_, body, took, err = do("/slow/x")
	if err != nil || body != "hello" || took < 200*time.Millisecond || took > 200*time.Millisecond+slack {
		t.Errorf("delay=200ms on a prefix: got %q after %v (%v), want hello after 200 ms", body, took, err)
	}
	st := s.ProxyStats()
	// /status is not forwarded; the reset, the close and the rest are, after the upstream answered.
	if st.Forwarded != 6 || st.Faulted["POST /second fail=reset fail-on=2"] != 2 || st.Faulted["POST /status status=503 delay=100ms"] != 1 {
		t.Errorf("got %+v, want 6 forwarded, the rules counted", st)
	}
}

// TestProxySeededFailures: a seeded rule fails the request numbers dist.Failing names in
// advance: a status answered without forwarding, the others forwarded.
func TestProxySeededFailures(t *testing.T) {
	const n = 40
	s := newProxyServer(t, hello, false, "POST /items fail-rate=0.25 fail=503 seed=7")
	c, _ := newClient(t)
	var got []int
	for i := 1; i <= n; i++ {
		resp, err := c.Post(s.URL+"/items", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			got = append(got, i)
		}
	}
	want := dist.Failing(7, 0.25, n)
	if !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("failed requests %v, want %v", got, want)
	}
	if st := s.ProxyStats(); st.Forwarded != n-len(want) {
		t.Errorf("forwarded %d, want %d: a failure by status is not forwarded", st.Forwarded, n-len(want))
	}
}

// TestProxyBandwidth: bandwidth=N relays the upstream's body at N bytes a second.
func TestProxyBandwidth(t *testing.T) {
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 2000)) })
	s := newProxyServer(t, big, false, "GET /big bandwidth=4000")
	c, _ := newClient(t)
	start := time.Now()
	resp, err := c.Get(s.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); err != nil || len(body) != 2000 || took < 500*time.Millisecond-CoarseTick || took > 500*time.Millisecond+slack {
		t.Errorf("got %d bytes after %v (%v), want 2000 after 500 ms", len(body), took, err)
	}
}

// TestProxyStallAndDeparture: a stalled request is forwarded, held, and its client's
// departure logged and counted.
func TestProxyStallAndDeparture(t *testing.T) {
	s := newProxyServer(t, hello, false, "GET /hold stall=1")
	c, _ := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/hold", nil)
	if _, err := c.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the client's deadline", err)
	}
	rec := waitFinished(t, s, 1)
	if left := rec.Finished.Sub(rec.Arrived); !rec.ClientGone || rec.Upstream != 200 || left < 250*time.Millisecond || left > 300*time.Millisecond+slack {
		t.Errorf("got %+v (left at %v), want forwarded, held, client gone at about 300 ms", rec, left)
	}
	if st := s.ProxyStats(); st.ClientsGone != 1 || st.Forwarded != 1 {
		t.Errorf("got %+v, want 1 forwarded, 1 client gone", st)
	}
}

// TestProxyUpstreamDown: an upstream that refuses connections is a 502, counted.
func TestProxyUpstreamDown(t *testing.T) {
	up := httptest.NewServer(hello)
	u, _ := ParseUpstream(up.URL, false)
	up.Close()
	s := newServer(t, WithUpstream(u))
	c, _ := newClient(t)
	resp, err := c.Get(s.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || s.ProxyStats().UpstreamErrors != 1 {
		t.Errorf("got %d, %+v; want 502, 1 upstream error", resp.StatusCode, s.ProxyStats())
	}
}

// TestProxyFaultsControl: POST /labrun/faults checks every rule, answers the set, and refuses
// what a web page could send.
func TestProxyFaultsControl(t *testing.T) {
	s := newProxyServer(t, hello, false)
	c, _ := newClient(t)
	post := func(body string, h ...string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+ProxyFaultsPath, strings.NewReader(body))
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(out))
	}
	tests := []struct {
		body    string
		headers []string
		code    int
		want    string
	}{
		{`{"faults": ["GET  /a   delay=1s"]}`, nil, 200, `{"faults":["GET /a delay=1s"]}`},
		{`{"faults": ["GET /a delay=1s", "GET /b"]}`, nil, 400, `fault rule "GET /b": want METHOD PATH KEY=VALUE..., such as 'POST /orders delay=2s'`},
		{`{"faults": "GET /a delay=1s"}`, nil, 400, `want {"faults": ["METHOD PATH KEY=VALUE ...", ...]}`},
		{`{"faults": []}`, []string{"Content-Type", "text/plain"}, 403, "the Content-Type text/plain is refused: a web form can send it from any page; send no body or application/json"},
		{`{"faults": []}`, []string{"Origin", "http://evil.example"}, 403, `the Origin "http://evil.example" is not this server: control endpoints refuse cross-origin requests`},
		{strings.Repeat(" ", maxControlBody+1), nil, 413, "the body is at most 65536 bytes"},
	}
	for _, tt := range tests {
		if code, got := post(tt.body, tt.headers...); code != tt.code || got != tt.want {
			t.Errorf("POST %.40q: got %d %q, want %d %q", tt.body, code, got, tt.code, tt.want)
		}
	}
	if got := s.ProxyStats().Faults; len(got) != 1 || got[0] != "GET /a delay=1s" {
		t.Errorf("got rules %q, want the first POST's alone: a refused POST changes nothing", got)
	}
}

func TestParseFaultRule(t *testing.T) {
	good := []struct {
		line string
		want FaultRule
	}{
		{"POST /orders delay=2s", FaultRule{Method: "POST", Path: "/orders", Behaviour: Behaviour{Delay: 2 * time.Second}, Text: "POST /orders delay=2s"}},
		{"* /items/* fail=reset fail-on=3", FaultRule{Method: "*", Path: "/items/*", Behaviour: Behaviour{Fail: FailReset, FailOn: 3}, Text: "* /items/* fail=reset fail-on=3"}},
		{"GET / status=429 delay=10ms", FaultRule{Method: "GET", Path: "/", Status: 429, Behaviour: Behaviour{Delay: 10 * time.Millisecond}, Text: "GET / status=429 delay=10ms"}},
		{"GET /s stall=1 max=1s", FaultRule{Method: "GET", Path: "/s", Behaviour: Behaviour{Stall: true, MaxStall: time.Second}, Text: "GET /s stall=1 max=1s"}},
	}
	for _, tt := range good {
		got, err := ParseFaultRule(tt.line)
		if err != nil || got != tt.want {
			t.Errorf("ParseFaultRule(%q) = %+v, %v; want %+v", tt.line, got, err, tt.want)
		}
	}
	bad := map[string]string{
		"GET /a":                      "want METHOD PATH KEY=VALUE",
		"G(T /a delay=1s":             "is not a method name",
		"GET a delay=1s":              "the path must start with /",
		"GET /a?x=1 delay=1s":         "hold no query",
		"GET /*/b delay=1s":           "a * may end it",
		"GET /a delay":                "is not KEY=VALUE",
		"GET /a delay=1s delay=2s":    "delay given twice",
		"GET /a speed=1":              "unknown key \"speed\", want one of",
		"GET /a bytes=10":             "bytes does not apply to a proxy",
		"GET /a status=99":            "status must be a whole number between 200 and 599",
		"GET /a stall=1 fail=close":   "stall never answers",
		"GET /a fail-on=2":            "fail-on needs fail",
		"GET /a fail=boom":            "fail: unknown mode",
		"GET /a delay=1s\nGET /b x=1": "one line",
		"GET /" + strings.Repeat("a", maxFaultRuleLen) + " delay=1s": "at most 1024 bytes",
	}
	for line, want := range bad {
		if _, err := ParseFaultRule(line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFaultRule(%.40q): got %v, want an error with %q", line, err, want)
		}
	}
}

func TestParseUpstream(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:8080": "http://127.0.0.1:8080",
		"h2c://localhost:9000/": "h2c://localhost:9000",
		"https://[::1]:8443":    "https://[::1]:8443",
	} {
		if u, err := ParseUpstream(raw, false); err != nil || u.String() != want {
			t.Errorf("ParseUpstream(%q) = %v, %v; want %s", raw, u, err, want)
		}
	}
	if u, err := ParseUpstream("http://db.internal:5984", true); err != nil || u.Host != "db.internal:5984" {
		t.Errorf("with allowRemote: got %v, %v", u, err)
	}
	var ae *AddrError
	if _, err := ParseUpstream("http://db.internal:5984", false); !errors.As(err, &ae) || !ae.NotLoopback {
		t.Errorf("a remote upstream without allowRemote: got %v, want a NotLoopback AddrError", err)
	}
	for _, raw := range []string{"", "127.0.0.1:80", "ws://127.0.0.1", "http://127.0.0.1/x", "http://127.0.0.1?q", "http://127.0.0.1\n", "http://" + strings.Repeat("a", maxUpstreamURL)} {
		if _, err := ParseUpstream(raw, true); err == nil {
			t.Errorf("ParseUpstream(%.40q) accepted", raw)
		}
	}
	if _, err := url.Parse("http://127.0.0.1\n"); err == nil {
		t.Fatal("url.Parse accepts a newline: ParseUpstream's one-line check rests on it")
	}
}
