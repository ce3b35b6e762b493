package client

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labrun/labrun/internal/rules"
)

// FollowOptions are the follow-up settings changed from the library's defaults (Config.Follow).
type FollowOptions struct {
	// NoRedirects returns every redirect: OkHttp's followRedirects(false), HttpClient 5's
	// disableRedirectHandling().
	NoRedirects bool
	// NoSslRedirects is OkHttp's followSslRedirects(false).
	NoSslRedirects bool
	// Authenticate answers a 401 with Basic credentials (an OkHttp Authenticator).
	Authenticate bool
}

// rules returns the options as rules' settings.
func (o FollowOptions) rules(resend bool) rules.FollowRules {
	return rules.FollowRules{RetryOnConnectionFailure: resend, NoRedirects: o.NoRedirects,
		NoSslRedirects: o.NoSslRedirects, Authenticate: o.Authenticate}
}

type followState struct {
	original *http.Request // HttpClient 5 copies it on a redirect
	rules    rules.FollowState
}

// followUp returns the request the library's rule sends after resp, nil to return resp, or
// the error that fails the call.
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

func stepRequest(req *http.Request) rules.StepRequest {
	return rules.StepRequest{Method: req.Method, Body: req.Body != nil && req.Body != http.NoBody,
		OneShot: req.GetBody == nil, URL: req.URL.String()}
}

// followError is a follow-up rule's failure in Go's words, naming the URL's path.
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

func location(req *http.Request, resp *response) (*url.URL, bool) {
	loc := resp.header.Get("Location")
	if loc == "" {
		return nil, false
	}
	u, err := req.URL.Parse(loc)
	return u, err == nil
}

// newRequest returns a request for method and target with req's context, headers and, with
// keepBody, body; nil on failure.
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
		next.Body = req.Body
	default:
		if next.Body, err = req.GetBody(); err != nil {
			return nil
		}
		next.GetBody, next.ContentLength = req.GetBody, req.ContentLength
	}
	return next
}
