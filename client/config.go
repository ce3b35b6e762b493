package client

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"
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
	// IdleTimeout closes pooled connections that sat idle this long (HttpClient 5:
	// evictIdleConnections).
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
	// FollowUps applies OkHttp's response follow-ups: redirects (MaxFollowUps at most), a 408
	// repeated once (with RetryOnConnectionFailure), a 503 repeated once on Retry-After: 0.
	FollowUps bool
	// RoutePerAttempt makes every address the host resolves to a route of its own, as OkHttp
	// does: an attempt dials one route, with its own connect timeout. Without it every address
	// is tried in turn within one connect, each with the full timeout, as HttpClient 5 does.
	RoutePerAttempt bool
	// RetryOnConnectionFailure applies OkHttp's connection recovery: with RoutePerAttempt, a
	// connect that fails on one route is retried at once on the next; it does not count
	// against Retries.
	RetryOnConnectionFailure bool
	// Resolver resolves host names; nil uses net.DefaultResolver.
	Resolver *net.Resolver
	// TLS configures https connections; nil uses the system's roots. The TLS handshake is
	// bounded by ConnectTimeout as well.
	TLS *tls.Config
}

// DefaultMaxBody is the body limit when Config.MaxBody is not set.
const DefaultMaxBody = 64 << 20

// HC5Defaults returns Apache HttpClient 5.6's defaults: 5 connections per route and 25 in
// all, lease and connect timeouts of 3 minutes, no read timeout, no deadline, no retries.
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
		{"write timeout", c.WriteTimeout},
		{"deadline", c.Deadline},
		{"backoff", c.Backoff},
		{"idle timeout", c.IdleTimeout},
		{"time to live", c.TimeToLive},
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
	}
	return nil
}
