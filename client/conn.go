package client

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labrun/labrun/internal/clock"
)

// conn is a pooled connection with an SO_TIMEOUT-style read timeout: while armed (a call's
// request is written and its response not yet read), every Read may block at most
// readTimeout, the deadline being set afresh at the start of each Read, so any byte that
// arrives restarts the clock.
//
// It also watches what happens to it while it sits in the pool. net/http keeps a read pending
// on every idle connection (persistConn.readLoop), which returns the moment the server closes
// or resets it; conn records that (dead) for the reuse check, and when blind, as a Java client
// that is not reading sees nothing, it holds the read's result back from net/http until a
// request has been written on the connection (held).
//
// What Stats needs to know of a connection (who uses it, who claims it) is the pool's
// bookkeeping, under the pool's lock; a conn tells the pool only that it closed.
type conn struct {
	net.Conn
	pool         *pool
	readTimeout  time.Duration
	writeTimeout time.Duration
	born         time.Time
	blind        bool // Config.blind()

	mu        sync.Mutex    // guards the fields below and the read deadline
	owner     *attemptState // the attempt that got the connection last, nil while pooled
	armed     bool
	idleSince time.Time     // when it last went back to the pool (zero: never)
	dead      error         // what a read returned while the connection sat in the pool
	held      chan struct{} // closed to hand a held read's result to net/http
	refused   error         // every write fails with this: discarded before anything was written
	closed    bool

	// handshake is the socket timeout of every read of the TLS handshake (0: none), set by
	// dialTLS while the handshake runs, before the connection has an owner.
	handshake time.Duration

	firedAt atomic.Int64 // UnixNano of the read timeout, 0 if it never fired
	// alarm ends a pending read when the read deadline is due (expireRead), on time rather
	// than up to 1 ms late as Go's deadline timer may (package clock); deadline is the read
	// deadline the alarm is set for, zero when none.
	alarm     *clock.Lazy
	deadline  time.Time
	stirred   chan struct{} // made by healthRead; closed when bytes, an error or a close come
	closeOnce sync.Once
}

// peek returns what is known of the connection's health at now, as take does, without
// taking it.
func (cn *conn) peek(now time.Time) health {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.healthLocked(now)
}

func (cn *conn) healthLocked(now time.Time) health {
	h := health{pooled: !cn.idleSince.IsZero(), dead: cn.dead, closed: cn.closed}
	if h.pooled {
		h.idle = now.Sub(cn.idleSince)
	}
	return h
}

// healthRead is the libraries' read with a 1 ms timeout on a pooled connection (HealthRead):
// it waits up to d for the connection's background read to return, and returns at once when
// it returns or the connection closes, as the library's read does: bytes (OkHttp's
// exhausted() and HttpClient 5's fillInputBuffer return at once: healthy), the end of the
// stream or a reset (dead), or a close by the evictor (closed). The connection has no owner
// while it waits, so afterRead records what the read returns; take reports it.
func (cn *conn) healthRead(d time.Duration) {
	cn.mu.Lock()
	if cn.dead != nil || cn.closed {
		cn.mu.Unlock()
		return
	}
	if cn.stirred == nil {
		cn.stirred = make(chan struct{})
	}
	stirred := cn.stirred
	cn.mu.Unlock()
	var once sync.Once
	done := make(chan struct{})
	end := func() { once.Do(func() { close(done) }) }
	t := time.AfterFunc(d, end)
	defer t.Stop()
	a := clock.NewAlarm(end)
	a.Set(time.Now().Add(d))
	defer a.Stop()
	select {
	case <-stirred:
	case <-done:
	}
}

// stirLocked ends a health read that waits on the connection.
func (cn *conn) stirLocked() {
	if cn.stirred != nil {
		close(cn.stirred)
		cn.stirred = nil
	}
}

// take makes st the connection's owner, with no read deadline until its request is written,
// and returns what is known of the connection's health.
func (cn *conn) take(st *attemptState, now time.Time) health {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.owner, cn.armed = st, false
	cn.setReadDeadlineLocked(time.Time{})
	return cn.healthLocked(now)
}

// discard makes every write fail with why, so that nothing reaches the server, and disowns
// the connection; the caller closes it.
func (cn *conn) discard(why error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.refused, cn.owner = why, nil
}

// arm starts the read timeout at now, also for a read that is already pending, if st still
// owns the connection. st's request is written: a read result held back is handed over.
func (cn *conn) arm(st *attemptState, now time.Time) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.owner != st {
		return // the response was read and the connection pooled before this hook ran
	}
	cn.releaseLocked()
	if cn.readTimeout > 0 {
		cn.armed = true
		cn.setReadDeadlineLocked(now.Add(cn.readTimeout))
	}
}

// disarm clears the read timeout of a connection going back to the pool at now, if st still
// owns it. It reports whether the connection is older than ttl (0: no limit) and must be
// closed: then take already sees it closed.
func (cn *conn) disarm(st *attemptState, now time.Time, ttl time.Duration) (expired bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.owner != st {
		return false
	}
	cn.owner, cn.idleSince = nil, now
	if cn.armed {
		cn.armed = false
		cn.setReadDeadlineLocked(time.Time{})
	}
	if ttl > 0 && now.Sub(cn.born) > ttl {
		cn.closed = true
		return true
	}
	return false
}

// evict closes the connection if it has sat in the pool maxIdle or longer at now.
func (cn *conn) evict(now time.Time, maxIdle time.Duration) {
	cn.mu.Lock()
	idle := cn.owner == nil && !cn.idleSince.IsZero() && !cn.closed && !now.Before(cn.idleSince.Add(maxIdle))
	if idle {
		cn.closed = true // from now on take sees it closed, even before Close runs
	}
	cn.mu.Unlock()
	if idle {
		cn.Close()
	}
}

// setHandshakeTimeout makes every read wait at most d (0: without limit), as a socket timeout
// set for the TLS handshake does, and clears the read deadline.
func (cn *conn) setHandshakeTimeout(d time.Duration) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.handshake = d
	cn.setReadDeadlineLocked(time.Time{})
}

// setReadDeadlineLocked sets the read deadline t (zero: none), and the alarm for it.
func (cn *conn) setReadDeadlineLocked(t time.Time) {
	cn.Conn.SetReadDeadline(t)
	cn.deadline = t
	if cn.closed {
		t = time.Time{} // Close stopped the alarm: a read racing it must not set it again
	}
	if cn.alarm != nil {
		cn.alarm.Set(t)
	}
}

// expireRead is the alarm's function: the read deadline is due, so it is moved to the past,
// which ends a pending read at once with os.ErrDeadlineExceeded, exactly as the deadline's
// own timer does when it fires.
func (cn *conn) expireRead() {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.deadline.IsZero() || time.Now().Before(cn.deadline) {
		return // moved or cleared since the alarm was set
	}
	cn.Conn.SetReadDeadline(expired)
}

// expired is a read deadline in the past.
var expired = time.Unix(1, 0)

// releaseLocked hands a held read's result to net/http.
func (cn *conn) releaseLocked() {
	if cn.held != nil {
		close(cn.held)
		cn.held = nil
	}
}

// Write bounds each blocking write by the write timeout, when one is set. A failed write tells
// the connection's attempt before net/http learns of it.
func (cn *conn) Write(p []byte) (int, error) {
	cn.mu.Lock()
	refused, st := cn.refused, cn.owner
	cn.mu.Unlock()
	if refused != nil {
		return 0, refused
	}
	if cn.writeTimeout > 0 {
		cn.Conn.SetWriteDeadline(time.Now().Add(cn.writeTimeout))
	}
	n, err := cn.Conn.Write(p)
	if err != nil && st != nil {
		st.connLost(cn, err)
	}
	return n, err
}

func (cn *conn) Read(p []byte) (int, error) {
	cn.mu.Lock()
	switch {
	case cn.armed:
		cn.setReadDeadlineLocked(time.Now().Add(cn.readTimeout))
	case cn.handshake > 0:
		cn.setReadDeadlineLocked(time.Now().Add(cn.handshake))
	}
	cn.mu.Unlock()
	n, err := cn.Conn.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		cn.mu.Lock()
		st, armed := cn.owner, cn.armed
		cn.mu.Unlock()
		if armed && st != nil {
			cn.firedAt.CompareAndSwap(0, time.Now().UnixNano())
			// A failed read of the first response byte on a reused connection makes the
			// Transport replay an idempotent request on a new connection, silently doubling
			// the wait. Cancelling the attempt before the error reaches the Transport stops
			// that: it checks the request's context before every retry.
			st.cancel(ErrReadTimeout)
		}
		return n, err
	}
	if st := cn.afterRead(n, err); st != nil {
		st.connLost(cn, err)
	}
	return n, err
}

// afterRead looks at what a read returned. One that returns while the connection sits in the
// pool is net/http's background read: an error there is what a stale check sees, and a blind
// connection holds the result back until a request is written on it or it is closed. A
// connection that never went back to the pool is not held: its reads are the TLS handshake's.
// It returns the attempt that owns the connection when the read failed.
func (cn *conn) afterRead(n int, err error) *attemptState {
	cn.mu.Lock()
	if cn.owner == nil && !cn.closed && (n > 0 || err != nil) {
		if err != nil && cn.dead == nil {
			cn.dead = err
		}
		cn.stirLocked()
		if cn.blind && !cn.idleSince.IsZero() {
			held := make(chan struct{})
			cn.held = held
			cn.mu.Unlock()
			<-held
			cn.mu.Lock()
		}
	}
	st := cn.owner
	cn.mu.Unlock()
	if err == nil {
		return nil
	}
	return st
}

// timedOut reports whether the read timeout ended the connection's call, and did so before
// the call's context was done (a read timeout and a deadline firing together count as the
// deadline).
func (cn *conn) timedOut(ctx context.Context) bool {
	at := cn.firedAt.Load()
	if at == 0 {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && ctx.Err() != nil && !time.Unix(0, at).Before(dl) {
		return false
	}
	return true
}

// Close closes the connection. A close before the response head, by net/http or by labrun,
// is a failure of the attempt that owns it.
func (cn *conn) Close() error {
	err := net.ErrClosed
	cn.closeOnce.Do(func() {
		cn.mu.Lock()
		cn.closed = true
		cn.releaseLocked()
		cn.stirLocked()
		st := cn.owner
		cn.deadline = time.Time{}
		cn.mu.Unlock()
		if cn.alarm != nil {
			cn.alarm.Stop()
		}
		err = cn.Conn.Close()
		cn.pool.closed(cn)
		if st != nil {
			st.connLost(cn, net.ErrClosed)
		}
	})
	return err
}

// wrapper is a connection layered over another one, as *tls.Conn is.
type wrapper interface {
	NetConn() net.Conn
}

// asConn finds labrun's connection under c (a *tls.Conn wraps it for https).
func asConn(c net.Conn) *conn {
	for c != nil {
		switch x := c.(type) {
		case *conn:
			return x
		case wrapper:
			c = x.NetConn()
		default:
			return nil
		}
	}
	return nil
}
