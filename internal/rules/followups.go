package rules

import (
	"net/url"
	"strconv"

	"github.com/labrun/labrun/internal/vocab"
)

// FollowUps is a library's follow-up rule: what it sends by itself after each response. The
// client runs Step on every response; the model's Follow is a loop over the same Step. The
// zero value follows nothing.
type FollowUps struct{ rule followRule }

// followRule is one library's step: what it sends after a, nil to return a, or how the call
// fails.
type followRule interface {
	step(s FollowRules, st *FollowState, req StepRequest, a StepAnswer) (*StepNext, *FollowError)
	// reads are the settings the rule reads, each true.
	reads() FollowRules
}

// StepRequest is the request a response answers, for FollowUps.Step.
type StepRequest struct {
	Method string
	// Body says it carries a body; OneShot that the client cannot send it again.
	Body, OneShot bool
	// URL is its absolute URL.
	URL string
}

// StepAnswer is a response, for FollowUps.Step.
type StepAnswer struct {
	Status int
	// RetryAfter is the Retry-After header, "" when absent.
	RetryAfter string
	// Location is the Location header resolved against the request's URL, or "".
	Location string
}

// StepNext is the request a follow-up rule sends after a response.
type StepNext struct {
	Method string
	// Body says the request's body goes again (the first request's with FromOriginal).
	Body bool
	// URL is where it goes: the Location, or the request's own URL.
	URL string
	// FromOriginal builds it from the call's first request (HttpClient 5's RedirectExec).
	FromOriginal bool
	// DropAuthorization removes the Authorization header (OkHttp, another host).
	DropAuthorization bool
	// Credentials answers a 401 with Basic credentials: an OkHttp Authenticator.
	Credentials bool
}

// FollowError is how a follow-up rule fails a call.
type FollowError struct {
	// Msg is the start of the library's message ("Too many follow-up requests: 21").
	Msg string
	// URL is the URL the message goes on to name, "" for none.
	URL string
}

// FollowState is what a follow-up rule remembers over one call; the zero value starts one.
type FollowState struct {
	// Sent counts the follow-ups sent.
	Sent int
	// Prior is the previous response's status, 0 at the first.
	Prior int
	// Original is the call's first request.
	Original StepRequest
	started  bool
	visited  map[string]bool // the locations redirected to (HttpClient 5's RedirectLocations)
}

// Step returns the request the rule sends after a, the answer to req, with settings s: nil to
// return a, or the error that fails the call.
func (f FollowUps) Step(s FollowRules, st *FollowState, req StepRequest, a StepAnswer) (*StepNext, *FollowError) {
	if !st.started {
		st.Original, st.started = req, true
	}
	defer func() { st.Prior = a.Status }()
	if f.rule == nil {
		return nil, nil
	}
	next, err := f.rule.step(s, st, req, a)
	if next != nil && err == nil {
		st.Sent++
	}
	return next, err
}

// Reads returns the settings the rule reads, each true.
func (f FollowUps) Reads() FollowRules {
	if f.rule == nil {
		return FollowRules{}
	}
	return f.rule.reads()
}

// Follow predicts c with settings s: Step over the call's answers, on URLs of its own
// (http://server/0, then /i+1 for the i-th answer's new location).
func (f FollowUps) Follow(s FollowRules, c FollowCall) FollowResult {
	var res FollowResult
	var st FollowState
	scheme := "http"
	if c.HTTPS {
		scheme = "https"
	}
	req := StepRequest{Method: c.Method, Body: c.Body, OneShot: c.OneShot, URL: scheme + "://server/0"}
	for i := 0; ; i++ {
		res.Sent = append(res.Sent, Sent{Method: req.Method, Body: req.Body})
		a := c.answer(i)
		next, err := f.Step(s, &st, req, StepAnswer{Status: a.Status, RetryAfter: a.RetryAfter, Location: a.Location.at(req.URL, i+1)})
		switch {
		case err != nil:
			return followFailed(res, err.Msg)
		case next == nil:
			return followOK(res, a.Status)
		}
		req = StepRequest{Method: next.Method, Body: next.Body, OneShot: c.OneShot, URL: next.URL}
	}
}

// Location is where a redirect sends the client, for an Answer.
type Location int

// The places an Answer's Location names.
const (
	// NoLocation: the answer has no Location header.
	NoLocation Location = iota
	// SameURL: the request's own URL, a loop.
	SameURL
	// NewURL: another URL of the same server, new to the call.
	NewURL
	// PlainHTTP: the same server's http address, from https.
	PlainHTTP
)

// at is the URL l names for an answer to a request to cur, where n is new to the call (Follow).
func (l Location) at(cur string, n int) string {
	switch l {
	case SameURL:
		return cur
	case NewURL:
		u, err := url.Parse(cur)
		if err != nil {
			return ""
		}
		u.Path = "/" + strconv.Itoa(n)
		return u.String()
	case PlainHTTP:
		return "http://server/" + strconv.Itoa(n)
	}
	return ""
}

// Answer is a server's answer to one request of a call, for FollowUps.
type Answer struct {
	Status int
	// RetryAfter is the Retry-After header, "" when absent.
	RetryAfter string
	// Location is where a 3xx sends the client.
	Location Location
}

// FollowCall is one request and the server's answers to it and to what the client sends after it,
// for FollowUps.Follow.
type FollowCall struct {
	Method string
	// Body says the request has a body; OneShot that the client cannot send it again.
	Body, OneShot bool
	// HTTPS says the first request goes over https.
	HTTPS bool
	// Answers answer the requests in order, the last all after it; empty means 200.
	Answers []Answer
}

// answer returns the server's answer to the i-th request (0-based).
func (c FollowCall) answer(i int) Answer {
	if len(c.Answers) == 0 {
		return Answer{Status: 200}
	}
	return c.Answers[min(i, len(c.Answers)-1)]
}

// FollowRules are a client's follow-up settings.
type FollowRules struct {
	// RetryOnConnectionFailure is OkHttp's setting, which also governs its 408 rule.
	RetryOnConnectionFailure bool
	// NoRedirects returns every redirect (followRedirects(false), disableRedirectHandling()).
	NoRedirects bool
	// NoSslRedirects is OkHttp's followSslRedirects(false).
	NoSslRedirects bool
	// Authenticate answers every 401: an OkHttp Authenticator that always does.
	Authenticate bool
}

// Sent is one request the server receives.
type Sent struct {
	Method string
	Body   bool
}

// FollowResult is what FollowUps predicts for a call.
type FollowResult struct {
	// Sent are the requests the server receives, in order.
	Sent []Sent
	// Outcome is OK with Status, the last response's, or Failed when the library throws Err.
	Outcome vocab.Outcome
	Status  int
	// Err is the start of the library's error message ("Too many follow-up requests: 21").
	Err string
}

// Follow-up limits of the libraries.
const (
	// OkHttpMaxFollowUps is RetryAndFollowUpInterceptor.MAX_FOLLOW_UPS.
	OkHttpMaxFollowUps = 20
	// GoMaxRedirects is net/http's default CheckRedirect's.
	GoMaxRedirects = 10
	// HC5MaxRedirects is HttpClient 5's RequestConfig maxRedirects.
	HC5MaxRedirects = 50
	// URLConnectionMaxRedirects is HttpURLConnection's http.maxRedirects (JDK 17).
	URLConnectionMaxRedirects = 20
)

func followOK(res FollowResult, status int) FollowResult {
	res.Outcome, res.Status = vocab.OK, status
	return res
}

func followFailed(res FollowResult, err string) FollowResult {
	res.Outcome, res.Err = vocab.Failed, err
	return res
}
