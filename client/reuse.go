package client

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// Before a pooled connection is reused, the library's check (onGotConn) may discard it before
// anything is written; the request then takes another, costing no attempt.

// NoValidation turns the stale check off (HttpClient 5: a negative value).
const NoValidation time.Duration = -1

// HC5ValidateAfterInactivity is HttpClient 5's default (resolveValidateAfterInactivity, 5.2 to
// 5.6): a connection idle longer is checked with isStale's 1 ms read.
const HC5ValidateAfterInactivity = 2 * time.Second

// HC5EvictIdle is HttpClient 5's default: no evictor.
const HC5EvictIdle time.Duration = 0

// HC5EvictInterval is HttpClient 5.6's evictor period: maxIdle/10, at least 1 s
// (IdleConnectionEvictor.calculateSleepTime).
func HC5EvictInterval(maxIdle time.Duration) time.Duration {
	return max(maxIdle/10, time.Second)
}

// Why a pooled connection was discarded before anything was written on it.
var (
	errStale        = errors.New("pooled connection found closed by the server before reuse")
	errClosedPooled = errors.New("pooled connection closed by the client (evictor, time to live) as it was handed out")
	errUnhealthy    = errors.New("pooled connection failed OkHttp's health check")
)

// errReplaySuppressed ends an attempt where net/http tried to re-send on a second connection.
var errReplaySuppressed = errors.New("net/http tried to re-send the request on a new connection; refused before anything was written")

// errResent marks an attempt net/http re-sent on another connection (guards off).
var errResent = errors.New("the connection failed and net/http re-sent the request on another connection")

// lostError is the connection failing before the head; it cancels the round trip first.
type lostError struct{ err error }

func (e *lostError) Error() string {
	return fmt.Sprintf("connection lost before the response: %v", e.err)
}
func (e *lostError) Unwrap() error { return e.err }

type health struct {
	pooled bool // else just dialled
	idle   time.Duration
	dead   error
	closed bool // by the evictor or time to live
}

// HealthRead is the libraries' health check read: OkHttp's isHealthy, HttpClient 5's isStale.
const HealthRead = time.Millisecond

// checkReads reports whether the check reads: OkHttp for a used connection and a method other
// than GET, HttpClient 5 after validateAfterInactivity.
func (c Config) checkReads(h health, method string) bool {
	switch {
	case !h.pooled || h.closed || h.dead != nil:
		return false
	case c.Rules.Reuse.Check == rules.CheckNonGet:
		return method != http.MethodGet && method != ""
	case c.ValidateAfterInactivity > 0:
		return h.idle > c.ValidateAfterInactivity
	}
	return false
}

// condemn says why a connection must not carry a request of method, or nil.
func (c Config) condemn(h health, method string) error {
	switch {
	case !h.pooled:
		return nil
	case h.closed:
		// net/http may hand it out before its read loop sees the close.
		return errClosedPooled
	case h.dead == nil:
		return nil
	case c.Rules.Reuse.Check == rules.CheckNonGet:
		// OkHttp: doExtensiveChecks = !method.equals("GET").
		if method != http.MethodGet && method != "" {
			return errUnhealthy
		}
		return nil
	case c.ValidateAfterInactivity == 0:
		return errStale
	case c.ValidateAfterInactivity > 0 && h.idle > c.ValidateAfterInactivity:
		return errStale
	}
	return nil
}

// evictor is HttpClient 5's IdleConnectionEvictor (Config.EvictIdle).
type evictor struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startEvictor closes, every interval, connections idle maxIdle or longer.
func (c *Client) startEvictor() {
	every := c.cfg.EvictInterval
	if every <= 0 {
		every = HC5EvictInterval(c.cfg.EvictIdle)
	}
	e := &evictor{stop: make(chan struct{}), done: make(chan struct{})}
	c.evictor = e
	go func() {
		defer close(e.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-e.stop:
				return
			case now := <-t.C:
				for _, cn := range c.pool.open() {
					cn.evict(now, c.cfg.EvictIdle)
				}
			}
		}
	}()
}

func (e *evictor) shutdown() {
	if e == nil {
		return
	}
	e.once.Do(func() { close(e.stop) })
	<-e.done
}
