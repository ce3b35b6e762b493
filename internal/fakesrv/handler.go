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
		panic(http.ErrAbortHandler)
	}
	defer s.handlers.Done()
	s.running.Add(1)
	defer s.running.Add(-1)

	e, found := route(s.routes, r.URL.Path)
	if !found && s.proxy != nil {
		e, found = s.routes[len(s.routes)-1], true // proxyEndpoints: the forwarding endpoint
	}
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
		// Returning would let net/http send an empty 200, which a client counts as a success; this
		// panic closes the connection (HTTP/2: resets the stream) without an answer.
		panic(http.ErrAbortHandler)
	}
}

// exchange is one request in progress, touched by its handler goroutine only; publish copies
// rec to the shared log.
type exchange struct {
	s     *Server
	w     http.ResponseWriter
	rc    *http.ResponseController
	r     *http.Request
	rec   Request  // what the log will show, owned by the handler
	entry *Request // the log slot, guarded by the log's mutex
}

// Every endpoint handler returns false when the client left or the server closed before the
// response was complete; the connection must then close without further writes.

// publish copies the record to the log, so Requests shows progress in flight.
func (x *exchange) publish() {
	x.s.log.publish(x.entry, &x.rec)
}

func (x *exchange) http2() bool {
	return x.r.ProtoMajor == 2
}

// serve reads the request body (unless e reads it itself) and answers as e asks, or with a 404
// or 405. It reports whether the answer was complete.
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

// drain reads the request body to EOF: net/http watches for a departing client only once the
// body is consumed. With a read timeout, the body must arrive within it.
func (x *exchange) drain() error {
	d := x.s.opts.readTimeout
	if d > 0 {
		_ = x.rc.SetReadDeadline(x.rec.Arrived.Add(d))
	}
	n, err := io.Copy(io.Discard, x.r.Body)
	x.rec.BodyBytes = int(n)
	if err == nil && d > 0 {
		// Lift the deadline once the body is whole, or net/http's watch would take its expiry for a
		// departure.
		_ = x.rc.SetReadDeadline(time.Time{})
	}
	return err
}

// bodyFailed ends an exchange whose body could not be read: a 408 when the client was too slow.
func (x *exchange) bodyFailed(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return x.stop()
	}
	if !x.http2() {
		// The rest of the body is on its way: the connection cannot carry another request.
		x.w.Header().Set("Connection", "close")
	}
	return x.text(http.StatusRequestTimeout, fmt.Sprintf("request body not received within %v", x.s.opts.readTimeout))
}

func (x *exchange) text(status int, msg string) bool {
	body := []byte(msg + "\n")
	return x.head(status, len(body)) && x.body(body)
}

// head sends and flushes the response head with a Content-Length, so the client sees it even
// when the body trickles. A status without a body (1xx, 204, 304) gets neither header.
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

// body writes and flushes p, counting it in BytesSent once the flush succeeded.
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

// waitUntil waits until t; false as soon as the client leaves or the server closes (selected
// explicitly, so that Close does not depend on who serves the handler).
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
	// A precise wait yields through its last stretch (timerSlack).
	for time.Now().Before(t) {
		runtime.Gosched()
	}
	return true
}

// waitAlarm is a coarse server's wait until t: a Go timer, which may wake a millisecond late,
// brought forward by a clock.Alarm for waits of at least alarmMin; a faster trickle keeps to
// the Go timer and stays cheap.
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

// alarmMin is the shortest wait an alarm brings forward: the alarm yields up to clock.Lead.
const alarmMin = 5 * time.Millisecond

// timerSlack is how much earlier than a scheduled time a precise server's timer is set; it
// yields through the rest, which costs CPU per wait (hence coarse waits for labrun serve).
const timerSlack = time.Millisecond

// CoarseTick is the shortest wait of a coarse server: a trickle faster than a byte per tick
// sends the bytes due at each tick together.
const CoarseTick = 2 * time.Millisecond

// stop records why the exchange ended early and returns false: a cancelled request while the
// server is open means the client left.
func (x *exchange) stop() bool {
	x.rec.ClientGone = x.s.ctx.Err() == nil
	return false
}

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// connInfo numbers a connection and counts its requests (Request.Conn, ConnSeq,
// Behaviour.FailOn).
type connInfo struct {
	id       int
	requests atomic.Int64
}

type connKey struct{}

func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	id := int(s.connIDs.Add(1))
	if w, ok := c.(*watchedConn); ok {
		w.attach(s.connLog, id)
	}
	info := &connInfo{id: id}
	s.silent.track(c, info)
	return context.WithValue(ctx, connKey{}, info)
}
