package client

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// Reusing a pooled connection that may have died (docs/experiments.md, exp-g): which check finds out,
// and the evictor. The check runs when the Transport hands a pooled connection to an attempt
// (attemptState.onGotConn); a connection it condemns is discarded before a byte is written on
// it, and the attempt's request goes again on the next pooled connection or a new one, as
// HttpClient 5's lease and OkHttp's findHealthyConnection do. That costs no attempt.

// NoValidation, as Config.ValidateAfterInactivity, turns every stale check off, as HttpClient
// 5's setValidateAfterInactivity does with a negative value: a pooled connection that the
// server closed is used, and the request written into it is never read.
const NoValidation time.Duration = -1

// HC5ValidateAfterInactivity is HttpClient 5's default for Config.ValidateAfterInactivity:
// ConnectionConfig.DEFAULT leaves validateAfterInactivity null and
// PoolingHttpClientConnectionManager.resolveValidateAfterInactivity falls back to
// TimeValue.ofSeconds(2) (httpcomponents-client 5.2 to 5.6.x; 5.1 set 2 s in the manager's
// constructor; 5.0 left it null and validated nothing). A connection is checked when idle
// longer than that (Deadline.isExpired is strict), with BHttpConnectionBase.isStale: a read of
// 1 ms that sees the end of the stream or a SocketException means stale; a timeout means alive.
const HC5ValidateAfterInactivity = 2 * time.Second

// HC5EvictIdle is HttpClient 5's default for Config.EvictIdle: no evictor. It runs only after
// HttpClientBuilder.evictIdleConnections(maxIdleTime).
const HC5EvictIdle time.Duration = 0

// HC5EvictInterval is how often HttpClient 5.6's evictor looks for idle connections:
// IdleConnectionEvictor.calculateSleepTime, maxIdle / 10 but at least 1 s (5.0 to 5.5 slept
// maxIdle itself). It closes every connection idle maxIdle or longer (StrictConnPool.closeIdle:
// updated <= now - maxIdle), so a connection goes at the latest maxIdle + HC5EvictInterval(
// maxIdle) after it went idle.
func HC5EvictInterval(maxIdle time.Duration) time.Duration {
	return max(maxIdle/10, time.Second)
}

// Why a pooled connection was discarded before anything was written on it.
var (
	errStale        = errors.New("pooled connection found closed by the server before reuse")
	errClosedPooled = errors.New("pooled connection closed by the client (evictor, time to live) as it was handed out")
	errUnhealthy    = errors.New("pooled connection failed OkHttp's health check")
)

// errReplaySuppressed ends an attempt in which net/http tried to send the request again on a
// second connection: labrun refused it before a byte was written.
var errReplaySuppressed = errors.New("net/http tried to re-send the request on a new connection; refused before anything was written")

// errResent marks an attempt that net/http re-sent on another connection (GoClient, and
// Client's guards off in tests).
var errResent = errors.New("the connection failed and net/http re-sent the request on another connection")

// lostError is an attempt's connection failing before the response head: the end of the
// stream, a reset, a failed write. It cancels the attempt's round trip before net/http sees the
// failure, so that net/http never replays the request (attemptState.connLost).
type lostError struct{ err error }

func (e *lostError) Error() string {
	return fmt.Sprintf("connection lost before the response: %v", e.err)
}
func (e *lostError) Unwrap() error { return e.err }

// health is what is known of a connection when an attempt takes it.
type health struct {
	pooled bool          // it sat in the pool before (else it was just dialled)
	idle   time.Duration // how long it sat there
	dead   error         // what a read while it sat there returned: the end of the stream, an error
	closed bool          // labrun closed it while it sat there: the evictor, its time to live
}

// HealthRead is how long the libraries' check of a pooled connection reads when nothing
// arrives: OkHttp's RealConnection.isHealthy(true) (socket.setSoTimeout(1), then
// source.exhausted(): a SocketTimeoutException means healthy) and HttpClient 5's
// BHttpConnectionBase.isStale (fillInputBuffer(Timeout.ofMilliseconds(1))). A connection that
// works therefore costs its call 1 ms before the request is written; one whose end of stream
// or reset is already there fails the check at once.
const HealthRead = time.Millisecond

// checkReads reports whether the library's check reads on a connection in health h before a
// request of the given method, and so costs up to HealthRead. OkHttp skips the check for a
// connection that has carried no exchange yet (successCount == 0: labrun's connections reach
// the pool only after a response) and reads only for a method other than GET
// (doExtensiveHealthChecks); HttpClient 5 reads only on a connection idle longer than
// validateAfterInactivity. A connection known to be dead or closed is refused without a wait.
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

// condemn says why a connection in health h must not carry a request of the given method, or
// nil when it is used as it is. A fresh connection is always used.
func (c Config) condemn(h health, method string) error {
	switch {
	case !h.pooled:
		return nil
	case h.closed:
		// HttpClient 5's pool never leases what it closed (evictor, time to live); net/http
		// can hand it out in the instant before its read loop sees the close.
		return errClosedPooled
	case h.dead == nil:
		return nil
	case c.Rules.Reuse.Check == rules.CheckNonGet:
		// RealConnection.isHealthy(doExtensiveChecks), doExtensiveChecks = !method.equals("GET").
		if method != http.MethodGet && method != "" {
			return errUnhealthy
		}
		return nil
	case c.ValidateAfterInactivity == 0:
		// net/http's watch: it had not closed the connection yet when it handed it out.
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

// startEvictor starts the evictor: every interval, it closes the connections that sat idle
// maxIdle or longer.
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

// shutdown stops the evictor and waits for it.
func (e *evictor) shutdown() {
	if e == nil {
		return
	}
	e.once.Do(func() { close(e.stop) })
	<-e.done
}
