package fakesrv

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// route maps a request path to its endpoint name and handler. Routing is an exact match on
// the path, written out rather than left to http.ServeMux: the mux would answer some
// requests itself (a 301 to a cleaned path, its own 404 and 405), and those would escape the
// request log and the counters that a fault server is for.
func route(path string) (name string, serve func(*exchange) bool) {
	switch {
	case path == "/reserve" || path == "/trickle" || path == "/stall" || path == "/delay":
		return path[1:], (*exchange).behaviour
	case path == "/status" || strings.HasPrefix(path, "/status/"):
		return "status", (*exchange).status
	case path == "/redirect" || strings.HasPrefix(path, "/redirect/"):
		return "redirect", (*exchange).redirect
	case path == "/redirect-loop":
		return "redirect-loop", (*exchange).redirectLoop
	case path == "/close-after-read":
		return "close-after-read", (*exchange).closeAfterRead
	case path == "/reset":
		return "reset", (*exchange).reset
	case path == "/stats" || path == "/stats/reset":
		return "stats", (*exchange).stats
	default:
		return "other", (*exchange).notFound
	}
}

// endpointList is the body of a 404: one line, so that a person with curl sees what exists.
const endpointList = "no such endpoint; endpoints: /reserve /trickle /stall /delay /status/CODE " +
	"/redirect/N /redirect-loop /close-after-read /reset /stats /stats/reset"

// Limits of the path parameters.
const (
	minStatus    = 101 // 100 Continue belongs to the protocol (Expect: 100-continue), not to a handler
	maxStatus    = 599
	maxRedirects = 100 // far above any client's limit (Go's is 10), low enough to end quickly
)

// notFound answers a path that names no endpoint.
func (x *exchange) notFound() bool {
	if !x.drain() {
		return x.stop()
	}
	return x.text(http.StatusNotFound, endpointList)
}

// status answers /status/CODE[?retry-after=VALUE][&delay=DUR]: after delay, CODE with a
// body naming it. A 1xx other than 101 is informational and cannot end an exchange, so it
// is sent, then a final 200; 101 ends the exchange, and the connection is closed after it
// rather than switched to a protocol nobody asked for.
func (x *exchange) status() bool {
	if !x.drain() {
		return x.stop()
	}
	code, err := pathNumber(x.r.URL.Path, "/status/", "status: CODE", minStatus, maxStatus)
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	q := x.r.URL.Query()
	delay, err := parseDuration(q, "delay")
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	retryAfter, hasRetryAfter := q.Get("retry-after"), q.Has("retry-after")
	if hasRetryAfter {
		if err := checkHeaderValue("retry-after", retryAfter); err != nil {
			return x.text(http.StatusBadRequest, err.Error())
		}
	}
	x.rec.Behaviour = Behaviour{Delay: delay}
	x.publish()

	if !x.waitUntil(x.rec.Arrived.Add(min(delay, x.s.opts.maxDuration))) {
		return x.stop()
	}
	if hasRetryAfter {
		x.w.Header().Set("Retry-After", retryAfter)
	}
	name := strconv.Itoa(code)
	if t := http.StatusText(code); t != "" {
		name += " " + t
	}
	switch {
	case code == http.StatusSwitchingProtocols:
		x.w.Header().Set("Connection", "close")
	case code < 200:
		// net/http sends a 1xx head at once and lets the handler answer again.
		x.w.WriteHeader(code)
		return x.text(http.StatusOK, "status "+name+" sent as an informational response, then this 200")
	}
	if !bodyAllowed(code) {
		return x.head(code, 0)
	}
	return x.text(code, "status "+name)
}

// redirect answers /redirect/N: a 302 to /redirect/N-1, or 200 "done" for N = 0.
func (x *exchange) redirect() bool {
	if !x.drain() {
		return x.stop()
	}
	n, err := pathNumber(x.r.URL.Path, "/redirect/", "redirect: N", 0, maxRedirects)
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	if n == 0 {
		return x.text(http.StatusOK, "done")
	}
	return x.redirectTo("/redirect/" + strconv.Itoa(n-1))
}

// redirectLoop answers /redirect-loop with a 302 to itself.
func (x *exchange) redirectLoop() bool {
	if !x.drain() {
		return x.stop()
	}
	return x.redirectTo("/redirect-loop")
}

// redirectTo answers 302 with a Location of path plus the request's own query, so that a
// client's tag (call=N) follows it from hop to hop. The Location is relative to the server:
// it stays right whatever host name the client used.
func (x *exchange) redirectTo(path string) bool {
	if q := x.r.URL.RawQuery; q != "" {
		path += "?" + q
	}
	x.w.Header().Set("Location", path)
	return x.text(http.StatusFound, "redirect to "+path)
}

// closeAfterRead answers /close-after-read: it reads the request head and body, then closes
// the connection without a byte of answer. Reading the body first makes the close a clean
// FIN: closing a socket with unread data would send a reset instead, which is /reset's job.
func (x *exchange) closeAfterRead() bool {
	if !x.drain() {
		return x.stop()
	}
	conn, _, err := x.rc.Hijack()
	if err != nil {
		// Aborting the handler closes the connection unanswered too.
		return false
	}
	// The close error has nobody to go to: the client sees the close, which is the point.
	_ = conn.Close()
	return true
}

// reset answers /reset: with the request head read (net/http has read it before calling
// the handler), it closes the connection with SO_LINGER 0, which sends a TCP RST instead of
// a FIN; the client's next read fails with "connection reset by peer". The body is not
// read: whatever of it is still in flight is lost with the connection.
func (x *exchange) reset() bool {
	conn, _, err := x.rc.Hijack()
	if err != nil {
		return false
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		// Without linger 0 the close is a plain FIN: the client still loses the
		// connection, only less abruptly. There is nobody to report the error to.
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
	return true
}

// stats answers GET /stats with the Stats as JSON and POST /stats/reset with 204 after a
// Reset. HEAD is accepted wherever GET is, as HTTP asks of every server.
func (x *exchange) stats() bool {
	if !x.drain() {
		return x.stop()
	}
	reset := x.r.URL.Path == "/stats/reset"
	method := x.r.Method
	allowed := "GET, HEAD"
	if reset {
		allowed = "POST"
	}
	if (reset && method != http.MethodPost) || (!reset && method != http.MethodGet && method != http.MethodHead) {
		x.w.Header().Set("Allow", allowed)
		return x.text(http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s, want %s", method, x.r.URL.Path, allowed))
	}
	if reset {
		x.s.Reset()
		return x.head(http.StatusNoContent, 0)
	}
	data, err := json.Marshal(x.s.Stats())
	if err != nil {
		// Stats holds only maps of strings to ints and ints: Marshal cannot fail.
		panic("fakesrv: marshal stats: " + err.Error())
	}
	data = append(data, '\n')
	x.w.Header().Set("Content-Type", "application/json")
	return x.head(http.StatusOK, len(data)) && x.body(data)
}

// pathNumber reads the whole number that follows prefix in path ("" when path lacks the
// prefix, as "/status" does) and checks that it lies in [lo, hi]. what names the parameter
// in the error, as "status: CODE".
func pathNumber(path, prefix, what string, lo, hi int) (int, error) {
	s, ok := strings.CutPrefix(path, prefix)
	if !ok {
		s = ""
	}
	// ParseUint, not Atoi: a sign ("+5") or a second path segment is not a number here.
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n < uint64(lo) || n > uint64(hi) {
		return 0, fmt.Errorf("%s must be a whole number between %d and %d, got %q", what, lo, hi, s)
	}
	return int(n), nil
}

// checkHeaderValue checks that v can be sent verbatim as a header value: non-empty printable
// ASCII, without leading or trailing spaces (net/http would trim them).
func checkHeaderValue(key, v string) error {
	if v == "" {
		return fmt.Errorf("%s must not be empty", key)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' || c > '~' {
			return fmt.Errorf("%s must be printable ASCII, got %q", key, v)
		}
	}
	if strings.TrimSpace(v) != v {
		return fmt.Errorf("%s must not start or end with a space, got %q", key, v)
	}
	return nil
}

// bodyAllowed reports whether a response with status may have a body (RFC 9110: not 1xx,
// 204 or 304).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
