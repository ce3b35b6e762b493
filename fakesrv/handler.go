package fakesrv

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/labrun/labrun/vocab"
)

// Request is what the server saw of one request. Times are the server's own clock readings
// (with their monotonic part, so differences between them are exact).
type Request struct {
	// Seq is the 1-based arrival number since the server started or the last Reset.
	Seq int
	// Path is the request path and query as received.
	Path string
	// Endpoint names the endpoint the path selected: reserve, trickle, stall, delay, status,
	// redirect, redirect-loop, close-after-read, reset, stats or other (no such endpoint).
	Endpoint string
	// Behaviour is what the request asked for: zero when its query was invalid, and for the
	// endpoints other than reserve, trickle, stall and delay except for a status delay.
	Behaviour Behaviour
	// Arrived is when the handler started.
	Arrived time.Time
	// HeadSent is when the response head was flushed; zero if it never was.
	HeadSent time.Time
	// Finished is when the handler ended; zero while the request is in progress.
	Finished time.Time
	// BytesSent counts the body bytes successfully written and flushed.
	BytesSent int
	// Reserved is true when this request committed a reservation (false for an idempotent
	// duplicate).
	Reserved bool
	// Duplicate is true for an idempotent repeat of an earlier reservation of the same order.
	Duplicate bool
	// ClientGone is true when the client went away before the response was complete. It
	// stays false when the server's own Close cut the response short.
	ClientGone bool
	// Status is the final status code sent, 0 if none (also for close-after-read and
	// reset, which never answer).
	Status int
	// Budget is the client's remaining time from its X-Deadline-Ms header, -1 without one.
	Budget time.Duration
	// Rejected is true when the server answered 503 at once because Budget was shorter than
	// the work asked for (Delay), without reserving.
	Rejected bool
}

// serveHTTP answers one request as its endpoint asks and logs it.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()

	endpoint, serve := route(r.URL.Path)
	x := &exchange{
		s:   s,
		w:   w,
		rc:  http.NewResponseController(w),
		r:   r,
		rec: Request{Path: r.RequestURI, Endpoint: endpoint, Arrived: time.Now(), Budget: -1},
	}
	x.entry = s.arrive(&x.rec)
	complete := serve(x)
	x.rec.Finished = time.Now()
	x.publish()
	if !complete {
		// Returning normally would let net/http send an empty 200 for a request that was
		// never answered, which a client would count as a success. This panic is the
		// documented way to close the connection without a response; net/http does not log it.
		panic(http.ErrAbortHandler)
	}
}

// arrive numbers rec and appends a copy of it to the log; the copy is the request's log slot.
func (s *Server) arrive(rec *Request) *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	rec.Seq = s.seq
	s.endpoints[rec.Endpoint]++
	entry := new(Request)
	*entry = *rec
	if n := s.opts.logLimit; n > 0 && len(s.log) >= n {
		// Drop the oldest half at once rather than one entry per request: amortised O(1).
		s.log = append(s.log[:0], s.log[len(s.log)-n/2:]...)
	}
	s.log = append(s.log, entry)
	return entry
}

// reserve commits a reservation for order on arrival and returns when it must be answered:
// at answerAt for a counted reservation, or, for an idempotent duplicate, at the first
// reservation's answer time (never later than answerAt's cap, since the first arrived earlier).
func (s *Server) reserve(order string, idempotent bool, answerAt time.Time) (at time.Time, duplicate bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, seen := s.firstAnswer[order]
	if idempotent && seen {
		return first, true
	}
	s.reservations[order]++
	s.totalReserved++
	if !seen {
		s.firstAnswer[order] = answerAt
	}
	return answerAt, false
}

// exchange is one request in progress: the handler's view of the connection and the log
// record it fills. Only the handler goroutine touches it; publish copies rec to the shared
// log under the server's mutex.
type exchange struct {
	s     *Server
	w     http.ResponseWriter
	rc    *http.ResponseController
	r     *http.Request
	rec   Request  // what the log will show, owned by the handler
	entry *Request // the log slot, guarded by s.mu
}

// publish copies the record to the log so that Requests shows progress while in flight.
func (x *exchange) publish() {
	x.s.mu.Lock()
	*x.entry = x.rec
	x.s.mu.Unlock()
}

// Every endpoint handler answers its exchange and returns false when the client left or the
// server closed before the response was complete; the connection must then be closed
// without further writes. The handlers live in endpoints.go, except this one.

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

	maxDur := x.s.opts.maxDuration
	limit := x.rec.Arrived.Add(maxDur)
	answerAt := x.rec.Arrived.Add(min(b.Delay, maxDur))

	if b.Order != "" {
		// Committed before any wait: the side effect happens on arrival, whatever the client
		// decides afterwards.
		at, dup := x.s.reserve(b.Order, b.Idempotent || x.s.opts.idempotent, answerAt)
		answerAt = at
		x.rec.Reserved, x.rec.Duplicate = !dup, dup
		x.publish()
	}

	if b.Stall {
		if b.MaxStall > 0 {
			limit = x.rec.Arrived.Add(min(b.MaxStall, maxDur))
		}
		if !x.waitUntil(limit) {
			return x.stop()
		}
		// A cap passed: end the exchange with an empty answer, as net/http would do anyway
		// when a handler returns, but write it here so that the log records it.
		return x.head(http.StatusOK, 0)
	}

	if !x.waitUntil(answerAt) {
		return x.stop()
	}

	if b.Order != "" {
		body := []byte("reserved order=" + b.Order + "\n")
		kind := "new"
		if x.rec.Duplicate {
			kind = "duplicate"
		}
		x.w.Header().Set("X-Reservation", kind)
		return x.head(http.StatusOK, len(body)) && x.body(body)
	}

	if !x.head(http.StatusOK, b.Bytes) {
		return false
	}
	if b.Every <= 0 {
		return x.body(bytes.Repeat([]byte{'x'}, b.Bytes))
	}
	return x.trickle(b.Bytes, b.Every)
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
	// When the cap cut the body short, returning normally is enough: net/http closes a
	// connection whose response is shorter than its Content-Length.
	return true
}

// drain reads the request body to EOF. This is what lets net/http notice a client that
// leaves: it starts watching the connection (and cancels r.Context() on EOF) only once the
// body is consumed. For a GET it is immediate. It reports whether the body was read whole.
func (x *exchange) drain() bool {
	_, err := io.Copy(io.Discard, x.r.Body)
	return err == nil
}

// text answers status with the one-line body msg.
func (x *exchange) text(status int, msg string) bool {
	body := []byte(msg + "\n")
	return x.head(status, len(body)) && x.body(body)
}

// head sends the response head with a Content-Length and flushes it at once, so the client
// sees the head even when the body trickles. The Content-Type is text/plain unless the
// handler set another. A status that cannot have a body (1xx, 204, 304) gets neither
// header, as the HTTP spec wants.
func (x *exchange) head(status, contentLength int) bool {
	h := x.w.Header()
	if bodyAllowed(status) {
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "text/plain; charset=utf-8")
		}
		h.Set("Content-Length", strconv.Itoa(contentLength))
	}
	x.w.WriteHeader(status)
	if err := x.rc.Flush(); err != nil {
		return x.stop()
	}
	x.rec.Status = status
	x.rec.HeadSent = time.Now()
	x.publish()
	return true
}

// body writes and flushes p, counting it in BytesSent only once the flush succeeded.
func (x *exchange) body(p []byte) bool {
	if len(p) == 0 || x.r.Method == http.MethodHead {
		return true // nothing to send; a HEAD response has no body
	}
	if _, err := x.w.Write(p); err != nil {
		return x.stop()
	}
	if err := x.rc.Flush(); err != nil {
		return x.stop()
	}
	x.rec.BytesSent += len(p)
	return true
}

// waitUntil waits until t. It returns false as soon as the client leaves or the server
// closes. r.Context() is derived from the server's context (BaseContext), so it would be
// enough alone; the server's context is selected explicitly so that Close does not depend
// on that wiring.
func (x *exchange) waitUntil(t time.Time) bool {
	reqDone, srvDone := x.r.Context().Done(), x.s.ctx.Done()
	select {
	case <-reqDone:
		return false
	case <-srvDone:
		return false
	default:
	}
	if d := time.Until(t) - timerSlack; d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-reqDone:
			return false
		case <-srvDone:
			return false
		}
	}
	// The last stretch (under timerSlack) is waited by yielding, without a timer.
	for time.Now().Before(t) {
		runtime.Gosched()
	}
	return true
}

// timerSlack is how much earlier than a scheduled time the server's timer is set. Timers on
// a virtual machine wake up some 0.4 ms late (the median measured on labrun's 2-core CI
// machines), and in experiment B that lateness adds up batch after batch although the
// server's service time is exactly what the experiment holds constant. Yielding through the
// last stretch costs at most this much CPU per wait.
const timerSlack = time.Millisecond

// stop records why the exchange ended early and returns false. A cancelled request context
// while the server is still open means the client went away; a closing server is not the
// client's doing.
func (x *exchange) stop() bool {
	x.rec.ClientGone = x.s.ctx.Err() == nil
	return false
}
