package experiments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// FollowUps is experiment D: responses after which a client sends a request again, or
// another one, by itself. Each row is one rule of OkHttp's RetryAndFollowUpInterceptor
// (3.13's followUpRequest), of net/http's Client (redirectBehavior, CheckRedirect) or of
// HttpClient 5's RedirectExec, put to the client and to the model: how many requests the
// server receives, with which methods and bodies, and how the call ends. It compares the
// okhttp, go and hc5 profiles by design (FixedProfiles), so it takes no --client.
type FollowUps struct{}

// NewFollowUps returns experiment D.
func NewFollowUps() *FollowUps { return &FollowUps{} }

// Info implements Experiment.
func (*FollowUps) Info() Info {
	return Info{
		Name:  "exp-d",
		Topic: "follow-ups",
		Title: "follow-ups that repeat a request",
		Description: "The server answers 408, 503 with a Retry-After, a redirect of every kind, a redirect loop, " +
			"a 401 or 407 challenge. OkHttp 3.13 repeats a request answered 408 once, even a POST (once " +
			"more when retryOnConnectionFailure is off, or Retry-After asks for a delay, or the body " +
			"is one-shot), repeats a 503 once only on Retry-After: 0, follows 307 and 308 only for GET " +
			"and HEAD, turns a POST redirected by 301, 302 or 303 into a GET without its body, and " +
			"fails after 20 follow-ups; net/http keeps the POST and its body across 307 and 308, " +
			"repeats no 408 or 503 and stops after 10 redirects; HttpClient 5 keeps them too, refuses " +
			"a circular redirect and stops after 50. Each row compares the requests the server " +
			"received (methods, bodies) and the outcome with the model's. It runs the okhttp, go " +
			"and hc5 profiles by design and takes no --client.",
		Examples: []string{"labrun exp-d", "labrun exp-d --format json"},
	}
}

// Params implements Experiment: experiment D has none.
func (*FollowUps) Params() []Param { return nil }

// Profiles implements FixedProfiles.
func (*FollowUps) Profiles() []string { return []string{ProfileOkHttp, ProfileGo, ProfileHC5} }

// followUp is one row of experiment D: a request, the server's answers, the client that sends
// it and the library release whose rule it shows.
type followUp struct {
	name    string
	profile string
	s       lab.Spec
	method  string
	oneShot bool // a body the client cannot send again
	https   bool // path is on the https server, which redirects to the http one
	path    string
	answers []model.Answer
	release string // whose rule: "OkHttp 3.13.1 = 4.x", "OkHttp 3.13.1" where 4.x differs
	docExec int    // the requests the library's source says the server receives
}

// Sources of the rules, for the rows' documented column: the release whose source labrun
// reads (docs/experiments.md, exp-d, names the class and method of each).
const (
	okBoth   = "OkHttp 3.13.1 = 4.x"
	ok313    = "OkHttp 3.13.1"
	goSource = "Go 1.26 net/http"
	hc5Src   = "HttpClient 5.2.1"
)

// followUps are experiment D's rows.
func followUps() []followUp {
	noRetry := lab.Spec{NoRouteRetry: true}
	noRedirects := lab.Spec{Follow: client.FollowOptions{NoRedirects: true}}
	auth := lab.Spec{Follow: client.FollowOptions{Authenticate: true}}
	noSsl := lab.Spec{Follow: client.FollowOptions{NoSslRedirects: true}}
	a := func(status int) model.Answer { return model.Answer{Status: status} }
	ra := func(status int, v string) model.Answer { return model.Answer{Status: status, RetryAfter: v} }
	to := func(status int) []model.Answer {
		return []model.Answer{{Status: status, Location: model.NewURL}, a(200)}
	}
	loop := []model.Answer{{Status: 302, Location: model.SameURL}}
	chain := func(n int) []model.Answer {
		out := make([]model.Answer, n+1)
		for i := range n {
			out[i] = model.Answer{Status: 302, Location: model.NewURL}
		}
		out[n] = a(200)
		return out
	}
	toHTTP := []model.Answer{{Status: 302, Location: model.PlainHTTP}, a(200)}
	const post, get = http.MethodPost, http.MethodGet
	return []followUp{
		// OkHttp: 408.
		{"okhttp: POST answered 408 twice", ProfileOkHttp, lab.Spec{}, post, false, false, "/flaky/408?times=2", []model.Answer{a(408), a(408), a(200)}, okBoth, 2},
		{"okhttp: POST answered 408, then 200", ProfileOkHttp, lab.Spec{}, post, false, false, "/flaky/408", []model.Answer{a(408), a(200)}, okBoth, 2},
		{"okhttp, retryOnConnectionFailure off: POST answered 408", ProfileOkHttp, noRetry, post, false, false, "/status/408", []model.Answer{a(408)}, okBoth, 1},
		{"okhttp: POST answered 408, Retry-After: 1", ProfileOkHttp, lab.Spec{}, post, false, false, "/status/408?retry-after=1", []model.Answer{ra(408, "1")}, okBoth, 1},
		{"okhttp: POST answered 408, Retry-After: 0", ProfileOkHttp, lab.Spec{}, post, false, false, "/status/408?retry-after=0", []model.Answer{ra(408, "0")}, okBoth, 2},
		{"okhttp: one-shot POST answered 408", ProfileOkHttp, lab.Spec{}, post, true, false, "/status/408", []model.Answer{a(408)}, okBoth, 1},
		// OkHttp: 503.
		{"okhttp: 503 twice, Retry-After: 0", ProfileOkHttp, lab.Spec{}, get, false, false, "/status/503?retry-after=0", []model.Answer{ra(503, "0")}, okBoth, 2},
		{"okhttp: 503, Retry-After: 0, then 200", ProfileOkHttp, lab.Spec{}, get, false, false, "/flaky/503?retry-after=0", []model.Answer{ra(503, "0"), a(200)}, okBoth, 2},
		{"okhttp: 503, Retry-After: 5", ProfileOkHttp, lab.Spec{}, get, false, false, "/status/503?retry-after=5", []model.Answer{ra(503, "5")}, okBoth, 1},
		// OkHttp: redirects.
		{"okhttp: POST answered 307", ProfileOkHttp, lab.Spec{}, post, false, false, "/moved/307", to(307), ok313, 1},
		{"okhttp: POST answered 308", ProfileOkHttp, lab.Spec{}, post, false, false, "/moved/308", to(308), ok313, 1},
		{"okhttp: GET answered 307", ProfileOkHttp, lab.Spec{}, get, false, false, "/moved/307", to(307), okBoth, 2},
		{"okhttp: POST answered 301", ProfileOkHttp, lab.Spec{}, post, false, false, "/moved/301", to(301), okBoth, 2},
		{"okhttp: POST answered 302", ProfileOkHttp, lab.Spec{}, post, false, false, "/moved/302", to(302), okBoth, 2},
		{"okhttp: POST answered 303", ProfileOkHttp, lab.Spec{}, post, false, false, "/moved/303", to(303), okBoth, 2},
		{"okhttp, followRedirects(false): GET answered 302", ProfileOkHttp, noRedirects, get, false, false, "/moved/302", to(302), okBoth, 1},
		{"okhttp: https redirected to http", ProfileOkHttp, lab.Spec{}, get, false, true, "/moved/302", toHTTP, okBoth, 2},
		{"okhttp, followSslRedirects(false): https redirected to http", ProfileOkHttp, noSsl, get, false, true, "/moved/302", toHTTP, okBoth, 1},
		{"okhttp: redirect loop", ProfileOkHttp, lab.Spec{}, get, false, false, "/redirect-loop", loop, okBoth, 21},
		{"okhttp: 25 redirects", ProfileOkHttp, lab.Spec{}, get, false, false, "/redirect/25", chain(25), okBoth, 21},
		// OkHttp: authentication and the rest.
		{"okhttp: 401, default authenticator", ProfileOkHttp, lab.Spec{}, get, false, false, "/challenge/401", []model.Answer{a(401)}, okBoth, 1},
		{"okhttp: 401, an authenticator that always answers", ProfileOkHttp, auth, get, false, false, "/challenge/401", []model.Answer{a(401)}, okBoth, 21},
		{"okhttp: 407 without a proxy", ProfileOkHttp, lab.Spec{}, get, false, false, "/challenge/407", []model.Answer{a(407)}, okBoth, 1},
		{"okhttp: 421 Misdirected Request", ProfileOkHttp, lab.Spec{}, get, false, false, "/status/421", []model.Answer{a(421)}, ok313, 1},

		// net/http.
		{"go: POST answered 408", ProfileGo, lab.Spec{}, post, false, false, "/status/408", []model.Answer{a(408)}, goSource, 1},
		{"go: 503, Retry-After: 0", ProfileGo, lab.Spec{}, get, false, false, "/status/503?retry-after=0", []model.Answer{ra(503, "0")}, goSource, 1},
		{"go: POST answered 307", ProfileGo, lab.Spec{}, post, false, false, "/moved/307", to(307), goSource, 2},
		{"go: POST answered 308", ProfileGo, lab.Spec{}, post, false, false, "/moved/308", to(308), goSource, 2},
		{"go: one-shot POST answered 307", ProfileGo, lab.Spec{}, post, true, false, "/moved/307", to(307), goSource, 1},
		{"go: POST answered 301", ProfileGo, lab.Spec{}, post, false, false, "/moved/301", to(301), goSource, 2},
		{"go: POST answered 302", ProfileGo, lab.Spec{}, post, false, false, "/moved/302", to(302), goSource, 2},
		{"go: POST answered 303", ProfileGo, lab.Spec{}, post, false, false, "/moved/303", to(303), goSource, 2},
		{"go, ErrUseLastResponse: GET answered 302", ProfileGo, noRedirects, get, false, false, "/moved/302", to(302), goSource, 1},
		{"go: https redirected to http", ProfileGo, lab.Spec{}, get, false, true, "/moved/302", toHTTP, goSource, 2},
		{"go: redirect loop", ProfileGo, lab.Spec{}, get, false, false, "/redirect-loop", loop, goSource, 10},
		{"go: 25 redirects", ProfileGo, lab.Spec{}, get, false, false, "/redirect/25", chain(25), goSource, 10},
		{"go: 401", ProfileGo, lab.Spec{}, get, false, false, "/challenge/401", []model.Answer{a(401)}, goSource, 1},
		{"go: 407", ProfileGo, lab.Spec{}, get, false, false, "/challenge/407", []model.Answer{a(407)}, goSource, 1},

		// HttpClient 5 (automatic retries disabled, the hc5 profile's default).
		{"hc5: POST answered 408", ProfileHC5, lab.Spec{}, post, false, false, "/status/408", []model.Answer{a(408)}, hc5Src, 1},
		{"hc5: POST answered 307", ProfileHC5, lab.Spec{}, post, false, false, "/moved/307", to(307), hc5Src, 2},
		{"hc5: POST answered 308", ProfileHC5, lab.Spec{}, post, false, false, "/moved/308", to(308), hc5Src, 2},
		{"hc5: one-shot POST answered 307", ProfileHC5, lab.Spec{}, post, true, false, "/moved/307", to(307), hc5Src, 1},
		{"hc5: one-shot POST answered 302", ProfileHC5, lab.Spec{}, post, true, false, "/moved/302", to(302), hc5Src, 1},
		{"hc5: POST answered 301", ProfileHC5, lab.Spec{}, post, false, false, "/moved/301", to(301), hc5Src, 2},
		{"hc5: POST answered 302", ProfileHC5, lab.Spec{}, post, false, false, "/moved/302", to(302), hc5Src, 2},
		{"hc5: POST answered 303", ProfileHC5, lab.Spec{}, post, false, false, "/moved/303", to(303), hc5Src, 2},
		{"hc5, disableRedirectHandling(): GET answered 302", ProfileHC5, noRedirects, get, false, false, "/moved/302", to(302), hc5Src, 1},
		{"hc5: https redirected to http", ProfileHC5, lab.Spec{}, get, false, true, "/moved/302", toHTTP, hc5Src, 2},
		{"hc5: redirect loop", ProfileHC5, lab.Spec{}, get, false, false, "/redirect-loop", loop, hc5Src, 2},
		{"hc5: 60 redirects", ProfileHC5, lab.Spec{}, get, false, false, "/redirect/60", chain(60), hc5Src, 51},
		{"hc5: 401", ProfileHC5, lab.Spec{}, get, false, false, "/challenge/401", []model.Answer{a(401)}, hc5Src, 1},
		{"hc5: 407", ProfileHC5, lab.Spec{}, get, false, false, "/challenge/407", []model.Answer{a(407)}, hc5Src, 1},
	}
}

// rules returns the model's follow-up settings for the row's client.
func (r followUp) rules(l model.Limits) model.FollowRules {
	return model.FollowRules{RetryOnConnectionFailure: l.Rules.Resend.On, NoRedirects: r.s.Follow.NoRedirects,
		NoSslRedirects: r.s.Follow.NoSslRedirects, Authenticate: r.s.Follow.Authenticate}
}

// call is the row's request in the model's terms.
func (r followUp) call() model.FollowCall {
	return model.FollowCall{Method: r.method, Body: r.method != http.MethodGet, OneShot: r.oneShot, HTTPS: r.https, Answers: r.answers}
}

// followServers are the fake servers of experiment D: plain http, and https for the rows
// redirected from https to http.
type followServers struct {
	plain, tls *fakesrv.Server
}

func newFollowServers() (*followServers, error) {
	plain, err := lab.NewServer()
	if err != nil {
		return nil, err
	}
	tls, err := lab.NewServer(fakesrv.WithProtocol(fakesrv.HTTP1TLS))
	if err != nil {
		plain.Close()
		return nil, err
	}
	return &followServers{plain: plain, tls: tls}, nil
}

func (f *followServers) Close() { f.plain.Close(); f.tls.Close() }

// url returns the URL of r's first request: on the https server, redirected to the plain
// server's /echo, or on the plain server. It carries the tag call=id, which every redirect
// keeps, and /flaky's conversation id.
func (f *followServers) url(r followUp, id string) string {
	path := r.path
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	path += sep + "call=" + url.QueryEscape(id)
	if strings.HasPrefix(r.path, "/flaky/") {
		path += "&id=" + url.QueryEscape(id)
	}
	if r.https {
		return f.tls.URL + path + "&to=" + url.QueryEscape(f.plain.URL+"/echo")
	}
	return f.plain.URL + path
}

// received returns the requests both servers received since their reset, https first.
func (f *followServers) received() []fakesrv.Request {
	return append(f.tls.Requests(), f.plain.Requests()...)
}

// Run implements Experiment.
func (f *FollowUps) Run(ctx context.Context, opt Options) (results.Run, error) {
	return experimentRun(f, opt, func(run *results.Run) error {
		srv, err := newFollowServers()
		if err != nil {
			return err
		}
		defer srv.Close()
		rows := followUps()
		for i, r := range rows {
			opt.progress(0, "%s · row %d/%d: %s", f.Info().Name, i+1, len(rows), r.name)
			row, res, err := f.row(ctx, srv, r, strconv.Itoa(i))
			if err != nil {
				return err
			}
			run.Rows = append(run.Rows, row)
			run.Calls = append(run.Calls, lab.Timeline(r.name, res, 0))
		}
		return nil
	})
}

// row sends r's request once with r's client and compares the requests the servers got, and
// the outcome, with the model's.
func (f *FollowUps) row(ctx context.Context, srv *followServers, r followUp, id string) (row results.Row, res *client.Result, err error) {
	s := r.s
	if r.https {
		s.TLS = srv.tls.ClientTLS()
	}
	b, err := lab.Build(r.profile, s)
	if err != nil {
		return row, nil, err
	}
	srv.plain.Reset()
	srv.tls.Reset()
	res, err = sendFollowUp(ctx, b.C, srv.url(r, id), r.method, r.oneShot)
	b.C.Close()
	if err != nil {
		return row, nil, err
	}
	if err := ctx.Err(); err != nil {
		return row, nil, err
	}
	want := model.FollowUps(b.Limits.Rules, r.rules(b.Limits), r.call())
	got := srv.received()
	row = lab.Judged(r.name, lab.Documented(r.release, nil, results.Count(r.docExec)),
		lab.Ended(results.State(string(want.Outcome)+": "+model.DescribeSent(want.Sent)), results.State(string(res.Outcome)+": "+model.DescribeSent(sentOf(got)))),
		lab.Calls(1, 1), lab.Executions(results.Count(len(want.Sent)), results.Count(len(got))),
		lab.Saw(vocab.Plural(len(got), "request")))
	if want.Outcome == vocab.OK {
		row.ExpectedStatus = results.Count(want.Status)
	}
	if res.Outcome == vocab.OK {
		row.Status = results.Count(res.Status)
	} else if n := len(res.Attempts); n > 0 && res.Attempts[n-1].Err != nil {
		row.Server += "; client: " + cause(res.Attempts[n-1].Err)
	}
	return row, res, nil
}

// sentOf is the requests a server received, in the model's terms.
func sentOf(log []fakesrv.Request) []model.Sent {
	out := make([]model.Sent, len(log))
	for i, r := range log {
		out[i] = model.Sent{Method: r.Method, Body: r.BodyBytes > 0}
	}
	return out
}

// oneShotBody is a request body net/http cannot rewind: the request has no GetBody.
type oneShotBody struct{ io.Reader }

// sendFollowUp sends one request, with a small body for a POST: replayable, or one-shot.
func sendFollowUp(ctx context.Context, c lab.Caller, target, method string, oneShot bool) (*client.Result, error) {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("order=42")
		if oneShot {
			body = oneShotBody{body}
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	res, _ := c.Do(ctx, req)
	return res, nil
}

// cause is what a reader needs of a failed call's error: the library's own words ("stopped
// after 10 redirects", "too many follow-up requests: 21"), without the wrapping.
func cause(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		err = ce.Err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
