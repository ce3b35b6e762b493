package fakesrv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/vocab"
)

// Limits of the path parameters.
const (
	minStatus    = 101 // 100 Continue belongs to the protocol (Expect: 100-continue), not to a handler
	maxStatus    = 599
	maxRedirects = 100 // far above any client's limit (Go's is 10), low enough to end quickly
)

// behaviour answers the Behaviour endpoints (reserve, trickle, stall, delay) as the query
// asks; /reserve also requires an order.
func (x *exchange) behaviour() bool {
	if !x.drain() {
		return x.stop()
	}
	b, err := ParseBehaviour(x.r.URL.Path, x.r.URL.Query())
	if err == nil && x.rec.Endpoint == "reserve" && b.Order == "" {
		err = errors.New("order: required")
	}
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	x.rec.Behaviour = b
	if v := x.r.Header.Get(vocab.DeadlineHeader); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			return x.text(http.StatusBadRequest, vocab.DeadlineHeader+": want whole milliseconds, got "+strconv.Quote(v))
		}
		x.rec.Budget = time.Duration(ms) * time.Millisecond
	}
	x.publish()
	if x.rec.Budget >= 0 && x.rec.Budget < b.Delay {
		// Deadline propagation: the work would outlast the caller, so none of it is done.
		x.rec.Rejected = true
		return x.text(http.StatusServiceUnavailable, "budget "+x.rec.Budget.String()+" is shorter than the work, "+b.Delay.String())
	}

	answerAt := x.rec.Arrived.Add(min(b.Delay, x.s.opts.maxDuration))
	if b.Order != "" {
		answerAt = x.commit(b, answerAt)
	}
	if b.Stall {
		return x.stall(b)
	}
	if !x.waitUntil(answerAt) {
		return x.stop()
	}
	if b.Order != "" {
		return x.reservation(b)
	}
	if !x.head(http.StatusOK, b.Bytes) {
		return false
	}
	if b.Every <= 0 {
		return x.body(bytes.Repeat([]byte{'x'}, b.Bytes))
	}
	return x.trickle(b.Bytes, b.Every)
}

// commit commits the reservation of b on arrival, before any wait: the side effect happens
// whatever the client decides afterwards. It returns when to answer: answerAt, or the first
// answer time for an idempotent duplicate.
func (x *exchange) commit(b Behaviour, answerAt time.Time) time.Time {
	at, dup := x.s.ledger.reserve(b.Order, b.Idempotent || x.s.opts.idempotent, answerAt)
	x.rec.Reserved, x.rec.Duplicate = !dup, dup
	x.publish()
	return at
}

// reservation answers a committed reservation, saying whether it was new or a duplicate.
func (x *exchange) reservation(b Behaviour) bool {
	body := []byte("reserved order=" + b.Order + "\n")
	kind := "new"
	if x.rec.Duplicate {
		kind = "duplicate"
	}
	x.w.Header().Set("X-Reservation", kind)
	return x.head(http.StatusOK, len(body)) && x.body(body)
}

// stall holds the request until the client leaves, the server closes, or a cap passes: the
// request's max or the server's max duration.
func (x *exchange) stall(b Behaviour) bool {
	limit := x.rec.Arrived.Add(x.s.opts.maxDuration)
	if b.MaxStall > 0 {
		limit = x.rec.Arrived.Add(min(b.MaxStall, x.s.opts.maxDuration))
	}
	if !x.waitUntil(limit) {
		return x.stop()
	}
	// A cap passed: end the exchange with an empty answer, as net/http would do anyway when
	// a handler returns, but write it here so that the log records it.
	return x.head(http.StatusOK, 0)
}

// trickle sends n body bytes, byte k at HeadSent + k*every. Each wait targets an absolute
// time rather than sleeping every after the previous write, so that scheduling and write
// latencies do not add up over a long body.
func (x *exchange) trickle(n int, every time.Duration) bool {
	head := x.rec.HeadSent
	// The cap bounds the whole trickle: byte k may go only if k*every <= max. Comparing
	// k with max/every avoids overflowing k*every for huge values of every.
	last := min(n, int(x.s.opts.maxDuration/every))
	one := []byte{'x'}
	for k := 1; k <= last; k++ {
		if !x.waitUntil(head.Add(time.Duration(k) * every)) {
			return x.stop()
		}
		if !x.body(one) {
			return false
		}
	}
	// When the cap cut the body short, HTTP/1.1 needs nothing more: net/http closes a
	// connection whose response is shorter than its Content-Length. HTTP/2 would end the
	// stream normally, and the client could take the short body for a whole one: abort it.
	return last == n || !x.http2()
}

// notFound answers a path that names no endpoint.
func (x *exchange) notFound() bool {
	if !x.drain() {
		return x.stop()
	}
	return x.text(http.StatusNotFound, notFoundBody(x.s.routes))
}

// methodNotAllowed answers 405 to a method that e does not accept, with the methods it does.
func (x *exchange) methodNotAllowed(e Endpoint) bool {
	if !x.drain() {
		return x.stop()
	}
	allowed := strings.Join(e.Methods, ", ")
	x.w.Header().Set("Allow", allowed)
	return x.text(http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s, want %s", x.r.Method, x.r.URL.Path, allowed))
}

// status answers /status/CODE[?retry-after=VALUE][&delay=DUR]: after delay, CODE with a
// body naming it. A 1xx other than 101 is informational and cannot end an exchange, so it
// is sent, then a final 200; 101 ends the exchange, and the connection is closed after it
// rather than switched to a protocol nobody asked for. HTTP/2 has no 101 at all.
func (x *exchange) status() bool {
	if !x.drain() {
		return x.stop()
	}
	code, err := pathNumber(x.r.URL.Path, "/status/", "status: CODE", minStatus, maxStatus)
	if err == nil && code == http.StatusSwitchingProtocols && x.http2() {
		err = errors.New("status: 101 Switching Protocols does not exist in HTTP/2")
	}
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
// HTTP/2 cannot hand its connection over (Hijack fails), so the stream is reset instead.
func (x *exchange) closeAfterRead() bool {
	if !x.drain() {
		return x.stop()
	}
	conn, _, err := x.rc.Hijack()
	if err != nil {
		// Aborting the handler closes the connection (HTTP/2: resets the stream) unanswered.
		return false
	}
	// The close error has nobody to go to: the client sees the close, which is the point.
	_ = conn.Close()
	return true
}

// reset answers /reset: with the request head read (net/http has read it before calling
// the handler), it closes the connection with SO_LINGER 0, which sends a TCP RST instead of
// a FIN; the client's next read fails with "connection reset by peer". The body is not
// read: whatever of it is still in flight is lost with the connection. On HTTP/2 the
// stream is reset, as for /close-after-read.
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

// stats answers GET /stats with the Stats as JSON. HEAD is accepted wherever GET is, as
// HTTP asks of every server.
func (x *exchange) stats() bool {
	if !x.drain() {
		return x.stop()
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

// statsReset answers POST /stats/reset with 204 after a Reset.
func (x *exchange) statsReset() bool {
	if !x.drain() {
		return x.stop()
	}
	x.s.Reset()
	return x.head(http.StatusNoContent, 0)
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
