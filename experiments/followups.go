package experiments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// FollowUps is experiment D: responses that make a client send the request again. OkHttp
// repeats a POST answered 408 (the server executes it twice), repeats a 503 only on
// Retry-After: 0, and gives up on a redirect loop after 20 follow-ups; Go's net/http repeats
// neither and stops after 10 redirects. It compares the okhttp and go profiles by design
// (FixedProfiles), so it takes no --client.
type FollowUps struct{}

// NewFollowUps returns experiment D.
func NewFollowUps() *FollowUps { return &FollowUps{} }

// Info implements Experiment.
func (*FollowUps) Info() Info {
	return Info{
		Name:  "exp-d",
		Title: "follow-ups that repeat a request",
		Description: "The server answers 408, 503 with a Retry-After, or redirects to itself forever. " +
			"OkHttp's follow-up rules repeat a request answered 408 once, even a POST, so the " +
			"server executes it twice (once when retryOnConnectionFailure is off); they repeat a " +
			"503 once only on Retry-After: 0; and they fail a redirect loop with \"too many " +
			"follow-up requests: 21\" after 21 requests. Go's net/http repeats no 408 or 503 and " +
			"stops after 10 redirects. Each row compares the server's request count with the " +
			"model's. It runs the okhttp and go profiles by design and takes no --client.",
		Examples: []string{"labrun exp-d", "labrun exp-d --format json"},
	}
}

// Params implements Experiment: experiment D has none.
func (*FollowUps) Params() []param.Param { return nil }

// Profiles implements FixedProfiles.
func (*FollowUps) Profiles() []string { return []string{ProfileOkHttp, ProfileGo} }

// followUp is one row of experiment D: a request, the answer the server gives it every time,
// and the client that sends it.
type followUp struct {
	name     string
	profile  string
	noRetry  bool // retryOnConnectionFailure off
	method   string
	path     string
	endpoint string // the server's name for path, which counts its requests
	resp     model.Response
	doc      string // the documented figure, and the documented request count
	docExec  int
}

// followUps are experiment D's rows.
func followUps() []followUp {
	return []followUp{
		{"okhttp: POST answered 408", ProfileOkHttp, false, http.MethodPost, "/status/408", "status", model.Response{Status: 408}, "executed twice", 2},
		{"okhttp, retryOnConnectionFailure off: POST answered 408", ProfileOkHttp, true, http.MethodPost, "/status/408", "status", model.Response{Status: 408}, "", 0},
		{"go: POST answered 408", ProfileGo, false, http.MethodPost, "/status/408", "status", model.Response{Status: 408}, "", 0},
		{"okhttp: 503, Retry-After: 0", ProfileOkHttp, false, http.MethodGet, "/status/503?retry-after=0", "status", model.Response{Status: 503, RetryAfter: "0"}, "repeated once", 2},
		{"okhttp: 503, Retry-After: 5", ProfileOkHttp, false, http.MethodGet, "/status/503?retry-after=5", "status", model.Response{Status: 503, RetryAfter: "5"}, "not repeated", 1},
		{"go: 503, Retry-After: 0", ProfileGo, false, http.MethodGet, "/status/503?retry-after=0", "status", model.Response{Status: 503, RetryAfter: "0"}, "", 0},
		{"okhttp: redirect loop", ProfileOkHttp, false, http.MethodGet, "/redirect-loop", "redirect-loop", model.Response{Status: 302, Redirect: true}, "too many follow-up requests: 21", 21},
		{"go: redirect loop", ProfileGo, false, http.MethodGet, "/redirect-loop", "redirect-loop", model.Response{Status: 302, Redirect: true}, "", 0},
	}
}

// Run implements Experiment.
func (f *FollowUps) Run(ctx context.Context, opt Options) (results.Run, error) {
	if err := check(f, opt.profile()); err != nil {
		return results.Run{}, err
	}
	srv, err := newServer()
	if err != nil {
		return results.Run{}, err
	}
	defer srv.Close()
	rows := followUps()
	run := newRun(f, opt)
	for i, r := range rows {
		opt.progress(0, "%s · row %d/%d: %s", f.Info().Name, i+1, len(rows), r.name)
		row, res, err := f.row(ctx, srv, r)
		if err != nil {
			return results.Run{}, err
		}
		run.Rows = append(run.Rows, row)
		run.Calls = append(run.Calls, timeline(r.name, res, 0))
	}
	run.Finish(opt.Tolerance)
	return run, nil
}

// row sends r's request once with r's client and compares the requests the server got with
// the model's count.
func (f *FollowUps) row(ctx context.Context, srv *fakesrv.Server, r followUp) (results.Row, *client.Result, error) {
	b, err := build(r.profile, spec{NoRouteRetry: r.noRetry})
	if err != nil {
		return results.Row{}, nil, err
	}
	srv.Reset()
	res, err := f.call(ctx, b.c, srv.URL+r.path, r.method)
	b.c.Close()
	if err != nil {
		return results.Row{}, nil, err
	}
	if err := ctx.Err(); err != nil {
		return results.Row{}, nil, err
	}
	requests, outcome, status := model.FollowUps(b.limits.Profile, b.limits.RetryOnConnectionFailure, r.resp)
	got := srv.Stats().Requests[r.endpoint]
	row := results.Row{
		Name:               r.name,
		ExpectedOutcome:    outcome,
		Outcome:            res.Outcome,
		ExpectedCalls:      1,
		Calls:              1,
		ExpectedExecutions: results.Count(requests),
		ServerExecutions:   results.Count(got),
		Server:             fmt.Sprintf("%s to %s", vocab.Plural(got, "request"), r.endpoint),
	}
	if outcome == vocab.OK {
		row.ExpectedStatus = results.Count(status)
	}
	if res.Outcome == vocab.OK {
		row.Status = results.Count(res.Status)
	} else if n := len(res.Attempts); n > 0 && res.Attempts[n-1].Err != nil {
		row.Server += "; client: " + cause(res.Attempts[n-1].Err)
	}
	if r.doc != "" {
		row.Documented, row.DocumentedExecutions = r.doc, results.Count(r.docExec)
	}
	return row, res, nil
}

// call sends one request, with a small replayable body for a POST.
func (*FollowUps) call(ctx context.Context, c caller, url, method string) (*client.Result, error) {
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader("order=42")
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, method, url, body)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, url, nil)
	}
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
