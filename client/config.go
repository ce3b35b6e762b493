package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/rules"
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
	// Follow changes the follow-up rule's defaults (followRedirects, followSslRedirects, an
	// authenticator); the rule is Rules.FollowUps.
	Follow FollowOptions
	// Rules are the library's rules the client executes (internal/rules: rules.HC5,
	// rules.OkHttp313, ...): how a connect walks the host's addresses and bounds its TLS
	// handshake and lookup, what the head timeout bounds, what is checked before a pooled
	// connection is reused, what is sent again by the library itself after a failed attempt
	// (not counted against Retries), what it sends after a response (FollowUps: OkHttp's
	// redirects, 408, 503 and 401; HttpClient 5's redirects). The zero value is no library's:
	// every address in turn, nothing re-sent, no follow-up.
	Rules rules.Rules
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
	// SocketTimeoutException), or with rules.Connect.HandshakeTimeoutAsConnect a connect
	// timeout.
	TLSHandshakeTimeout time.Duration
}

// DefaultMaxBody is the body limit when Config.MaxBody is not set.
const DefaultMaxBody = 64 << 20

// HC5Defaults returns Apache HttpClient 5.6's default limits: 5 connections per route and 25
// in all, lease and connect timeouts of 3 minutes, no read timeout, no deadline, no business
// retries. HttpClient 5's default rules for pooled connections that die are not set here, so
// that the limits alone change: its stale check (ValidateAfterInactivity:
// HC5ValidateAfterInactivity), its retry strategy (rules.HC5 with AutomaticRetries; the
// configured inventory client disables it) and no evictor (HC5EvictIdle).
func HC5Defaults() Config {
	d := rules.HC5Limits()
	return Config{MaxPerRoute: d.PerRoute, MaxTotal: d.Total, LeaseTimeout: d.Lease, ConnectTimeout: d.Connect}
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
	case c.Follow != (FollowOptions{}) && c.Rules.FollowUps == (rules.FollowUps{}):
		return errors.New("client: follow options need a follow-up rule (Rules.FollowUps)")
	case len(c.unreadFollow()) > 0:
		return fmt.Errorf("client: %s follows up without %s", c.Rules.Library, strings.Join(c.unreadFollow(), " or "))
	case c.Rules.Reuse.Check == rules.CheckNonGet && c.ValidateAfterInactivity != 0:
		return errors.New("client: OkHttp's health check excludes HttpClient 5's validate after inactivity")
	}
	return nil
}

// blind reports whether the client hides from net/http what an idle connection's background
// read sees, so that only the configured check (or none) finds a connection the server closed.
func (c Config) blind() bool {
	return c.ValidateAfterInactivity != 0 || c.Rules.Reuse.Check == rules.CheckNonGet
}

// unreadFollow names the follow options set that the rules' follow-up rule does not read.
func (c Config) unreadFollow() []string {
	reads := c.Rules.FollowUps.Reads()
	var out []string
	for _, o := range []struct {
		set, read bool
		name      string
	}{
		{c.Follow.NoRedirects, reads.NoRedirects, "followRedirects(false)"},
		{c.Follow.NoSslRedirects, reads.NoSslRedirects, "followSslRedirects(false)"},
		{c.Follow.Authenticate, reads.Authenticate, "an authenticator"},
	} {
		if o.set && !o.read {
			out = append(out, o.name)
		}
	}
	return out
}
