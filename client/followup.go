package client

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labrun/labrun/internal/rules"
)

// FollowOptions are the follow-up settings a caller changes from the library's defaults
// (Config.Follow); the library's rule (Config.Rules.FollowUps) reads them.
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

// rules returns the options as the follow-up rules' settings, with the library's recovery
// (OkHttp's retryOnConnectionFailure also governs its 408 rule).
func (o FollowOptions) rules(resend bool) rules.FollowRules {
	return rules.FollowRules{RetryOnConnectionFailure: resend, NoRedirects: o.NoRedirects,
		NoSslRedirects: o.NoSslRedirects, Authenticate: o.Authenticate}
}

// followState is what the follow-ups remember over one call.
type followState struct {
	original *http.Request // the caller's request: HttpClient 5 copies it on a redirect
	rules    rules.FollowState
}

// followUp returns the request the library's follow-up rule (Config.Rules.FollowUps, the
// model's too) sends after resp, nil to return resp to the caller, or the error that fails the
// call. The rule decides; followUp builds the request it asks for from the live one.
func (c *Client) followUp(st *followState, req *http.Request, resp *response) (*http.Request, error) {
	loc := ""
	if u, ok := location(req, resp); ok {
		loc = u.String()
	}
	next, ferr := c.cfg.Rules.FollowUps.Step(c.cfg.Follow.rules(c.cfg.Rules.Resend.On), &st.rules, stepRequest(req),
		rules.StepAnswer{Status: resp.status, RetryAfter: resp.header.Get("Retry-After"), Location: loc})
	if ferr != nil {
		return nil, followError{ferr}
	}
	if next == nil {
		return nil, nil
	}
	from := req
	if next.FromOriginal {
		from = st.original
	}
	out := newRequest(from, next.Method, next.URL, next.Body)
	if out == nil {
		return nil, nil
	}
	if next.DropAuthorization {
		out.Header.Del("Authorization")
	}
	if next.Credentials {
		out.SetBasicAuth("labrun", "labrun")
	}
	return out, nil
}

// stepRequest is req for a follow-up rule.
func stepRequest(req *http.Request) rules.StepRequest {
	return rules.StepRequest{Method: req.Method, Body: req.Body != nil && req.Body != http.NoBody,
		OneShot: req.GetBody == nil, URL: req.URL.String()}
}

// followError is a follow-up rule's failure in Go's words: the library's message with its
// first letter in lower case, then the URL it names, as its path in quotes ("circular
// redirect to '/redirect-loop'": HttpClient 5 names the whole URI; its path is enough and
// keeps the port out).
type followError struct{ e *rules.FollowError }

func (f followError) Error() string {
	msg := f.e.Msg
	if msg != "" {
		msg = strings.ToLower(msg[:1]) + msg[1:]
	}
	if f.e.URL != "" {
		at := f.e.URL
		if u, err := url.Parse(at); err == nil {
			at = u.RequestURI()
		}
		msg += " '" + at + "'"
	}
	return msg
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

// newRequest returns a request for method and target with req's context and headers, and
// req's body when keepBody: rewound with GetBody, or, when req has none, req's spent body
// (the follow-up rules refuse to send a one-shot body again); nil when it cannot be built.
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
