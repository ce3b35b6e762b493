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

// conn is a connection with an SO_TIMEOUT-style read timeout: while armed, each Read blocks at
// most readTimeout. While pooled it records what net/http's background read sees (dead) and,
// when blind (a Java client not reading), holds that back until a request is written (held).
type conn struct {
	net.Conn
	pool         *pool
	readTimeout  time.Duration
	writeTimeout time.Duration
	born         time.Time
	blind        bool

	mu        sync.Mutex // guards the fields below and the read deadline
	owner     *attemptState
	armed     bool
	idleSince time.Time
	dead      error // what a read returned while pooled
	held      chan struct{}
	refused   error
	closed    bool

	// handshake is the TLS handshake's per-read timeout (0: none).
	handshake time.Duration

	firedAt atomic.Int64
	// alarm ends a pending read on time (Go's deadline timer may be 1 ms late, package clock).
	alarm     *clock.Lazy
	deadline  time.Time
	stirred   chan struct{}
	closeOnce sync.Once
}

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

// healthRead is the libraries' health read (HealthRead): it waits up to d for the background
// read to return or the connection to close; take reports what came.
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

func (cn *conn) stirLocked() {
	if cn.stirred != nil {
		close(cn.stirred)
		cn.stirred = nil
	}
}

// take makes st the owner, without read deadline until its request is written.
func (cn *conn) take(st *attemptState, now time.Time) health {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.owner, cn.armed = st, false
	cn.setReadDeadlineLocked(time.Time{})
	return cn.healthLocked(now)
}

// discard makes every write fail with why; the caller closes the connection.
func (cn *conn) discard(why error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.refused, cn.owner = why, nil
}

// arm starts the read timeout if st still owns the connection, releasing a held read.
func (cn *conn) arm(st *attemptState, now time.Time) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.owner != st {
		return
	}
	cn.releaseLocked()
	if cn.readTimeout > 0 {
		cn.armed = true
		cn.setReadDeadlineLocked(now.Add(cn.readTimeout))
	}
}

// disarm clears the read timeout if st still owns the connection and reports whether it is
// older than ttl (0: no limit).
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

func (cn *conn) evict(now time.Time, maxIdle time.Duration) {
	cn.mu.Lock()
	idle := cn.owner == nil && !cn.idleSince.IsZero() && !cn.closed && !now.Before(cn.idleSince.Add(maxIdle))
	if idle {
		cn.closed = true
	}
	cn.mu.Unlock()
	if idle {
		cn.Close()
	}
}

func (cn *conn) setHandshakeTimeout(d time.Duration) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.handshake = d
	cn.setReadDeadlineLocked(time.Time{})
}

func (cn *conn) setReadDeadlineLocked(t time.Time) {
	cn.Conn.SetReadDeadline(t)
	cn.deadline = t
	if cn.closed {
		t = time.Time{}
	}
	if cn.alarm != nil {
		cn.alarm.Set(t)
	}
}

// expireRead moves a due read deadline to the past, as the deadline's own timer does.
func (cn *conn) expireRead() {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.deadline.IsZero() || time.Now().Before(cn.deadline) {
		return
	}
	cn.Conn.SetReadDeadline(expired)
}

var expired = time.Unix(1, 0)

func (cn *conn) releaseLocked() {
	if cn.held != nil {
		close(cn.held)
		cn.held = nil
	}
}

// Write bounds each blocking write by the write timeout and tells the attempt of a failure
// before net/http learns of it.
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
			// Cancel before the Transport sees the error, or it replays the request.
			st.cancel(ErrReadTimeout)
		}
		return n, err
	}
	if st := cn.afterRead(n, err); st != nil {
		st.connLost(cn, err)
	}
	return n, err
}

// afterRead records a read while pooled (held back when blind) and returns the owning attempt
// when the read failed.
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

// timedOut reports whether the read timeout ended the call first (a tie is the deadline).
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

// Close closes the connection; before the response head it fails the owning attempt.
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

type wrapper interface {
	NetConn() net.Conn
}

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
