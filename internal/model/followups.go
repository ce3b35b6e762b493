package model

import (
	"math"
	"strconv"
	"strings"

	"github.com/labrun/labrun/internal/vocab"
)

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

// Response is a server's answer, by the name HC5StatusRetry takes it.
type Response = Answer

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

// MaxFollowUps returns the library's limit on the requests it sends after the first in one
// call: OkHttp's follow-ups, net/http's and HttpClient 5's redirects.
func MaxFollowUps(p Profile) int {
	switch p {
	case OkHttp:
		return OkHttpMaxFollowUps
	case Go:
		return GoMaxRedirects
	case JDK:
		return 0
	case URLConnection:
		return URLConnectionMaxRedirects - 1
	default:
		return HC5MaxRedirects
	}
}

// FollowUps predicts the requests a client sends for c, and how the call ends, under profile
// p's follow-up rules with settings r: OkHttp 3.13's RetryAndFollowUpInterceptor
// (followUpRequest and intercept), net/http's Client (client.go: redirectBehavior and
// defaultCheckRedirect), HttpClient 5.2.1's RedirectExec with DefaultRedirectStrategy and
// automatic retries disabled (HttpClient 4.5.14's DefaultRedirectStrategy where it differs),
// the JDK's HttpClient (Redirect.NEVER by default) and HttpURLConnection
// (setFollowRedirects(true), http.maxRedirects 20).
func FollowUps(p Profile, r FollowRules, c FollowCall) FollowResult {
	switch p {
	case OkHttp:
		return okHttpFollowUps(r, c)
	case Go:
		return goFollowUps(r, c)
	case JDK:
		// java.net.http.HttpClient.Builder's followRedirects default is Redirect.NEVER, and
		// it repeats no request for its status: the first answer is the call's.
		return followOK(FollowResult{Sent: []Sent{{c.Method, c.Body}}}, c.answer(0).Status)
	case URLConnection:
		return urlConnectionFollowUps(r, c)
	default:
		return hc5FollowUps(p, r, c)
	}
}

// urlConnectionFollowUps follows HttpURLConnection's followRedirect: a 3xx with a Location
// is followed while fewer than http.maxRedirects (20) requests were sent, a loop included;
// a redirect other than 307 and 308 turns a POST into a GET without its body.
func urlConnectionFollowUps(r FollowRules, c FollowCall) FollowResult {
	var res FollowResult
	cur := Sent{c.Method, c.Body}
	for i := 0; ; i++ {
		res.Sent = append(res.Sent, cur)
		a := c.answer(i)
		switch a.Status {
		case 301, 302, 303, 307, 308:
		default:
			return followOK(res, a.Status)
		}
		if r.NoRedirects || a.Location == NoLocation {
			return followOK(res, a.Status)
		}
		if i+1 >= URLConnectionMaxRedirects {
			return followFailed(res, "Server redirected too many times (20)")
		}
		if a.Status != 307 && a.Status != 308 {
			cur = Sent{Method: "GET"}
		}
	}
}

// okHttpFollowUps follows OkHttp 3.13.1's intercept loop: a follow-up from followUpRequest,
// counted against MAX_FOLLOW_UPS, then refused when its body cannot be sent again.
func okHttpFollowUps(r FollowRules, c FollowCall) FollowResult {
	var res FollowResult
	cur, https, prior := Sent{c.Method, c.Body}, c.HTTPS, 0
	for i := 0; ; i++ {
		res.Sent = append(res.Sent, cur)
		a := c.answer(i)
		next, toHTTP, err := okHttpFollowUp(r, c, cur, a, prior, https)
		switch {
		case err != "":
			return followFailed(res, err)
		case next == nil:
			return followOK(res, a.Status)
		case i+1 > OkHttpMaxFollowUps:
			return followFailed(res, "Too many follow-up requests: "+strconv.Itoa(i+1))
		case next.Body && c.OneShot:
			return followFailed(res, "Cannot retry streamed HTTP body")
		}
		cur, prior, https = *next, a.Status, https && !toHTTP
	}
}

// okHttpFollowUp is followUpRequest (OkHttp 3.13.1): the request to send after a, nil to
// return a, or the message of the exception it throws. toHTTP says the follow-up leaves
// https for http.
func okHttpFollowUp(r FollowRules, c FollowCall, cur Sent, a Answer, prior int, https bool) (next *Sent, toHTTP bool, err string) {
	switch a.Status {
	case 407: // labrun's clients use no proxy: Proxy.Type.DIRECT
		return nil, false, "Received HTTP_PROXY_AUTH (407) code while not using proxy"
	case 401:
		if r.Authenticate {
			return &cur, false, ""
		}
		return nil, false, ""
	case 307, 308:
		if cur.Method != "GET" && cur.Method != "HEAD" {
			return nil, false, ""
		}
		fallthrough
	case 300, 301, 302, 303:
		if r.NoRedirects || a.Location == NoLocation {
			return nil, false, ""
		}
		toHTTP = https && a.Location == PlainHTTP
		if toHTTP && r.NoSslRedirects {
			return nil, false, ""
		}
		next := cur
		if permitsRequestBody(cur.Method) {
			if cur.Method == "PROPFIND" { // redirectsWithBody, and not redirectsToGet
				next.Body = cur.Body
			} else {
				next = Sent{Method: "GET"}
			}
		}
		return &next, toHTTP, ""
	case 408:
		if !r.RetryOnConnectionFailure || (cur.Body && c.OneShot) || prior == 408 || vocab.OkHttpRetryAfter(a.RetryAfter, 0) > 0 {
			return nil, false, ""
		}
		return &cur, false, ""
	case 503:
		if prior == 503 || vocab.OkHttpRetryAfter(a.RetryAfter, math.MaxInt32) != 0 {
			return nil, false, ""
		}
		return &cur, false, ""
	}
	return nil, false, ""
}

// permitsRequestBody is OkHttp's HttpMethod.permitsRequestBody: every method but GET and HEAD.
func permitsRequestBody(method string) bool { return method != "GET" && method != "HEAD" }

// goFollowUps follows net/http's Client.Do: redirectBehavior, then the default CheckRedirect
// (or ErrUseLastResponse with NoRedirects). It repeats nothing else.
func goFollowUps(r FollowRules, c FollowCall) FollowResult {
	var res FollowResult
	cur := Sent{c.Method, c.Body}
	for i := 0; ; i++ {
		res.Sent = append(res.Sent, cur)
		a := c.answer(i)
		next, redirect := cur, false
		switch a.Status {
		case 301, 302, 303:
			redirect, next.Body = true, false
			if cur.Method != "GET" && cur.Method != "HEAD" {
				next.Method = "GET"
			}
		case 307, 308:
			redirect = !(cur.Body && c.OneShot) // without GetBody the 307 is returned
		}
		if !redirect || a.Location == NoLocation || r.NoRedirects {
			return followOK(res, a.Status)
		}
		if len(res.Sent) >= GoMaxRedirects {
			return followFailed(res, "stopped after 10 redirects")
		}
		cur = next
	}
}

// hc5FollowUps follows HttpClient 5.2.1's RedirectExec: DefaultRedirectStrategy.isRedirected
// (301, 302, 303, 307, 308 with a Location), the original request's entity repeatable, at
// most maxRedirects, no circular redirect; 301 and 302 turn a POST into a GET, 303 every
// method but GET and HEAD; the others copy the original request, method and body.
func hc5FollowUps(p Profile, r FollowRules, c FollowCall) FollowResult {
	var res FollowResult
	cur, looped := Sent{c.Method, c.Body}, false
	for i := 0; ; i++ {
		res.Sent = append(res.Sent, cur)
		a := c.answer(i)
		switch a.Status {
		case 301, 302, 303, 307, 308:
		default:
			return followOK(res, a.Status)
		}
		// HttpClient 4.5.14's DefaultRedirectStrategy.isRedirected: 301, 302, 307 and 308
		// only for GET and HEAD (isRedirectable); 303 for any method.
		if p == HC4 && a.Status != 303 && cur.Method != "GET" && cur.Method != "HEAD" {
			return followOK(res, a.Status)
		}
		if r.NoRedirects || a.Location == NoLocation || (c.Body && c.OneShot) {
			return followOK(res, a.Status)
		}
		if i >= HC5MaxRedirects {
			return followFailed(res, "Maximum redirects (50) exceeded")
		}
		if a.Location == SameURL {
			if looped { // RedirectLocations holds it: the original URL is not in it
				return followFailed(res, "Circular redirect to")
			}
			looped = true
		}
		orig := Sent{c.Method, c.Body}
		switch {
		case (a.Status == 301 || a.Status == 302) && c.Method == "POST",
			a.Status == 303 && c.Method != "GET" && c.Method != "HEAD":
			cur = Sent{Method: "GET"}
		default:
			cur = orig
		}
	}
}

// DescribeSent says which requests a server receives, runs of the same one counted:
// "POST+body ×2, GET"; "nothing sent" for none.
func DescribeSent(sent []Sent) string {
	var parts []string
	for i := 0; i < len(sent); {
		j := i
		for j < len(sent) && sent[j] == sent[i] {
			j++
		}
		p := sent[i].Method
		if sent[i].Body {
			p += "+body"
		}
		if j-i > 1 {
			p += " ×" + strconv.Itoa(j-i)
		}
		parts = append(parts, p)
		i = j
	}
	if parts == nil {
		return "nothing sent"
	}
	return strings.Join(parts, ", ")
}

func followOK(res FollowResult, status int) FollowResult {
	res.Outcome, res.Status = vocab.OK, status
	return res
}

func followFailed(res FollowResult, err string) FollowResult {
	res.Outcome, res.Err = vocab.Failed, err
	return res
}

// GoReplays reports whether net/http silently sends a request again on a new connection when
// the reused connection it was sent on fails before any response byte (the server closed it
// while it sat idle): when the request is replayable, that is its body can be rewound and it
// is GET, HEAD, OPTIONS or TRACE or carries an Idempotency-Key or X-Idempotency-Key header
// (transport.go: shouldRetryRequest, request.go: isReplayable).
func GoReplays(method string, idempotencyKey, rewindableBody, reused bool) bool {
	if !reused || !rewindableBody {
		return false
	}
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	return idempotencyKey
}

// GoDialsPerWave predicts how many new connections net/http dials for each of waves waves of
// concurrency simultaneous calls to one host, when the Transport keeps at most maxIdle idle
// connections per host (MaxIdleConnsPerHost; net/http's default is 2): the first wave dials
// them all, every later wave finds min(maxIdle, concurrency) pooled and dials the rest.
func GoDialsPerWave(concurrency, maxIdle, waves int) []int {
	out := make([]int, waves)
	for w := range out {
		if w == 0 {
			out[w] = concurrency
		} else {
			out[w] = concurrency - min(maxIdle, concurrency)
		}
	}
	return out
}
