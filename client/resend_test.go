package client

import (
	"github.com/labrun/labrun/internal/rules"

	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// TestJavaExceptions checks the table from labrun's failures to the Java exceptions, and what
// HttpClient 5's default strategy and OkHttp make of each, without sockets.
func TestJavaExceptions(t *testing.T) {
	wait := func(err error) Attempt {
		return Attempt{Outcome: vocab.Failed, Phase: vocab.PhaseWait, Err: &Error{Outcome: vocab.Failed, Err: err}}
	}
	connect := func(err error) Attempt {
		return Attempt{Outcome: vocab.Failed, Phase: vocab.PhaseConnect, Err: &Error{Outcome: vocab.Failed, Err: err}}
	}
	opErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)}
	}
	tests := []struct {
		name  string
		a     Attempt
		class string
		kind  rules.Class
	}{
		{"lease timeout", Attempt{Outcome: vocab.LeaseTimeout, Err: ErrLeaseTimeout}, "ConnectionRequestTimeoutException", rules.ClassFatal},
		{"connect timeout", Attempt{Outcome: vocab.ConnectTimeout, Phase: vocab.PhaseConnect, Err: ErrConnectTimeout}, "ConnectTimeoutException", rules.ClassConnectTimeout},
		{"read timeout", Attempt{Outcome: vocab.ReadTimeout, Phase: vocab.PhaseWait, Err: ErrReadTimeout}, "SocketTimeoutException", rules.ClassSocketTimeout},
		{"write timeout", wait(&lostError{os.ErrDeadlineExceeded}), "SocketTimeoutException", rules.ClassSocketTimeout},
		{"deadline", Attempt{Outcome: vocab.Deadline, Err: ErrDeadline}, "InterruptedIOException", rules.ClassFatal},
		{"body cut", Attempt{Outcome: vocab.Failed, Phase: vocab.PhaseBody, Err: io.ErrUnexpectedEOF}, "ConnectionClosedException", rules.ClassFatal},
		{"unknown host", connect(&net.DNSError{Err: "no such host", Name: "x.test", IsNotFound: true}), "UnknownHostException", rules.ClassUnknownHost},
		{"refused", connect(opErr(syscall.ECONNREFUSED)), "ConnectException", rules.ClassConnect},
		{"no route", connect(opErr(syscall.EHOSTUNREACH)), "NoRouteToHostException", rules.ClassNoRoute},
		{"untrusted certificate", connect(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), "CertificateException", rules.ClassFatal},
		{"TLS alert", connect(tls.AlertError(40)), "SSLException", rules.ClassTLS},
		{"malformed head", wait(errors.New(`malformed HTTP response "junk"`)), "ProtocolException", rules.ClassFatal},
		{"end of stream before the head", wait(&lostError{io.EOF}), "NoHttpResponseException", rules.ClassIO},
		{"reset before the head", wait(&lostError{opErr(syscall.ECONNRESET)}), "SocketException", rules.ClassIO},
		{"broken pipe", wait(&lostError{opErr(syscall.EPIPE)}), "SocketException", rules.ClassIO},
		{"follow-up limit", wait(ownError{errors.New("too many follow-up requests: 21")}), "not an IOException", rules.ClassFatal},
		{"a refused replay", wait(errReplaySuppressed), "IOException", rules.ClassIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.a)
			if !strings.Contains(got.class, tt.class) || got.kind != tt.kind {
				t.Errorf("got %s (%d), want %s (%d)", got.class, got.kind, tt.class, tt.kind)
			}
		})
	}
}

// TestOkRoutes follows OkHttp's route accounting through failures, without sockets.
func TestOkRoutes(t *testing.T) {
	pooled := Attempt{Phase: vocab.PhaseWait, remote: "10.0.0.2"}
	fresh := func(routes int) Attempt { return Attempt{Phase: vocab.PhaseWait, NewConnection: true, routes: routes} }
	pinned := Attempt{Phase: vocab.PhaseWait, NewConnection: true, pinned: true, remote: "10.0.0.2"}
	perAttempt := rules.OkHttp313(rules.OkHttpSettings{}).NewRoutes()
	current := rules.OkHttp314(rules.OkHttpSettings{}).NewRoutes()
	hostOnly := rules.HC5(rules.HC5Settings{}).NewRoutes()
	type step struct {
		a     Attempt
		left  bool
		route int
		pin   string
	}
	tests := []struct {
		name  string
		r     rules.Routes
		steps []step
	}{
		// 3.0 to 3.13: pooled connections use no route; then one new connection per route.
		{"3.13, 2 pooled, 2 routes", perAttempt, []step{
			{pooled, true, 0, ""}, {pooled, true, 0, ""}, {fresh(2), true, 1, ""}, {fresh(2), false, 2, ""}}},
		// 3.13, one route: the pooled connection fails, the one new connection fails, done.
		{"3.13, 1 pooled, 1 route", perAttempt, []step{
			{pooled, true, 0, ""}, {fresh(1), false, 1, ""}}},
		// 3.14: the pooled connection's address is pinned; when the fresh connection to it
		// fails too, the selector's routes follow.
		{"3.14, 1 pooled, 2 routes", current, []step{
			{pooled, true, 0, "10.0.0.2"}, {pinned, true, 0, ""}, {fresh(2), true, 1, ""}, {fresh(2), false, 2, ""}}},
		{"connect failures walk the routes", perAttempt, []step{
			{Attempt{Phase: vocab.PhaseConnect, routes: 3}, true, 1, ""}, {Attempt{Phase: vocab.PhaseConnect, routes: 3}, true, 2, ""},
			{Attempt{Phase: vocab.PhaseConnect, routes: 3}, false, 3, ""}}},
		{"without a route per attempt the host is one route", hostOnly, []step{{fresh(3), false, 1, ""}}},
		{"a name that does not resolve", perAttempt, []step{{Attempt{Phase: vocab.PhaseConnect}, false, 0, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			for i, s := range tt.steps {
				left := r.Failed(s.a.NewConnection || s.a.Phase == vocab.PhaseConnect, s.a.pinned, s.a.routes, s.a.remote)
				route, pin := r.Next()
				if left != s.left || route != s.route || pin != s.pin {
					t.Fatalf("step %d: got left %v, next route %d, pin %q; want %v, %d, %q", i+1, left, route, pin, s.left, s.route, s.pin)
				}
			}
		})
	}
}

// TestCondemn: which pooled connection each check discards before reuse, without sockets.
func TestCondemn(t *testing.T) {
	eof := io.EOF
	tests := []struct {
		name   string
		cfg    Config
		h      health
		method string
		want   error
	}{
		{"fresh connection", Config{ValidateAfterInactivity: time.Second}, health{dead: eof}, "GET", nil},
		{"closed by labrun", Config{}, health{pooled: true, closed: true}, "GET", errClosedPooled},
		{"alive", Config{}, health{pooled: true, idle: time.Hour}, "GET", nil},
		{"watch", Config{}, health{pooled: true, dead: eof}, "GET", errStale},
		{"validate: idle longer", Config{ValidateAfterInactivity: time.Second}, health{pooled: true, idle: 2 * time.Second, dead: eof}, "GET", errStale},
		{"validate: idle exactly the period", Config{ValidateAfterInactivity: time.Second}, health{pooled: true, idle: time.Second, dead: eof}, "GET", nil},
		{"no validation", Config{ValidateAfterInactivity: NoValidation}, health{pooled: true, idle: time.Hour, dead: eof}, "POST", nil},
		{"okhttp POST", Config{Rules: rules.Rules{Reuse: rules.Reuse{Check: rules.CheckNonGet}}}, health{pooled: true, dead: eof}, "POST", errUnhealthy},
		{"okhttp GET", Config{Rules: rules.Rules{Reuse: rules.Reuse{Check: rules.CheckNonGet}}}, health{pooled: true, dead: eof}, "GET", nil},
	}
	for _, tt := range tests {
		if got := tt.cfg.condemn(tt.h, tt.method); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestHC5StatusRetry: DefaultHttpRequestRetryStrategy repeats a 503 once, after Retry-After,
// whatever the method; not with a response timeout under its 1 s default interval (5.6).
func TestHC5StatusRetry(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		method   string
		attempts int
		status   int
		elapsed  time.Duration
	}{
		{"GET after Retry-After: 1", Config{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})}, http.MethodGet, 2, 200, time.Second},
		{"POST too", Config{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})}, http.MethodPost, 2, 200, time.Second},
		{"response timeout under 1 s", Config{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true}), ReadTimeout: 250 * ms}, http.MethodGet, 1, 503, 0},
		{"retries off", Config{}, http.MethodGet, 1, 503, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			}))
			t.Cleanup(s.Close)
			res, err := callOnce(t, newClient(t, tt.cfg), tt.method, s.URL)
			if err != nil || len(res.Attempts) != tt.attempts || res.Status != tt.status {
				t.Fatalf("got %d in %d attempts (%v), want %d in %d", res.Status, len(res.Attempts), err, tt.status, tt.attempts)
			}
			within(t, "elapsed", res.Elapsed, tt.elapsed)
		})
	}
}

// TestEvictor: the evictor closes a connection idle 100 ms at its next check (every 50 ms), so
// the pool is empty before 150 ms and the next call connects anew.
func TestEvictor(t *testing.T) {
	s := newServer(t)
	c := newClient(t, Config{EvictIdle: 100 * ms, EvictInterval: 50 * ms})
	warm(t, c, s.URL)
	start := time.Now()
	waitFor(t, func() bool { return c.Stats().Available == 0 })
	// The connection went idle just before start (up to a few ms): allow 10 ms below 100 ms.
	if got := time.Since(start); got < 90*ms || got > 150*ms+slack {
		t.Errorf("evicted after %v, want between 90 ms and %v", got, 150*ms+slack)
	}
	res, err := get(t, c, s.URL)
	if err != nil || !res.Attempts[0].NewConnection {
		t.Errorf("got %v, new connection %v; want a success on a new connection", err, res.Attempts[0].NewConnection)
	}
	c.Close()
	c.Close() // twice is harmless
}

func TestConfigValidateReuse(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{ValidateAfterInactivity: NoValidation}, ""},
		{Config{ValidateAfterInactivity: HC5ValidateAfterInactivity, Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true}), EvictIdle: 30 * time.Second}, ""},
		{Config{ValidateAfterInactivity: -2}, "client: validate after inactivity must not be negative but NoValidation, got -2ns"},
		{Config{EvictIdle: -1}, "client: evict idle must not be negative, got -1ns"},
		{Config{Rules: rules.Rules{Reuse: rules.Reuse{Check: rules.CheckNonGet}}, ValidateAfterInactivity: time.Second}, "client: OkHttp's health check excludes HttpClient 5's validate after inactivity"},
		{Config{HeadTimeout: -1}, "client: head timeout must not be negative, got -1ns"},
	}
	for _, tt := range tests {
		got := ""
		if err := tt.cfg.Validate(); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.cfg, got, tt.want)
		}
	}
	if got := HC5EvictInterval(30 * time.Second); got != 3*time.Second {
		t.Errorf("HC5EvictInterval(30 s) = %v, want 3 s", got)
	}
	if got := HC5EvictInterval(5 * time.Second); got != time.Second {
		t.Errorf("HC5EvictInterval(5 s) = %v, want 1 s", got)
	}
}

// TestJavaResend: the JDK's and HttpClient 4.5's own re-sends on a pooled connection the server
// closes after reading the request (the dying server answers only a connection's first
// request, so a re-send on a new connection succeeds), with the switches the libraries' system
// properties give: -Djdk.httpclient.enableAllMethodRetry (rules.JDKSettings) and
// -Dsun.net.http.retryPost=false (rules.URLConnectionSettings).
func TestJavaResend(t *testing.T) {
	s := newDying(t, "close", 0)
	for _, tt := range []struct {
		name     string
		cfg      Config
		method   string
		attempts int
	}{
		{"jdk GET", Config{Rules: rules.JDK(rules.JDKSettings{})}, http.MethodGet, 2},
		{"jdk POST", Config{Rules: rules.JDK(rules.JDKSettings{})}, http.MethodPost, 1},
		{"jdk POST, enableAllMethodRetry", Config{Rules: rules.JDK(rules.JDKSettings{EnableAllMethodRetry: true})}, http.MethodPost, 2},
		{"urlconnection POST", Config{Rules: rules.URLConnection(rules.URLConnectionSettings{})}, http.MethodPost, 2},
		{"urlconnection POST, retryPost=false", Config{Rules: rules.URLConnection(rules.URLConnectionSettings{NoRetryPost: true})}, http.MethodPost, 1},
		{"urlconnection PUT, retryPost=false", Config{Rules: rules.URLConnection(rules.URLConnectionSettings{NoRetryPost: true})}, http.MethodPut, 2},
		{"hc4 DELETE", Config{Rules: rules.HC4()}, http.MethodDelete, 2},
		{"hc4 PUT", Config{Rules: rules.HC4()}, http.MethodPut, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.ValidateAfterInactivity = NoValidation
			c := newClient(t, tt.cfg)
			warm(t, c, s.URL)
			res, _ := callOnce(t, c, tt.method, s.URL)
			if len(res.Attempts) != tt.attempts {
				t.Errorf("got %d attempts (%s), want %d", len(res.Attempts), res.Outcome, tt.attempts)
			}
		})
	}
}
