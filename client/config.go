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
	// MaxPerRoute bounds the connections leased at once to one route; a call waits for a lease.
	MaxPerRoute int
	// MaxTotal bounds the connections leased at once over all routes.
	MaxTotal int
	// LeaseTimeout bounds the wait for a lease (HttpClient 5: connectionRequestTimeout).
	LeaseTimeout time.Duration
	// ConnectTimeout bounds the TCP handshake of a new connection.
	ConnectTimeout time.Duration
	// ReadTimeout is an idle timeout per read, head and body (responseTimeout): not a deadline.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of the request (OkHttp's writeTimeout).
	WriteTimeout time.Duration
	// Deadline bounds the whole call, retries included.
	Deadline time.Duration
	// Retries is how many times the business code repeats a failed attempt (not the deadline).
	Retries int
	// Backoff is the pause before each retry.
	Backoff time.Duration
	// IdleTimeout closes a pooled connection the moment it has sat idle this long.
	IdleTimeout time.Duration
	// TimeToLive closes a connection older than this instead of pooling it.
	TimeToLive time.Duration
	// PropagateDeadline sends each attempt's remaining budget in vocab.DeadlineHeader.
	PropagateDeadline bool
	// MaxBody bounds the response body read into memory; 0 means DefaultMaxBody.
	MaxBody int64
	// Follow changes the follow-up rule's (Rules.FollowUps) defaults.
	Follow FollowOptions
	// Rules are the library's rules the client executes (internal/rules). The zero value is no
	// library's: every address in turn, nothing re-sent, no follow-up.
	Rules rules.Rules
	// HeadTimeout bounds each attempt from its start to the response head, as a read timeout:
	// the JDK HttpClient's HttpRequest.timeout() (MultiExchange.responseAsyncImpl).
	HeadTimeout time.Duration
	// ValidateAfterInactivity is HttpClient 5's stale check: a pooled connection idle longer is
	// read for 1 ms before reuse. Zero keeps net/http's background watch; NoValidation turns
	// every check off.
	ValidateAfterInactivity time.Duration
	// EvictIdle runs HttpClient 5's IdleConnectionEvictor: every EvictInterval it closes the
	// connections idle EvictIdle or longer (0: none).
	EvictIdle time.Duration
	// EvictInterval is how often the evictor looks; 0 means HC5EvictInterval(EvictIdle).
	EvictInterval time.Duration
	// Resolver resolves host names; nil uses net.DefaultResolver.
	Resolver *net.Resolver
	// TLS configures https connections; nil uses the system's roots.
	TLS *tls.Config
	// TLSHandshakeTimeout is the socket timeout of each read of the TLS handshake (0: none), as
	// the Java clients set it before the handshake; it fails with ErrHandshakeTimeout, or a
	// connect timeout with rules.Connect.HandshakeTimeoutAsConnect.
	TLSHandshakeTimeout time.Duration
}

// DefaultMaxBody is the body limit when Config.MaxBody is not set.
const DefaultMaxBody = 64 << 20

// HC5Defaults returns Apache HttpClient 5's default limits (rules.HC5Limits), without its stale
// check and retry strategy, which Rules and ValidateAfterInactivity set.
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

// blind reports whether the client hides idle connections from net/http's background read, so
// that only the configured check finds one the server closed.
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
