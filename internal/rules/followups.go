package rules

import "github.com/labrun/labrun/internal/vocab"

// The follow-ups: the requests a library sends by itself after a response (a redirect, a
// status it repeats, an authentication), each library's rule in its own file.

// FollowUps is a library's follow-up rule: the requests it sends for c, and how the call ends,
// with the user's settings s. Its implementations are comparable values.
type FollowUps interface {
	Follow(s FollowRules, c FollowCall) FollowResult
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

// Answer is a server's answer to one request of a call, for FollowUps.
type Answer struct {
	Status int
	// RetryAfter is the Retry-After header, "" when absent.
	RetryAfter string
	// Location is where a 3xx sends the client.
	Location Location
}

// FollowCall is one request and the server's answers to it and to what the client sends after it,
// for FollowUps.
type FollowCall struct {
	Method string
	// Body says the request has a body; OneShot that the client cannot send it again
	// (OkHttp 3: an UnrepeatableRequestBody; Go: no GetBody; HttpClient 5: an entity that is
	// not repeatable).
	Body, OneShot bool
	// HTTPS says the first request goes over https.
	HTTPS bool
	// Answers are the server's answers in the order of the requests; the last answers every
	// request after it too. Empty means 200.
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
	// RetryOnConnectionFailure is OkHttp's setting of that name (on by default), which also
	// governs the 408 rule.
	RetryOnConnectionFailure bool
	// NoRedirects returns every redirect: OkHttp's followRedirects(false), HttpClient 5's
	// disableRedirectHandling(), a net/http CheckRedirect that returns ErrUseLastResponse.
	NoRedirects bool
	// NoSslRedirects returns a redirect between https and http: OkHttp's
	// followSslRedirects(false).
	NoSslRedirects bool
	// Authenticate answers every 401 with credentials: an OkHttp Authenticator that always
	// returns a request. Without it a 401 is returned (Authenticator.NONE).
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
	// OkHttpMaxFollowUps is OkHttp's MAX_FOLLOW_UPS (RetryAndFollowUpInterceptor, 3.x and
	// 4.x): the 21st follow-up throws "Too many follow-up requests: 21".
	OkHttpMaxFollowUps = 20
	// GoMaxRedirects is net/http's default CheckRedirect limit: "stopped after 10 redirects".
	GoMaxRedirects = 10
	// HC5MaxRedirects is HttpClient 5's RequestConfig default maxRedirects (5.2.1): the 51st
	// redirect throws "Maximum redirects (50) exceeded".
	HC5MaxRedirects = 50
	// URLConnectionMaxRedirects is HttpURLConnection's http.maxRedirects default (JDK 17,
	// sun.net.www.protocol.http.HttpURLConnection): the 20th request's redirect throws
	// "Server redirected too many times (20)".
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
