package fakesrv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labrun/labrun/internal/clock"
)

// serveHTTP answers one request as its endpoint asks and logs it.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		// Served by another server after Close: nothing may run any more.
		panic(http.ErrAbortHandler)
	}
	defer s.handlers.Done()
	s.running.Add(1)
	defer s.running.Add(-1)

	e, found := route(s.routes, r.URL.Path)
	if !found {
		e.Name = otherEndpoint
	}
	x := &exchange{
		s:   s,
		w:   w,
		rc:  http.NewResponseController(w),
		r:   r,
		rec: Request{Method: r.Method, Path: r.RequestURI, Proto: r.Proto, Endpoint: e.Name, Arrived: time.Now(), Budget: -1},
	}
	if c, ok := r.Context().Value(connKey{}).(*connInfo); ok {
		x.rec.Conn, x.rec.ConnSeq = c.id, int(c.requests.Add(1))
	}
	x.entry = s.log.arrive(&x.rec)
	complete := x.serve(e, found)
	x.rec.Finished = time.Now()
	x.publish()
	if f := s.opts.onDone; f != nil {
		f(x.rec)
	}
	if !complete {
		// Returning normally would let net/http send an empty 200 for a request that was
		// never answered, which a client would count as a success. This panic is the
		// documented way to close the connection (HTTP/2: reset the stream) without a
		// response; net/http does not log it.
		panic(http.ErrAbortHandler)
	}
}

// exchange is one request in progress: the handler's view of the connection and the log
// record it fills. Only the handler goroutine touches it; publish copies rec to the shared
// log.
type exchange struct {
	s     *Server
	w     http.ResponseWriter
	rc    *http.ResponseController
	r     *http.Request
	rec   Request  // what the log will show, owned by the handler
	entry *Request // the log slot, guarded by the log's mutex
}

// Every endpoint handler answers its exchange and returns false when the client left or the
// server closed before the response was complete; the connection (HTTP/2: the stream) must
// then be closed without further writes. The request body has been read before, except for
// endpoints with keepBody. The handlers live in endpoints.go.

// publish copies the record to the log so that Requests shows progress while in flight.
func (x *exchange) publish() {
	x.s.log.publish(x.entry, &x.rec)
}

// http2 reports whether the request came over HTTP/2 (TLS or h2c).
func (x *exchange) http2() bool {
	return x.r.ProtoMajor == 2
}

// serve reads the request body (unless e reads it itself) and answers as e asks, or with a
// 404 or 405. It reports whether the answer was complete.
func (x *exchange) serve(e Endpoint, found bool) bool {
	if !found || !e.keepBody {
		if err := x.drain(); err != nil {
			return x.bodyFailed(err)
		}
	}
	switch {
	case !found:
		return x.notFound()
	case !e.allows(x.r.Method):
		return x.methodNotAllowed(e)
	}
	if refused, complete := x.refusedControl(e); refused {
		return complete
	}
	return e.serve(x)
}

// drain reads the request body to EOF. This is what lets net/http notice a client that
// leaves: it starts watching the connection (and cancels r.Context() on EOF) only once the
// body is consumed. For a GET it is immediate. With a read timeout, the body must arrive
// within it of the handler's start.
func (x *exchange) drain() error {
	d := x.s.opts.readTimeout
	if d > 0 {
		// The error says only that the writer cannot set deadlines (a test's recorder).
		_ = x.rc.SetReadDeadline(x.rec.Arrived.Add(d))
	}
	n, err := io.Copy(io.Discard, x.r.Body)
	x.rec.BodyBytes = int(n)
	if err == nil && d > 0 {
		// Lift the deadline once the body is whole, or net/http's watch for a departing
		// client would take its expiry for a departure. After a timeout it stays, so that
		// net/http gives up on the rest of the body at once instead of reading it.
		_ = x.rc.SetReadDeadline(time.Time{})
	}
	return err
}

// bodyFailed ends an exchange whose request body could not be read: a 408 when the client
// was too slow to send it, otherwise (the client left) nothing.
func (x *exchange) bodyFailed(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return x.stop()
	}
	if !x.http2() {
		// The rest of the body is still on its way: this connection cannot carry another
		// request. (HTTP/2 forbids the header; there the stream ends, not the connection.)
		x.w.Header().Set("Connection", "close")
	}
	return x.text(http.StatusRequestTimeout, fmt.Sprintf("request body not received within %v", x.s.opts.readTimeout))
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
// on that wiring, nor on who serves the handler.
func (x *exchange) waitUntil(t time.Time) bool {
	reqDone, srvDone := x.r.Context().Done(), x.s.ctx.Done()
	select {
	case <-reqDone:
		return false
	case <-srvDone:
		return false
	default:
	}
	if !x.s.opts.precise {
		return x.waitAlarm(t, reqDone, srvDone)
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
	// The last stretch (under timerSlack) of a precise wait is spent yielding, without a
	// timer.
	for time.Now().Before(t) {
		runtime.Gosched()
	}
	return true
}

// waitAlarm is a coarse server's wait until t: a Go timer, which wakes up to a millisecond
// late (the runtime sleeps in whole milliseconds), brought forward by a clock.Alarm, which
// the kernel wakes clock.Lead early and which yields through the rest. The alarm costs up to
// clock.Lead of CPU per wait, so it is set only for waits of at least alarmMin: a delay or a
// slow trickle lands within a fraction of a millisecond, while a trickle faster than that,
// whose bytes go out a tick at a time anyway, keeps to the Go timer and stays cheap.
func (x *exchange) waitAlarm(t time.Time, reqDone, srvDone <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	due := make(chan struct{})
	if d >= alarmMin {
		var once sync.Once
		a := clock.NewAlarm(func() { once.Do(func() { close(due) }) })
		a.Set(t)
		defer a.Stop()
	}
	select {
	case <-timer.C:
	case <-due:
	case <-reqDone:
		return false
	case <-srvDone:
		return false
	}
	return true
}

// alarmMin is the shortest wait of a coarse server that an alarm brings forward: at most
// clock.Lead of yielding per alarmMin, a tenth of a core for the fastest trickle that uses it.
const alarmMin = 5 * time.Millisecond

// timerSlack is how much earlier than a scheduled time a precise server's timer is set.
// Timers on a virtual machine wake up some 0.4 ms late (the median measured on labrun's
// 2-core CI machines), and in experiment B that lateness adds up batch after batch although
// the server's service time is exactly what the experiment holds constant. Yielding through
// the last stretch costs up to this much CPU per wait: negligible for an experiment's few
// waits, a whole core for a trickle of a byte a millisecond, which is why labrun serve
// waits coarsely (WithPreciseTiming).
const timerSlack = time.Millisecond

// CoarseTick is the shortest wait of a coarse server (WithPreciseTiming(false)): a trickle faster than one byte per
// tick sends the bytes due at each tick together, so the server wakes up at most once per
// tick whatever the request asks. Each wake-up costs some 50 to 100 us of CPU on a loaded
// 2-core machine (the timer, the write, the scheduler), so 2 ms keeps the fastest trickle
// near 0.05 s of CPU per second; a byte is at most that late, which no client timeout of a
// real configuration can tell apart.
const CoarseTick = 2 * time.Millisecond

// stop records why the exchange ended early and returns false. A cancelled request context
// while the server is still open means the client went away; a closing server is not the
// client's doing.
func (x *exchange) stop() bool {
	x.rec.ClientGone = x.s.ctx.Err() == nil
	return false
}

// bodyAllowed reports whether a response with status may have a body (RFC 9110: not 1xx,
// 204 or 304).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// connInfo numbers a connection and counts its requests, for Request.Conn and ConnSeq and for
// Behaviour.FailOn. The server's ConnContext attaches one to every connection.
type connInfo struct {
	id       int
	requests atomic.Int64
}

type connKey struct{}

// connContext is the server's ConnContext: it gives each accepted connection its number.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	id := int(s.connIDs.Add(1))
	if w, ok := c.(*watchedConn); ok {
		w.attach(s.connLog, id)
	}
	return context.WithValue(ctx, connKey{}, &connInfo{id: id})
}
