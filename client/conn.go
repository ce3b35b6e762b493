package client

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// conn is a pooled connection with an SO_TIMEOUT-style read timeout: while armed (a call's
// request is written and its response not yet read), every Read may block at most
// readTimeout, the deadline being set afresh at the start of each Read, so any byte that
// arrives restarts the clock.
//
// What Stats needs to know of a connection (who uses it, who claims it) is the pool's
// bookkeeping, under the pool's lock; a conn tells the pool only that it closed.
type conn struct {
	net.Conn
	pool         *pool
	readTimeout  time.Duration
	writeTimeout time.Duration
	born         time.Time

	mu    sync.Mutex    // guards owner, armed and the read deadline
	owner *attemptState // the attempt that got the connection last
	armed bool

	firedAt   atomic.Int64 // UnixNano of the read timeout, 0 if it never fired
	closeOnce sync.Once
}

// take makes st the connection's owner, with no read deadline until its request is written.
func (cn *conn) take(st *attemptState) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.owner, cn.armed = st, false
	cn.Conn.SetReadDeadline(time.Time{})
}

// arm starts the read timeout at now, also for a read that is already pending, if st still
// owns the connection.
func (cn *conn) arm(st *attemptState, now time.Time) {
	if cn.readTimeout <= 0 {
		return
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.owner != st {
		return // the response was read and the connection pooled before this hook ran
	}
	cn.armed = true
	cn.Conn.SetReadDeadline(now.Add(cn.readTimeout))
}

// disarm clears the read timeout of a connection going back to the pool, if st still owns it,
// and reports whether it did.
func (cn *conn) disarm(st *attemptState) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.owner != st {
		return false
	}
	cn.owner = nil
	if cn.armed {
		cn.armed = false
		cn.Conn.SetReadDeadline(time.Time{})
	}
	return true
}

// Write bounds each blocking write by the write timeout, when one is set.
func (cn *conn) Write(p []byte) (int, error) {
	if cn.writeTimeout > 0 {
		cn.Conn.SetWriteDeadline(time.Now().Add(cn.writeTimeout))
	}
	return cn.Conn.Write(p)
}

func (cn *conn) Read(p []byte) (int, error) {
	cn.mu.Lock()
	if cn.armed {
		cn.Conn.SetReadDeadline(time.Now().Add(cn.readTimeout))
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
	}
	return n, err
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

func (cn *conn) Close() error {
	err := net.ErrClosed
	cn.closeOnce.Do(func() {
		err = cn.Conn.Close()
		cn.pool.closed(cn)
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
