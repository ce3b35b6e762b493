package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// Config holds a client's limits in Apache HttpClient 5's terms. The zero value of every
// field means "not set": no limit, no pool bound, no retry.
type Config struct {
	// MaxPerRoute bounds the connections leased at once to one route (scheme, host, port).
	// A call that finds them all leased waits for one: the lease.
	MaxPerRoute int
	// MaxTotal bounds the connections leased at once over all routes.
	MaxTotal int
	// LeaseTimeout bounds the wait for a lease (HttpClient 5: connectionRequestTimeout).
	LeaseTimeout time.Duration
	// ConnectTimeout bounds the TCP handshake of a new connection.
	ConnectTimeout time.Duration
	// ReadTimeout is an idle timeout per blocking read (HttpClient 5: responseTimeout,
	// SO_TIMEOUT): it restarts whenever a byte arrives and covers the wait for the response
	// head and every read of the body. It is not a deadline.
	ReadTimeout time.Duration
	// WriteTimeout bounds every blocking write of the request (OkHttp: writeTimeout), restarting
	// with each write, as ReadTimeout does for reads.
	WriteTimeout time.Duration
	// Deadline bounds the whole call from the start of its first attempt, leases, connects,
	// reads and retries included.
	Deadline time.Duration
	// Retries is how many times the business code repeats a failed attempt. Every failure is
	// repeated except the deadline and the caller's own cancellation.
	Retries int
	// Backoff is the pause before each retry.
	Backoff time.Duration
	// IdleTimeout closes each pooled connection the moment it has sat idle this long
	// (net/http's IdleConnTimeout, a timer per connection, as OkHttp's keepAliveDuration).
	// HttpClient 5's evictor, which looks only now and then, is EvictIdle.
	IdleTimeout time.Duration
	// TimeToLive closes a connection older than this instead of returning it to the pool
	// (HttpClient 5: connection time-to-live).
	TimeToLive time.Duration
	// PropagateDeadline sends each attempt's remaining budget, the time left before the call's
	// deadline in whole milliseconds, in the vocab.DeadlineHeader request header, so that the server
	// can refuse work that would outlast its caller.
	PropagateDeadline bool
	// MaxBody bounds the response body read into memory; 0 means DefaultMaxBody.
	MaxBody int64
	// FollowUps applies OkHttp 3.13's response follow-ups (followup.go): redirects
	// (MaxFollowUps at most), a 408 repeated once (with RetryOnConnectionFailure), a 503
	// repeated once on Retry-After: 0, a 401 to the authenticator, a 407 refused.
	FollowUps bool
	// HC5Redirects follows redirects by HttpClient 5's RedirectExec (HC5MaxRedirects at most,
	// none circular). It excludes FollowUps.
	HC5Redirects bool
	// Follow changes the follow-up rules' defaults (followRedirects, followSslRedirects, an
	// authenticator).
	Follow FollowOptions
	// RoutePerAttempt makes every address the host resolves to a route of its own, as OkHttp
	// does: an attempt dials one route, with its own connect timeout. Without it every address
	// is tried in turn within one connect, each with the full timeout, as HttpClient 5 does.
	RoutePerAttempt bool
	// RetryOnConnectionFailure applies OkHttp's recover() (okhttp3.internal.http.RetryAndFollowUpInterceptor, 3.x): a connect
	// that fails on one route is retried at once on the next (with RoutePerAttempt); an I/O
	// error after the request was sent (the server closed or reset the connection) is retried
	// for any method whose body can be sent again, on the same route when the connection had
	// carried an exchange before, then on the other routes. A read timeout after the request
	// was sent is not retried, unless RecoverReadTimeouts. These retries do not count against
	// Retries. Without RoutePerAttempt the host is one route.
	RetryOnConnectionFailure bool
	// OkHttpRetryCurrentRoute applies OkHttp 3.14's route rule with RetryOnConnectionFailure:
	// a pooled connection that failed keeps its route, so the retry may dial that address
	// again before the selector's routes (3.14.9 ExchangeFinder.retryCurrentRoute). Without it,
	// OkHttp 3.13's: a pooled connection's failure takes no route (StreamAllocation.
	// hasMoreRoutes), so the retry takes the next pooled connection or the next route.
	OkHttpRetryCurrentRoute bool
	// RecoverReadTimeouts applies OkHttp 3.0 to 3.2's rule with RetryOnConnectionFailure:
	// every SocketTimeoutException is recoverable, so a read timeout after the request was
	// sent moves the call to the next idle pooled connection (pooled connections use no
	// route), then to a new connection per route left; the server executes every one of them
	// (okhttp parent-3.2.0 StreamAllocation.recover and isRecoverable; parent-3.3.0 stopped it).
	RecoverReadTimeouts bool
	// OkHttpHealthCheck applies OkHttp's RealConnection.isHealthy before a pooled connection is
	// reused: a 1 ms read that sees the end of the stream or an error discards it, for any
	// method but GET; a GET is sent on the connection whatever the server did with it. It
	// excludes ValidateAfterInactivity.
	OkHttpHealthCheck bool
	// vocab.HC5Retries selects HttpClient 5's automatic retries (HttpRequestRetryExec):
	// vocab.HC5RetriesNone, the zero value, is disableAutomaticRetries(); vocab.HC5RetriesDefault is
	// DefaultHttpRequestRetryStrategy (resend.go). They do not count against Retries, and
	// exclude RetryOnConnectionFailure and FollowUps.
	HC5Retries vocab.HC5Retries
	// Resend selects the JDK's or HttpClient 4.5's own re-sends (resend.go): ResendNone, the
	// zero value, re-sends nothing. They do not count against Retries, and exclude HC5Retries
	// and RetryOnConnectionFailure.
	Resend Resend
	// ResendAnyMethod is the JDK HttpClient's -Djdk.httpclient.enableAllMethodRetry (with
	// ResendJDK): every method is re-sent, not only GET and HEAD.
	ResendAnyMethod bool
	// NoResendPost is HttpURLConnection's -Dsun.net.http.retryPost=false (with
	// ResendURLConnection): a POST is not re-sent.
	NoResendPost bool
	// HeadTimeout bounds each attempt from its start to the response head, connect included,
	// and no read of the body: the JDK HttpClient's HttpRequest.timeout(), whose
	// ResponseTimerEvent is registered for each attempt before the exchange takes its
	// connection and cancelled when the head arrives (MultiExchange.responseAsyncImpl, JDK 17
	// and 25). It fails the attempt as a read timeout.
	HeadTimeout time.Duration
	// ValidateAfterInactivity is HttpClient 5's stale check (setValidateAfterInactivity): a
	// pooled connection idle longer than this is read for 1 ms before reuse, and one that sees
	// a FIN or RST is discarded and replaced; one idle for less is used as it is, dead or not.
	// The zero value keeps net/http's own watch, a background read on every idle connection
	// that drops it the moment a FIN or RST arrives (what HttpClient 5's default,
	// HC5ValidateAfterInactivity, does for any connection idle over 2 s). NoValidation turns
	// every check off. No check sees a connection a middlebox dropped silently.
	ValidateAfterInactivity time.Duration
	// EvictIdle runs HttpClient 5's IdleConnectionEvictor (evictIdleConnections): every
	// EvictInterval it closes the pooled connections idle EvictIdle or longer, so one is
	// closed between EvictIdle and EvictIdle + EvictInterval after it went idle. 0: no
	// evictor (HttpClient 5's default).
	EvictIdle time.Duration
	// EvictInterval is how often the evictor looks; 0 means HC5EvictInterval(EvictIdle).
	EvictInterval time.Duration
	// Resolver resolves host names; nil uses net.DefaultResolver.
	Resolver *net.Resolver
	// TLS configures https connections; nil uses the system's roots.
	TLS *tls.Config
	// TLSHandshakeTimeout is the socket timeout of every read of the TLS handshake (0: none,
	// the handshake waits as long as the server holds the connection). It is what the Java
	// clients set on the socket before the handshake: OkHttp 3.13's read timeout
	// (RealConnection.connectSocket: rawSocket.setSoTimeout(readTimeout)); HttpClient 5.2's
	// TlsConfig handshake timeout, else its SocketConfig socket timeout
	// (SSLConnectionSocketFactory.executeHandshake, DefaultHttpClientConnectionOperator.connect),
	// never its connect or response timeout. A handshake it ends fails with
	// ErrHandshakeTimeout, a read timeout in the connect phase (OkHttp's
	// SocketTimeoutException), or with HandshakeTimeoutAsConnect a connect timeout.
	TLSHandshakeTimeout time.Duration
	// HandshakeTimeoutAsConnect reports a handshake that TLSHandshakeTimeout ended as a
	// connect timeout, as HttpClient 5 does: DefaultHttpClientConnectionOperator.connect
	// rethrows it through ConnectExceptionSupport.enhance, which makes a SocketTimeoutException a
	// ConnectTimeoutException (httpclient5 5.2.1).
	HandshakeTimeoutAsConnect bool
	// HandshakeNext says which failed TLS handshakes move on to the host's next address in
	// the same connect (without RoutePerAttempt): HandshakeNextAny, the zero value, as
	// HttpClient 5; HandshakeNextOnTimeout, as HttpClient 4.5; HandshakeNextNone, as the JDK's
	// clients, which connect to one address.
	HandshakeNext HandshakeNext
	// JDKConnect applies the JDK HttpClient's connect rules (java.net.http, JDK 17):
	// ConnectTimeout is a deadline on the TCP connect and the TLS handshake together, from the
	// connect's start (PlainHttpConnection's ConnectTimerEvent, cancelled in finishConnect
	// after the handshake); a HeadTimeout that fires before the connection is established is
	// a connect timeout (ResponseTimerEvent.handle: HttpConnectTimeoutException), and one that
	// fires during the name lookup takes effect when the lookup returns (Exchange.cancel
	// records it); a lookup that fails is tried once more (MultiExchange's retry of a
	// ConnectException, which an unresolved address becomes), with Resend's one re-send.
	JDKConnect bool
	// FirstAddressOnly connects to the host's first address only, as the JDK's clients do:
	// java.net.http's PlainHttpConnection and HttpURLConnection's NetworkClient.doConnect
	// connect to an InetSocketAddress, which resolves one address (InetAddress.getByName).
	FirstAddressOnly bool
}

// HandshakeNext is Config.HandshakeNext.
type HandshakeNext int

// The rules for the next address after a failed handshake.
const (
	// HandshakeNextAny tries the next address after any failed handshake
	// (DefaultHttpClientConnectionOperator.connect, httpclient5 5.2.1: catch IOException).
	HandshakeNextAny HandshakeNext = iota
	// HandshakeNextOnTimeout tries it after a handshake that TLSHandshakeTimeout ended only
	// (httpclient 4.5.14: catch SocketTimeoutException, not SSLException).
	HandshakeNextOnTimeout
	// HandshakeNextNone never tries it.
	HandshakeNextNone
)

// DefaultMaxBody is the body limit when Config.MaxBody is not set.
const DefaultMaxBody = 64 << 20

// HC5Defaults returns Apache HttpClient 5.6's default limits: 5 connections per route and 25
// in all, lease and connect timeouts of 3 minutes, no read timeout, no deadline, no business
// retries. HttpClient 5's default rules for pooled connections that die are not set here, so
// that the limits alone change: its stale check (ValidateAfterInactivity:
// HC5ValidateAfterInactivity), its retry strategy (HC5Retries: vocab.HC5RetriesDefault; the
// configured inventory client disables it) and no evictor (HC5EvictIdle).
func HC5Defaults() Config {
	return Config{
		MaxPerRoute:    5,
		MaxTotal:       25,
		LeaseTimeout:   3 * time.Minute,
		ConnectTimeout: 3 * time.Minute,
	}
}

// Validate reports the first field that makes no sense.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"lease timeout", c.LeaseTimeout},
		{"connect timeout", c.ConnectTimeout},
		{"read timeout", c.ReadTimeout},
		{"head timeout", c.HeadTimeout},
		{"write timeout", c.WriteTimeout},
		{"TLS handshake timeout", c.TLSHandshakeTimeout},
		{"deadline", c.Deadline},
		{"backoff", c.Backoff},
		{"idle timeout", c.IdleTimeout},
		{"time to live", c.TimeToLive},
		{"evict idle", c.EvictIdle},
		{"evict interval", c.EvictInterval},
	} {
		if f.v < 0 {
			return fmt.Errorf("client: %s must not be negative, got %v", f.name, f.v)
		}
	}
	switch {
	case c.MaxPerRoute < 0:
		return fmt.Errorf("client: max per route must not be negative, got %d", c.MaxPerRoute)
	case c.MaxTotal < 0:
		return fmt.Errorf("client: max total must not be negative, got %d", c.MaxTotal)
	case c.Retries < 0:
		return fmt.Errorf("client: retries must not be negative, got %d", c.Retries)
	case c.MaxBody < 0:
		return fmt.Errorf("client: max body must not be negative, got %d", c.MaxBody)
	case c.ValidateAfterInactivity < 0 && c.ValidateAfterInactivity != NoValidation:
		return fmt.Errorf("client: validate after inactivity must not be negative but NoValidation, got %v", c.ValidateAfterInactivity)
	case c.HC5Retries != vocab.HC5RetriesNone && c.HC5Retries != vocab.HC5RetriesDefault:
		return fmt.Errorf("client: unknown HttpClient 5 retries %q", c.HC5Retries)
	case c.HC5Retries != vocab.HC5RetriesNone && (c.RetryOnConnectionFailure || c.FollowUps):
		return errors.New("client: HttpClient 5's retries exclude OkHttp's recovery and follow-ups")
	case c.HC5Redirects && c.FollowUps:
		return errors.New("client: HttpClient 5's redirects exclude OkHttp's follow-ups")
	case c.Follow != (FollowOptions{}) && !c.FollowUps && !c.HC5Redirects:
		return errors.New("client: follow options need OkHttp's follow-ups or HttpClient 5's redirects")
	case c.HC5Redirects && (c.Follow.NoSslRedirects || c.Follow.Authenticate):
		return errors.New("client: followSslRedirects and an authenticator are OkHttp's, not HttpClient 5's")
	case c.Resend != ResendNone && c.Resend != ResendJDK && c.Resend != ResendURLConnection && c.Resend != ResendHC4:
		return fmt.Errorf("client: unknown re-send rule %q", c.Resend)
	case c.Resend != ResendNone && (c.HC5Retries != vocab.HC5RetriesNone || c.RetryOnConnectionFailure):
		return errors.New("client: the JDK's and HttpClient 4.5's re-sends exclude HttpClient 5's retries and OkHttp's recovery")
	case c.OkHttpHealthCheck && c.ValidateAfterInactivity != 0:
		return errors.New("client: OkHttp's health check excludes HttpClient 5's validate after inactivity")
	}
	return nil
}

// blind reports whether the client hides from net/http what an idle connection's background
// read sees, so that only the configured check (or none) finds a connection the server closed.
func (c Config) blind() bool { return c.ValidateAfterInactivity != 0 || c.OkHttpHealthCheck }
