package client

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"

	"github.com/labrun/labrun/internal/vocab"
)

// MaxFollowUps is OkHttp's limit on follow-up requests in one call (Config.FollowUps): the
// 21st fails the call with "too many follow-up requests: 21".
const MaxFollowUps = 20

// HC5MaxRedirects is HttpClient 5's default RequestConfig maxRedirects (Config.HC5Redirects):
// the 51st redirect fails the call with "maximum redirects (50) exceeded".
const HC5MaxRedirects = 50

// FollowOptions are the follow-up settings a caller changes from the library's defaults
// (Config.Follow).
type FollowOptions struct {
	// NoRedirects returns every redirect to the caller: OkHttp's followRedirects(false),
	// HttpClient 5's disableRedirectHandling() (GoConfig.UseLastResponse for net/http).
	NoRedirects bool
	// NoSslRedirects returns a redirect from https to http or back: OkHttp's
	// followSslRedirects(false).
	NoSslRedirects bool
	// Authenticate answers every 401 with Basic credentials, as an OkHttp Authenticator that
	// always returns a request does; without it a 401 is returned (Authenticator.NONE).
	Authenticate bool
}

// followState is what the follow-up rules remember over one call.
type followState struct {
	original *http.Request // the caller's request: HttpClient 5 copies it on a redirect
	n        int           // follow-ups (redirects) sent
	prior    int           // the previous response's status, 0 for the first
	visited  map[string]bool
}

// followUp returns the request the library's follow-up rules send after resp, nil to return
// resp to the caller, or the error that fails the call: OkHttp's (Config.FollowUps) or
// HttpClient 5's redirects (Config.HC5Redirects).
func (c *Client) followUp(st *followState, req *http.Request, resp *response) (*http.Request, error) {
	defer func() { st.prior = resp.status }()
	switch {
	case c.cfg.FollowUps:
		next, err := c.okHTTPFollowUp(req, resp, st.prior)
		if next == nil || err != nil {
			return nil, err
		}
		// RetryAndFollowUpInterceptor.intercept: the limit, then a body that cannot go again.
		if st.n++; st.n > MaxFollowUps {
			return nil, fmt.Errorf("too many follow-up requests: %d", st.n)
		}
		if next.Body != nil && next.GetBody == nil {
			return nil, errors.New("cannot retry streamed HTTP body")
		}
		return next, nil
	case c.cfg.HC5Redirects:
		return c.hc5Redirect(st, resp)
	}
	return nil, nil
}

// okHTTPFollowUp is OkHttp 3.13.1's RetryAndFollowUpInterceptor.followUpRequest: a redirect
// is followed (307 and 308 only for GET and HEAD); a 408 is repeated once, even a
// non-idempotent request, unless recovery is off, the body cannot be sent again, the previous
// response was a 408 too, or Retry-After asks for a delay; a 503 is repeated once, only on
// Retry-After: 0; a 401 goes to the authenticator; a 407 without a proxy fails the call.
func (c *Client) okHTTPFollowUp(req *http.Request, resp *response, prior int) (*http.Request, error) {
	retryAfter := resp.header.Get("Retry-After")
	switch resp.status {
	case 407: // labrun's client never uses a proxy
		return nil, errors.New("received HTTP_PROXY_AUTH (407) code while not using proxy")
	case 401:
		if !c.cfg.Follow.Authenticate {
			return nil, nil
		}
		next := again(req)
		next.SetBasicAuth("labrun", "labrun")
		return next, nil
	case 307, 308:
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			return nil, nil
		}
		return c.okHTTPRedirect(req, resp), nil
	case 300, 301, 302, 303:
		return c.okHTTPRedirect(req, resp), nil
	case 408:
		if !c.cfg.Rules.Resend.On || (req.Body != nil && req.GetBody == nil) || prior == 408 || vocab.OkHttpRetryAfter(retryAfter, 0) > 0 {
			return nil, nil
		}
		return again(req), nil
	case 503:
		if prior == 503 || vocab.OkHttpRetryAfter(retryAfter, math.MaxInt32) != 0 {
			return nil, nil
		}
		return again(req), nil
	}
	return nil, nil
}

// okHTTPRedirect is followUpRequest's redirect: nil without followRedirects, a Location, or
// followSslRedirects when the scheme changes; every method but GET and HEAD becomes a GET
// without a body (PROPFIND keeps both); Authorization is dropped for another host.
func (c *Client) okHTTPRedirect(req *http.Request, resp *response) *http.Request {
	if c.cfg.Follow.NoRedirects {
		return nil
	}
	u, ok := location(req, resp)
	if !ok || (u.Scheme != req.URL.Scheme && c.cfg.Follow.NoSslRedirects) {
		return nil
	}
	method, body := req.Method, true
	if method != http.MethodGet && method != http.MethodHead && method != "PROPFIND" {
		method, body = http.MethodGet, false
	}
	next := newRequest(req, method, u.String(), body)
	if next != nil && (u.Host != req.URL.Host || u.Scheme != req.URL.Scheme) {
		next.Header.Del("Authorization")
	}
	return next
}

// hc5Redirect is HttpClient 5.2.1's RedirectExec with DefaultRedirectStrategy: a 301, 302,
// 303, 307 or 308 with a Location is followed unless redirects are disabled or the original
// request's entity is not repeatable; the 51st redirect (maxRedirects) and a redirect to a
// location already redirected to fail the call. 301 and 302 turn a POST into a GET, 303
// every method but GET and HEAD; the others send the original request again, method and body.
func (c *Client) hc5Redirect(st *followState, resp *response) (*http.Request, error) {
	switch resp.status {
	case 301, 302, 303, 307, 308:
	default:
		return nil, nil
	}
	orig := st.original
	if c.cfg.Follow.NoRedirects || resp.header.Get("Location") == "" || (orig.Body != nil && orig.GetBody == nil) {
		return nil, nil
	}
	if st.n >= HC5MaxRedirects {
		return nil, fmt.Errorf("maximum redirects (%d) exceeded", HC5MaxRedirects)
	}
	st.n++
	u, ok := location(orig, resp)
	if !ok {
		return nil, nil
	}
	if st.visited[u.String()] {
		// HttpClient 5 names the whole URI; its path is enough and keeps the port out.
		return nil, fmt.Errorf("circular redirect to '%s'", u.RequestURI())
	}
	if st.visited == nil {
		st.visited = map[string]bool{}
	}
	st.visited[u.String()] = true
	method, body := orig.Method, true
	if ((resp.status == 301 || resp.status == 302) && method == http.MethodPost) ||
		(resp.status == 303 && method != http.MethodGet && method != http.MethodHead) {
		method, body = http.MethodGet, false
	}
	return newRequest(orig, method, u.String(), body), nil
}

// location resolves resp's Location against req's URL; false when there is none or it does
// not parse.
func location(req *http.Request, resp *response) (*url.URL, bool) {
	loc := resp.header.Get("Location")
	if loc == "" {
		return nil, false
	}
	u, err := req.URL.Parse(loc)
	return u, err == nil
}

// again returns req to send once more, its body rewound.
func again(req *http.Request) *http.Request {
	return newRequest(req, req.Method, req.URL.String(), true)
}

// newRequest returns a request for method and target with req's context and headers, and
// req's body when keepBody: rewound with GetBody, or, when req has none, req's spent body,
// which Client.followUp refuses to send; nil when it cannot be built.
func newRequest(req *http.Request, method, target string, keepBody bool) *http.Request {
	next, err := http.NewRequestWithContext(req.Context(), method, target, nil)
	if err != nil {
		return nil
	}
	next.Header = req.Header.Clone()
	switch {
	case !keepBody || req.Body == nil || req.Body == http.NoBody:
		next.Header.Del("Content-Type")
	case req.GetBody == nil:
		next.Body = req.Body // spent: a one-shot body
	default:
		if next.Body, err = req.GetBody(); err != nil {
			return nil
		}
		next.GetBody, next.ContentLength = req.GetBody, req.ContentLength
	}
	return next
}
