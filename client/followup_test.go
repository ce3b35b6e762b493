package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// oneShot is a request body that net/http cannot rewind: no GetBody.
type oneShot struct{ io.Reader }

// followCase is one follow-up rule put to the model and to the client against a fake server.
type followCase struct {
	name    string
	cfg     Config
	p       rules.Rules
	rules   model.FollowRules
	method  string
	oneShot bool
	path    string
	answers []model.Answer
}

// TestFollowUpsMatchModel ties the client's follow-up rules to the model's: for every rule,
// the server receives the requests the model predicts (methods, and whether each had a body),
// and the call ends as predicted.
func TestFollowUpsMatchModel(t *testing.T) {
	ok := Config{Rules: rules.OkHttp313(rules.OkHttpSettings{})}
	okR := model.FollowRules{RetryOnConnectionFailure: true}
	hc5 := Config{Rules: rules.HC5(rules.HC5Settings{})}
	hc4 := Config{Rules: rules.HC4()}
	urlc := Config{Rules: rules.URLConnection(rules.URLConnectionSettings{})}
	noRecovery := rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true})
	with := func(c Config, f FollowOptions) Config { c.Follow = f; return c }
	to200 := func(code int) []model.Answer {
		return []model.Answer{{Status: code, Location: model.NewURL}, {Status: 200}}
	}
	tests := []followCase{
		{"okhttp: 408 twice", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "POST", false, "/flaky/408?id=a&times=2", []model.Answer{{Status: 408}, {Status: 408}, {Status: 200}}},
		{"okhttp: 408 once", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "POST", false, "/flaky/408?id=a", []model.Answer{{Status: 408}, {Status: 200}}},
		{"okhttp: 408, no recovery", Config{Rules: noRecovery}, noRecovery, model.FollowRules{}, "POST", false, "/status/408", []model.Answer{{Status: 408}}},
		{"okhttp: 408, Retry-After 1", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "POST", false, "/status/408?retry-after=1", []model.Answer{{Status: 408, RetryAfter: "1"}}},
		{"okhttp: 408, Retry-After 0", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "POST", false, "/status/408?retry-after=0", []model.Answer{{Status: 408, RetryAfter: "0"}}},
		{"okhttp: 408, one-shot body", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "POST", true, "/status/408", []model.Answer{{Status: 408}}},
		{"okhttp: 503 twice, Retry-After 0", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "GET", false, "/status/503?retry-after=0", []model.Answer{{Status: 503, RetryAfter: "0"}}},
		{"okhttp: 503, Retry-After +0", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "GET", false, "/status/503?retry-after=%2B0", []model.Answer{{Status: 503, RetryAfter: "+0"}}},
		{"okhttp: POST 307", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "POST", false, "/moved/307", to200(307)},
		{"okhttp: GET 308", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "GET", false, "/moved/308", to200(308)},
		{"okhttp: POST 302", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "POST", false, "/moved/302", to200(302)},
		{"okhttp: POST 303, one-shot body", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "POST", true, "/moved/303", to200(303)},
		{"okhttp: 300", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "GET", false, "/moved/300", to200(300)},
		{"okhttp: followRedirects(false)", with(ok, FollowOptions{NoRedirects: true}), rules.OkHttp313(rules.OkHttpSettings{}), model.FollowRules{RetryOnConnectionFailure: true, NoRedirects: true}, "GET", false, "/moved/302", to200(302)},
		{"okhttp: redirect loop", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "GET", false, "/redirect-loop", []model.Answer{{Status: 302, Location: model.SameURL}}},
		{"okhttp: 401", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "GET", false, "/challenge/401", []model.Answer{{Status: 401}}},
		{"okhttp: 401, always answering", with(ok, FollowOptions{Authenticate: true}), rules.OkHttp313(rules.OkHttpSettings{}), model.FollowRules{RetryOnConnectionFailure: true, Authenticate: true}, "GET", false, "/challenge/401", []model.Answer{{Status: 401}}},
		{"okhttp: 401, always answering, one-shot body", with(ok, FollowOptions{Authenticate: true}), rules.OkHttp313(rules.OkHttpSettings{}), model.FollowRules{RetryOnConnectionFailure: true, Authenticate: true}, "POST", true, "/challenge/401", []model.Answer{{Status: 401}}},
		{"okhttp: 407", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "GET", false, "/challenge/407", []model.Answer{{Status: 407}}},
		{"okhttp: 421", ok, rules.OkHttp313(rules.OkHttpSettings{}), okR, "GET", false, "/status/421", []model.Answer{{Status: 421}}},
		{"hc5: POST 307", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "POST", false, "/moved/307", to200(307)},
		{"hc5: POST 301", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "POST", false, "/moved/301", to200(301)},
		{"hc5: PUT 302", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "PUT", false, "/moved/302", to200(302)},
		{"hc5: PUT 303", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "PUT", false, "/moved/303", to200(303)},
		{"hc5: POST 308, one-shot body", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "POST", true, "/moved/308", to200(308)},
		{"hc5: disableRedirectHandling", with(hc5, FollowOptions{NoRedirects: true}), rules.HC5(rules.HC5Settings{}), model.FollowRules{NoRedirects: true}, "GET", false, "/moved/302", to200(302)},
		{"hc5: redirect loop", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "GET", false, "/redirect-loop", []model.Answer{{Status: 302, Location: model.SameURL}}},
		{"hc5: redirected to a URL that redirects to itself", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "GET", false, "/moved/302?to=/redirect-loop",
			[]model.Answer{{Status: 302, Location: model.NewURL}, {Status: 302, Location: model.SameURL}}},
		{"hc5: 60 redirects", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "GET", false, "/redirect/60", chainAnswers(60)},
		{"hc5: redirected to a URL that redirects to itself", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "GET", false, "/moved/302?to=/redirect-loop",
			[]model.Answer{{Status: 302, Location: model.NewURL}, {Status: 302, Location: model.SameURL}}},
		{"hc5: 408", hc5, rules.HC5(rules.HC5Settings{}), model.FollowRules{}, "POST", false, "/status/408", []model.Answer{{Status: 408}}},
		// The rules of the profiles whose redirects only the model followed before the client
		// ran the rules' step.
		{"hc4: POST 302 is returned", hc4, rules.HC4(), model.FollowRules{}, "POST", false, "/moved/302", to200(302)},
		{"hc4: POST 303", hc4, rules.HC4(), model.FollowRules{}, "POST", false, "/moved/303", to200(303)},
		{"hc4: redirect loop", hc4, rules.HC4(), model.FollowRules{}, "GET", false, "/redirect-loop", []model.Answer{{Status: 302, Location: model.SameURL}}},
		{"urlconnection: POST 302", urlc, rules.URLConnection(rules.URLConnectionSettings{}), model.FollowRules{}, "POST", false, "/moved/302", to200(302)},
		{"urlconnection: POST 307", urlc, rules.URLConnection(rules.URLConnectionSettings{}), model.FollowRules{}, "POST", false, "/moved/307", to200(307)},
		{"urlconnection: redirect loop", urlc, rules.URLConnection(rules.URLConnectionSettings{}), model.FollowRules{}, "GET", false, "/redirect-loop", []model.Answer{{Status: 302, Location: model.SameURL}}},
		{"jdk: Redirect.NEVER", Config{Rules: rules.JDK(rules.JDKSettings{})}, rules.JDK(rules.JDKSettings{}), model.FollowRules{}, "GET", false, "/moved/302", to200(302)},
		{"no follow-ups without a rule", Config{}, rules.HC5(rules.HC5Settings{}), model.FollowRules{NoRedirects: true}, "GET", false, "/moved/302", to200(302)},
	}
	srv := followServer(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.cfg)
			checkFollowUps(t, srv, c.Do, tt.p, tt.rules, tt.method, tt.oneShot, tt.path, tt.answers)
		})
	}
}

// checkFollowUps sends method to srv's path with do (a body for all but GET, one-shot when
// asked) and checks that the server received the requests the model predicts for profile p
// and rules, and that the call ends as predicted, a failure with the library's words.
func checkFollowUps(t *testing.T, srv *fakesrv.Server, do func(context.Context, *http.Request) (*Result, error),
	p rules.Rules, rules model.FollowRules, method string, oneShotBody bool, path string, answers []model.Answer) {
	t.Helper()
	srv.Reset()
	var body io.Reader
	if method != "GET" {
		body = strings.NewReader("order=1")
		if oneShotBody {
			body = oneShot{body}
		}
	}
	req, err := http.NewRequest(method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := do(context.Background(), req)
	want := model.FollowUps(p, rules, model.FollowCall{Method: method, Body: body != nil, OneShot: oneShotBody, Answers: answers})
	if got := sentBy(srv); !reflect.DeepEqual(got, want.Sent) {
		t.Errorf("server got %v, want %v", got, want.Sent)
	}
	if res.Outcome != want.Outcome || (want.Outcome == vocab.OK && res.Status != want.Status) {
		t.Errorf("got %s, status %d (%v); want %s, status %d (%s)", res.Outcome, res.Status, err, want.Outcome, want.Status, want.Err)
	}
	var e *Error
	if want.Outcome == vocab.Failed && (!errors.As(err, &e) ||
		!strings.Contains(strings.ToLower(err.Error()), strings.ToLower(want.Err))) {
		t.Errorf("got error %v, want one saying %q", err, want.Err)
	}
}

// followServer starts a fake server that is closed when the test ends.
func followServer(t *testing.T) *fakesrv.Server {
	t.Helper()
	srv, err := fakesrv.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// chainAnswers is /redirect/N's answers: N redirects to new URLs, then 200.
func chainAnswers(n int) []model.Answer {
	a := make([]model.Answer, n+1)
	for i := range n {
		a[i] = model.Answer{Status: 302, Location: model.NewURL}
	}
	a[n] = model.Answer{Status: 200}
	return a
}

// sentBy returns the requests the server received, in the model's terms.
func sentBy(srv *fakesrv.Server) []model.Sent {
	var out []model.Sent
	for _, r := range srv.Requests() {
		out = append(out, model.Sent{Method: r.Method, Body: r.BodyBytes > 0})
	}
	return out
}

// TestHealthCheckOverTLS: OkHttp's health check hides a pooled connection's background read
// from net/http; the reads of a new connection's TLS handshake are not that and must reach
// it, or the handshake never ends. Two calls: a new connection, then the pooled one.
func TestHealthCheckOverTLS(t *testing.T) {
	srv, err := fakesrv.New(fakesrv.WithProtocol(fakesrv.HTTP1TLS))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c := newClient(t, Config{TLS: srv.ClientTLS(), Rules: rules.Rules{Reuse: rules.Reuse{Check: rules.CheckNonGet}}, ConnectTimeout: 5 * time.Second})
	for i := range 2 {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/echo", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Do(context.Background(), req)
		if err != nil || res.Status != 200 {
			t.Fatalf("call %d: got %d, %v; want 200", i+1, res.Status, err)
		}
	}
	if got := srv.ConnsAccepted(); got != 1 {
		t.Errorf("server accepted %d connections, want 1 (the second call reuses the first's)", got)
	}
}

func TestFollowOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Rules: rules.OkHttp313(rules.OkHttpSettings{}), Follow: FollowOptions{NoSslRedirects: true, Authenticate: true}}, ""},
		{Config{Rules: rules.HC5(rules.HC5Settings{}), Follow: FollowOptions{NoRedirects: true}}, ""},
		{Config{Follow: FollowOptions{NoRedirects: true}}, "client: follow options need a follow-up rule (Rules.FollowUps)"},
		{Config{Rules: rules.JDK(rules.JDKSettings{}), Follow: FollowOptions{NoRedirects: true}}, "client: follow options need a follow-up rule (Rules.FollowUps)"},
		{Config{Rules: rules.HC5(rules.HC5Settings{}), Follow: FollowOptions{Authenticate: true}}, "client: Apache HttpClient 5.2.1 follows up without an authenticator"},
		{Config{Rules: rules.HC5(rules.HC5Settings{}), Follow: FollowOptions{NoSslRedirects: true, Authenticate: true}},
			"client: Apache HttpClient 5.2.1 follows up without followSslRedirects(false) or an authenticator"},
	} {
		got := ""
		if err := tt.cfg.Validate(); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.cfg.Follow, got, tt.want)
		}
	}
}

// TestGoClientFollowUps ties GoClient, which is net/http's own Client, to the model's Go rules:
// redirectBehavior with and without GetBody, CheckRedirect's limit and UseLastResponse.
func TestGoClientFollowUps(t *testing.T) {
	srv := followServer(t)
	to200 := func(code int) []model.Answer {
		return []model.Answer{{Status: code, Location: model.NewURL}, {Status: 200}}
	}
	for _, tt := range []struct {
		name     string
		cfg      GoConfig
		method   string
		oneShot  bool
		path     string
		answers  []model.Answer
		noFollow bool
	}{
		{"POST 307", GoConfig{}, "POST", false, "/moved/307", to200(307), false},
		{"one-shot POST 308", GoConfig{}, "POST", true, "/moved/308", to200(308), false},
		{"POST 303", GoConfig{}, "POST", false, "/moved/303", to200(303), false},
		{"UseLastResponse", GoConfig{UseLastResponse: true}, "GET", false, "/moved/302", to200(302), true},
		{"redirect loop", GoConfig{}, "GET", false, "/redirect-loop", []model.Answer{{Status: 302, Location: model.SameURL}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := NewGo(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(g.Close)
			checkFollowUps(t, srv, g.Do, rules.GoNet(), model.FollowRules{NoRedirects: tt.noFollow}, tt.method, tt.oneShot, tt.path, tt.answers)
		})
	}
}

// TestFollowUpErrorWords holds the errors of the follow-up rules the client runs to the
// libraries' messages in Go's words, byte for byte: what exp-d shows in its rows.
func TestFollowUpErrorWords(t *testing.T) {
	srv := followServer(t)
	okhttp := Config{Rules: rules.OkHttp313(rules.OkHttpSettings{})}
	hc5 := Config{Rules: rules.HC5(rules.HC5Settings{})}
	for _, tt := range []struct {
		name   string
		cfg    Config
		method string
		path   string
		want   string
	}{
		// OkHttp 3.13.1 RetryAndFollowUpInterceptor.intercept and followUpRequest.
		{"okhttp: redirect loop", okhttp, "GET", "/redirect-loop", "too many follow-up requests: 21"},
		{"okhttp: one-shot POST 401, an authenticator", Config{Rules: okhttp.Rules, Follow: FollowOptions{Authenticate: true}}, "POST", "/challenge/401", "cannot retry streamed HTTP body"},
		{"okhttp: 407", okhttp, "GET", "/challenge/407", "received HTTP_PROXY_AUTH (407) code while not using proxy"},
		// HttpClient 5.2.1 RedirectExec.
		{"hc5: 60 redirects", hc5, "GET", "/redirect/60", "maximum redirects (50) exceeded"},
		{"hc5: redirect loop", hc5, "GET", "/redirect-loop?call=7", "circular redirect to '/redirect-loop?call=7'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.cfg)
			var body io.Reader
			if tt.method != "GET" {
				body = oneShot{strings.NewReader("order=1")}
			}
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Do(context.Background(), req)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			if got := e.Err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFollowUpHeaders: the client builds what the rule asks for from the live request:
// OkHttp's Basic credentials for a 401 (an authenticator that always answers), its
// Authorization dropped on a redirect to another host or port and kept on the same one;
// HttpClient 5 keeps the original request's headers.
func TestFollowUpHeaders(t *testing.T) {
	var got []string // the Authorization header of each request the servers received, in order
	var mu sync.Mutex
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
	}
	other := httptest.NewServer(http.HandlerFunc(record))
	t.Cleanup(other.Close)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(w, r)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/echo", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/echo", http.StatusFound)
		case "/challenge":
			if calls.Add(1) == 1 {
				w.WriteHeader(http.StatusUnauthorized)
			}
		}
	}))
	t.Cleanup(srv.Close)
	basic := "Basic bGFicnVuOmxhYnJ1bg==" // labrun:labrun
	for _, tt := range []struct {
		name string
		cfg  Config
		path string
		auth string
		want []string
	}{
		{"okhttp: another port", Config{Rules: rules.OkHttp313(rules.OkHttpSettings{})}, "/away", "Bearer x", []string{"Bearer x", ""}},
		{"okhttp: the same server", Config{Rules: rules.OkHttp313(rules.OkHttpSettings{})}, "/here", "Bearer x", []string{"Bearer x", "Bearer x"}},
		{"okhttp: 401, an authenticator", Config{Rules: rules.OkHttp313(rules.OkHttpSettings{}), Follow: FollowOptions{Authenticate: true}}, "/challenge", "", []string{"", basic}},
		{"hc5: another port", Config{Rules: rules.HC5(rules.HC5Settings{})}, "/away", "Bearer x", []string{"Bearer x", "Bearer x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			c := newClient(t, tt.cfg)
			req, err := http.NewRequest(http.MethodGet, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			if res, err := c.Do(context.Background(), req); err != nil || res.Status != 200 {
				t.Fatalf("got %v, %v; want 200", res.Status, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("the servers got Authorization %q, want %q", got, tt.want)
			}
		})
	}
}
