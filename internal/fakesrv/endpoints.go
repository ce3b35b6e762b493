package fakesrv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// CappedHeader says the server's max duration cut a duration the request asked for ("delay
// 20m0s capped to 10m0s"), once per cap applied.
const CappedHeader = "X-Labrun-Capped"

const (
	minStatus    = 101 // 100 Continue belongs to the protocol (Expect: 100-continue), not to a handler
	maxStatus    = 599
	maxRedirects = 100 // far above any client's limit (Go's is 10), low enough to end quickly
)

// behaviour answers the Behaviour endpoints; /reserve requires an order.
func (x *exchange) behaviour() bool {
	b, err := ParseBehaviour(x.r.URL.Path, x.r.URL.Query())
	if err == nil && x.rec.Endpoint == "reserve" && b.Order == "" {
		err = errors.New("order: required")
	}
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	x.rec.Behaviour = b
	if v := x.r.Header.Get(vocab.DeadlineHeader); v != "" {
		budget, err := parseBudget(v)
		if err != nil {
			return x.text(http.StatusBadRequest, vocab.DeadlineHeader+": "+err.Error())
		}
		x.rec.Budget = budget
	}
	x.publish()
	fail, answered, complete := x.draw(&b)
	if answered {
		return complete
	}
	delay := x.delayOf(b)
	if x.rec.Budget >= 0 && x.rec.Budget < delay {
		// The work would outlast the caller's budget, so none of it is done.
		x.rec.Rejected = true
		return x.text(http.StatusServiceUnavailable, "budget "+x.rec.Budget.String()+" is shorter than the work, "+delay.String())
	}

	answerAt := x.rec.Arrived.Add(x.capped("delay", delay))
	if b.Order != "" {
		at, ok := x.commit(b, answerAt)
		if !ok {
			return x.text(http.StatusInsufficientStorage, fmt.Sprintf(
				"order table full: %d distinct order ids since the last reset (POST /stats/reset clears it)", x.s.opts.maxOrders))
		}
		answerAt = at
	}
	if fail {
		return x.failNow(b)
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
	return x.answer(b)
}

// capped returns d capped by the max duration, announced in CappedHeader.
func (x *exchange) capped(what string, d time.Duration) time.Duration {
	if maxDur := x.s.opts.maxDuration; d > maxDur {
		x.w.Header().Add(CappedHeader, fmt.Sprintf("%s %v capped to %v", what, d, maxDur))
		return maxDur
	}
	return d
}

// commit commits b's reservation on arrival, whatever the client decides later. It returns
// when to answer (an idempotent duplicate: the first answer's time); false when the order
// table is full.
func (x *exchange) commit(b Behaviour, answerAt time.Time) (time.Time, bool) {
	at, dup, full := x.s.ledger.reserve(b.Order, b.Idempotent || x.s.opts.idempotent, answerAt)
	if full {
		return time.Time{}, false
	}
	x.rec.Reserved, x.rec.Duplicate = !dup, dup
	x.publish()
	return at, true
}

func (x *exchange) reservation(b Behaviour) bool {
	body := []byte("reserved order=" + b.Order + "\n")
	kind := "new"
	if x.rec.Duplicate {
		kind = "duplicate"
	}
	x.w.Header().Set("X-Reservation", kind)
	if b.Bandwidth > 0 {
		return x.paced(b, body)
	}
	return x.head(http.StatusOK, len(body)) && x.body(body)
}

// stall holds the request until the client leaves, the server closes, or a cap passes.
func (x *exchange) stall(b Behaviour) bool {
	maxDur := x.s.opts.maxDuration
	limit := x.rec.Arrived.Add(maxDur)
	if b.MaxStall > 0 && b.MaxStall <= maxDur {
		limit = x.rec.Arrived.Add(b.MaxStall)
	} else {
		x.w.Header().Add(CappedHeader, fmt.Sprintf("stall capped to %v", maxDur))
	}
	if !x.waitUntil(limit) {
		return x.stop()
	}
	// A cap passed: an empty answer, written here so the log records it.
	return x.head(http.StatusOK, 0)
}

func (x *exchange) answer(b Behaviour) bool {
	if b.Bandwidth > 0 {
		return x.paced(b, bytes.Repeat([]byte{'x'}, b.Bytes))
	}
	if b.Every <= 0 {
		return x.head(http.StatusOK, b.Bytes) && x.body(bytes.Repeat([]byte{'x'}, b.Bytes))
	}
	// The cap bounds the whole trickle; comparing k with max/every avoids overflowing k*every.
	maxDur := x.s.opts.maxDuration
	last := min(b.Bytes, int(maxDur/b.Every))
	if last < b.Bytes {
		total := "more than " + maxDur.String()
		if b.Every <= time.Duration(math.MaxInt64)/time.Duration(b.Bytes) {
			total = (time.Duration(b.Bytes) * b.Every).String()
		}
		x.w.Header().Add(CappedHeader, fmt.Sprintf("trickle of %d bytes every %v (%s) capped to %v: the body ends short",
			b.Bytes, b.Every, total, maxDur))
	}
	if !x.head(http.StatusOK, b.Bytes) {
		return false
	}
	if !x.trickle(last, b.Every) {
		return false
	}
	// A body cut short: HTTP/1.1's connection closes by itself, but an HTTP/2 stream would end
	// normally and pass for whole, so abort it.
	return last == b.Bytes || !x.http2()
}

// trickle sends n body bytes, byte k at HeadSent + k*every, each wait to an absolute time so
// that latencies do not add up; the bytes due at a wake-up go in one write.
func (x *exchange) trickle(n int, every time.Duration) bool {
	head := x.rec.HeadSent
	buf := bytes.Repeat([]byte{'x'}, min(n, 64<<10))
	for sent := 0; sent < n; {
		next := head.Add(time.Duration(sent+1) * every)
		if !x.s.opts.precise {
			next = later(next, time.Now().Add(CoarseTick))
		}
		if !x.waitUntil(next) {
			return x.stop()
		}
		due := min(n, int(time.Since(head)/every))
		for due > sent {
			k := min(due-sent, len(buf))
			if !x.body(buf[:k]) {
				return false
			}
			sent += k
		}
	}
	return true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (x *exchange) notFound() bool {
	return x.text(http.StatusNotFound, notFoundBody(x.s.routes))
}

// methodNotAllowed answers 405 with the methods e accepts.
func (x *exchange) methodNotAllowed(e Endpoint) bool {
	allowed := strings.Join(e.Methods, ", ")
	x.w.Header().Set("Allow", allowed)
	return x.text(http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s, want %s", x.r.Method, x.r.URL.Path, allowed))
}

// status answers /status/CODE after its delay. A 1xx other than 101 is sent before a final
// 200; 101 closes the connection after it. HTTP/2 has no 101.
func (x *exchange) status() bool {
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

	if !x.waitUntil(x.rec.Arrived.Add(x.capped("delay", delay))) {
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
		x.w.WriteHeader(code)
		return x.text(http.StatusOK, "status "+name+" sent as an informational response, then this 200")
	}
	if !bodyAllowed(code) {
		return x.head(code, 0)
	}
	return x.text(code, "status "+name)
}

// redirect answers /redirect/N: a 302 to /redirect/N-1, or 200 for N = 0.
func (x *exchange) redirect() bool {
	n, err := pathNumber(x.r.URL.Path, "/redirect/", "redirect: N", 0, maxRedirects)
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	if n == 0 {
		return x.text(http.StatusOK, "done")
	}
	return x.redirectTo("/redirect/" + strconv.Itoa(n-1))
}

func (x *exchange) redirectLoop() bool {
	return x.redirectTo("/redirect-loop")
}

// redirectTo answers 302 to path with the request's own query, so a client's tag follows it;
// the Location is relative, right under any host name.
func (x *exchange) redirectTo(path string) bool {
	if q := x.r.URL.RawQuery; q != "" {
		path += "?" + q
	}
	x.w.Header().Set("Location", path)
	return x.text(http.StatusFound, "redirect to "+path)
}

// closeAfterRead reads the request, body included, then closes the connection unanswered: a
// clean FIN, since closing with unread data would reset it. HTTP/2 resets the stream instead.
func (x *exchange) closeAfterRead() bool {
	conn, _, err := x.rc.Hijack()
	if err != nil {
		return false
	}
	// The client sees the close, which is the point.
	_ = conn.Close()
	return true
}

// reset closes the connection with SO_LINGER 0 once the head is read: a TCP RST instead of a
// FIN. HTTP/2 resets the stream instead.
func (x *exchange) reset() bool {
	conn, _, err := x.rc.Hijack()
	if err != nil {
		return false
	}
	if tc, ok := tcpConn(conn); ok {
		// Without linger 0 the close is a plain FIN, less abrupt; nobody to report to.
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
	return true
}

// stats answers GET /stats (and HEAD) with the Stats as JSON.
func (x *exchange) stats() bool {
	data, err := json.Marshal(x.s.Stats())
	if err != nil {
		// Stats holds only ints and maps of them: Marshal cannot fail.
		panic("fakesrv: marshal stats: " + err.Error())
	}
	data = append(data, '\n')
	x.w.Header().Set("Content-Type", "application/json")
	return x.head(http.StatusOK, len(data)) && x.body(data)
}

func (x *exchange) statsReset() bool {
	x.s.Reset()
	return x.head(http.StatusNoContent, 0)
}
