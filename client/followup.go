package client

import (
	"net/http"
	"strconv"
)

// MaxFollowUps is OkHttp's limit on follow-up requests in one call (Config.FollowUps): the
// 21st fails the call with "too many follow-up requests: 21".
const MaxFollowUps = 20

// followUp returns the request OkHttp's rules send after resp, or nil (Config.FollowUps):
// redirects are followed; a 408 is repeated once, even a non-idempotent request, unless
// recovery is off, the body cannot be sent again, the previous response was a 408 too, or
// Retry-After asks for a delay; a 503 is repeated once, only on Retry-After: 0; a 401 or 407
// is returned (the default authenticator gives up).
func (c *Client) followUp(req *http.Request, resp *response, prior int) *http.Request {
	if !c.cfg.FollowUps {
		return nil
	}
	retryAfter := resp.header.Get("Retry-After")
	switch resp.status {
	case 300, 301, 302, 303, 307, 308:
		return redirect(req, resp)
	case 408:
		if !c.cfg.RetryOnConnectionFailure || prior == 408 || (req.Body != nil && req.GetBody == nil) {
			return nil
		}
		if retryAfter != "" && retryAfterSeconds(retryAfter) > 0 {
			return nil
		}
		return req
	case 503:
		if prior == 503 || retryAfter == "" || retryAfterSeconds(retryAfter) != 0 {
			return nil
		}
		return req
	}
	return nil
}

// redirect returns the request that follows the redirect resp, or nil when it has no usable
// Location. A 307 or 308 keeps the method and the body; the others turn all but GET and HEAD
// into a GET without a body.
func redirect(req *http.Request, resp *response) *http.Request {
	loc := resp.header.Get("Location")
	if loc == "" {
		return nil
	}
	u, err := req.URL.Parse(loc)
	if err != nil {
		return nil
	}
	method, body := req.Method, req.GetBody
	if method != http.MethodGet && method != http.MethodHead && resp.status != 307 && resp.status != 308 {
		method, body = http.MethodGet, nil
	}
	next, err := http.NewRequestWithContext(req.Context(), method, u.String(), nil)
	if err != nil {
		return nil
	}
	next.Header = req.Header.Clone()
	if body != nil {
		next.GetBody = body
		next.Body, _ = body()
	}
	return next
}

// retryAfterSeconds reads Retry-After as OkHttp does: digits only; anything else (an HTTP
// date, "-1", "+0") counts as a long delay.
func retryAfterSeconds(v string) int {
	const long = int(^uint(0) >> 1)
	for _, r := range v {
		if r < '0' || r > '9' {
			return long
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return long
	}
	return n
}
