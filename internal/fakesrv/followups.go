package fakesrv

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

var (
	movedStatuses     = []int{300, 301, 302, 303, 307, 308}
	challengeStatuses = []int{401, 407}
)

const (
	minFlakyStatus = 200
	maxFlakyTimes  = 100 // far above any client's follow-up limit
)

// flaky answers /flaky/CODE?id=ID[&times=N]: CODE to the first N requests of conversation ID,
// then 200; a request sent again repeats the URL, so it is the conversation's next.
func (x *exchange) flaky() bool {
	code, err := pathNumber(x.r.URL.Path, "/flaky/", "flaky: CODE", minFlakyStatus, maxStatus)
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	q := x.r.URL.Query()
	id := q.Get("id")
	switch {
	case id == "":
		return x.text(http.StatusBadRequest, "id: required")
	case len(id) > MaxOrderLen:
		return x.text(http.StatusBadRequest, fmt.Sprintf("id: at most %d bytes, got %d", MaxOrderLen, len(id)))
	}
	times := 1
	if v := q.Get("times"); v != "" {
		times, err = strconv.Atoi(v)
		if err != nil || times < 1 || times > maxFlakyTimes {
			return x.text(http.StatusBadRequest, fmt.Sprintf("times: want a whole number from 1 to %d, got %q", maxFlakyTimes, v))
		}
	}
	retryAfter, hasRetryAfter := q.Get("retry-after"), q.Has("retry-after")
	if hasRetryAfter {
		if err := checkHeaderValue("retry-after", retryAfter); err != nil {
			return x.text(http.StatusBadRequest, err.Error())
		}
	}
	n, ok := x.s.convs.next(id)
	if !ok {
		return x.text(http.StatusInsufficientStorage, fmt.Sprintf(
			"conversation table full: %d distinct ids since the last reset (POST /stats/reset clears it)", x.s.convs.limit))
	}
	if n > times {
		return x.text(http.StatusOK, fmt.Sprintf("request %d of %s: done", n, id))
	}
	if hasRetryAfter {
		x.w.Header().Set("Retry-After", retryAfter)
	}
	msg := fmt.Sprintf("request %d of %s: status %d", n, id, code)
	if !bodyAllowed(code) {
		return x.head(code, 0)
	}
	return x.text(code, msg)
}

// moved answers /moved/CODE[?to=TARGET]: CODE with a Location of TARGET (default /echo) and
// the request's other query. TARGET is a path or a URL to the request's own host name.
func (x *exchange) moved() bool {
	code, err := pathNumber(x.r.URL.Path, "/moved/", "moved: CODE", movedStatuses[0], movedStatuses[len(movedStatuses)-1])
	if err == nil && !slices.Contains(movedStatuses, code) {
		err = fmt.Errorf("moved: CODE must be one of %v, got %d", movedStatuses, code)
	}
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	q := x.r.URL.Query()
	to := q.Get("to")
	if to == "" {
		to = "/echo"
	}
	target, err := x.sameHost(to)
	if err != nil {
		return x.text(http.StatusBadRequest, "to: "+err.Error())
	}
	q.Del("to")
	if len(q) > 0 && target.RawQuery == "" {
		target.RawQuery = q.Encode()
	}
	x.w.Header().Set("Location", target.String())
	return x.text(code, "moved to "+target.String())
}

// sameHost parses a redirect target: a path, or an http or https URL to the request's host.
func (x *exchange) sameHost(to string) (*url.URL, error) {
	u, err := url.Parse(to)
	if err != nil {
		return nil, err
	}
	if !u.IsAbs() {
		if u.Host != "" || len(u.Path) == 0 || u.Path[0] != '/' {
			return nil, fmt.Errorf("want a path starting with / or an absolute http(s) URL, got %q", to)
		}
		return u, nil
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("want an http or https URL, got %q", to)
	}
	host, _, err := net.SplitHostPort(x.r.Host)
	if err != nil {
		host = x.r.Host
	}
	if u.Hostname() != host {
		return nil, fmt.Errorf("want the host the request named (%s), got %q", host, u.Hostname())
	}
	return u, nil
}

// echo answers 200 with the method and body length it received, which the log records too:
// a redirect's target shows whether the client changed the method or dropped the body.
func (x *exchange) echo() bool {
	return x.text(http.StatusOK, fmt.Sprintf("%s with %d body bytes", x.r.Method, x.rec.BodyBytes))
}

// challenge answers /challenge/CODE (401 or 407, Basic) to every request, whatever its
// credentials: a client whose authenticator always answers goes on to its follow-up limit.
func (x *exchange) challenge() bool {
	code, err := pathNumber(x.r.URL.Path, "/challenge/", "challenge: CODE", challengeStatuses[0], challengeStatuses[len(challengeStatuses)-1])
	if err == nil && !slices.Contains(challengeStatuses, code) {
		err = fmt.Errorf("challenge: CODE must be 401 or 407, got %d", code)
	}
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	header, credentials := "WWW-Authenticate", "Authorization"
	if code == http.StatusProxyAuthRequired {
		header, credentials = "Proxy-Authenticate", "Proxy-Authorization"
	}
	x.w.Header().Set(header, `Basic realm="labrun"`)
	if x.r.Header.Get(credentials) != "" {
		return x.text(code, credentials+" refused")
	}
	return x.text(code, "no "+credentials)
}
