package lab

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// The names of the client profiles the experiments refer to. --client takes every name in
// Profiles; only a profile that an experiment's code names needs a constant.
const (
	// ProfileOkHttp314 is the okhttp profile with OkHttp 3.14's route rule: a pooled
	// connection that failed keeps its route (ExchangeFinder.retryCurrentRoute).
	ProfileOkHttp314 = "okhttp@3.14"
	// ProfileJDK is labrun's client with the JDK HttpClient's (java.net.http, JDK 17) rules.
	ProfileJDK = "jdk"
	// ProfileURLConnection is labrun's client with HttpURLConnection's (JDK 17) rules.
	ProfileURLConnection = "urlconnection"
	// ProfileHC4 is labrun's client with Apache HttpClient 4.5's defaults and rules.
	ProfileHC4 = "hc4"
	// ProfileOkHttp32 is the okhttp profile with OkHttp 3.0 to 3.2's recovery: a read timeout
	// after the request was sent is recovered on the next pooled connection, then on a new
	// connection per route left (fixed in 3.3.0).
	ProfileOkHttp32 = "okhttp@3.2"
)

// Profile is a client profile (--client): a library's defaults and rules, and how to build
// labrun's client that follows them for what an experiment asks, with the model's limits for
// the same rules. A new profile is one new entry in Profiles.
type Profile struct {
	// Name is the value --client takes.
	Name string
	// Description says in a line what the client is.
	Description string
	// Rules returns the library's rules with the settings s asks for (automatic retries,
	// retryOnConnectionFailure); the client the profile builds and the model's limits for it
	// both carry them.
	Rules func(s Spec) rules.Rules
	// PropagatesDeadline reports whether the client can send its remaining budget to the
	// server (spec.PropagateDeadline); a client that cannot ignores it.
	PropagatesDeadline bool
	// Build makes the client for s that executes r, with the model's limits for it but the
	// rules.
	Make func(s Spec, r rules.Rules) (Built, error)
}

// Profiles returns the client profiles, the default (ProfileHC5) first.
func Profiles() []Profile {
	return []Profile{
		{Name: ProfileHC5, Description: "labrun's client with Apache HttpClient 5's semantics (HTTP/1.1: HttpClient 5's classic API has no HTTP/2)",
			Rules: hc5Rules, PropagatesDeadline: true, Make: buildHC5},
		{Name: ProfileOkHttp, Description: "labrun's client with OkHttp 3.13's defaults and rules: connect and read 10 s, " +
			"no lease, response follow-ups, each resolved address a route retried on failure", Rules: okHTTPRules(rules.OkHttp313), Make: buildOkHttp},
		{Name: ProfileGo, Description: "Go's own net/http client with the nearest settings and none of labrun's layers",
			Rules: func(Spec) rules.Rules { return rules.GoNet() }, Make: buildGo},
		{Name: ProfileOkHttp32, Description: "the okhttp profile with OkHttp 3.0-3.2's recovery: a read timeout after " +
			"the request was sent moves the call to the next pooled connection, then to a new one per route (fixed in 3.3.0)",
			Rules: okHTTPRules(rules.OkHttp32), Make: buildOkHttp},
		{Name: ProfileOkHttp314, Description: "the okhttp profile with OkHttp 3.14's route rule: a pooled connection that " +
			"failed keeps its route, so the retry may dial that address again before the others", Rules: okHTTPRules(rules.OkHttp314), Make: buildOkHttp},
		{Name: ProfileJDK, Description: "labrun's client with the JDK HttpClient's rules (java.net.http, JDK 17): no pool limit, " +
			"the read timeout is HttpRequest.timeout() (from the send, connect included, to the response head), " +
			"a GET or HEAD whose connection ends before any response byte sent once more", Rules: func(Spec) rules.Rules { return rules.JDK(rules.JDKSettings{}) }, Make: buildJDK},
		{Name: ProfileURLConnection, Description: "labrun's client with HttpURLConnection's rules (JDK 17): no pool limit, " +
			"a read timeout per read, no check of a pooled connection, a request whose response head fails sent once more " +
			"(a POST too, unless sun.net.http.retryPost=false)", Rules: func(Spec) rules.Rules { return rules.URLConnection(rules.URLConnectionSettings{}) }, Make: buildURLConnection},
		{Name: ProfileHC4, Description: "labrun's client with Apache HttpClient 4.5's defaults and rules: 2 connections per route, " +
			"20 in all, no lease or connect timeout, validateAfterInactivity 2 s, DefaultHttpRequestRetryHandler's 3 re-sends",
			Rules: func(Spec) rules.Rules { return rules.HC4() }, Make: buildHC4},
	}
}

// Library names the library and release whose rules the profile follows.
func (p Profile) Library() string { return p.Rules(Spec{}).Library }

// ProfileNames lists the names --client takes.
func ProfileNames() []string {
	var names []string
	for _, p := range Profiles() {
		names = append(names, p.Name)
	}
	return names
}

// LookupProfile returns the profile called name, or an error that names the flag and lists
// the profiles.
func LookupProfile(name string) (Profile, error) {
	for _, p := range Profiles() {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("--client: unknown client %q (want %s)", name, strings.Join(ProfileNames(), ", "))
}

// Build makes the client of the profile called name for s.
func Build(name string, s Spec) (Built, error) {
	p, err := LookupProfile(name)
	if err != nil {
		return Built{}, err
	}
	r := p.Rules(s)
	b, err := p.Make(s, r)
	b.Limits.Rules = r
	return b, err
}

// hc5Rules are HttpClient 5's rules with the automatic retries s asks for.
func hc5Rules(s Spec) rules.Rules {
	return rules.HC5(rules.HC5Settings{AutomaticRetries: s.HC5Retries == vocab.HC5RetriesDefault})
}

// okHTTPRules are an OkHttp release's rules with the retryOnConnectionFailure s asks for.
func okHTTPRules(release func(rules.OkHttpSettings) rules.Rules) func(Spec) rules.Rules {
	return func(s Spec) rules.Rules {
		return release(rules.OkHttpSettings{NoRetryOnConnectionFailure: s.NoRouteRetry})
	}
}

// Spec is what an experiment sets on its client, in terms every profile understands. A zero
// field takes the profile's own default (HttpClient 5: lease and connect 3 min, 5 connections
// per route; OkHttp: connect and read 10 s; net/http: dial 30 s, no other limit).
type Spec struct {
	Pool, MaxTotal                            int
	LeaseTimeout, ConnectTimeout, ReadTimeout time.Duration
	// NoLeaseTimeout says "no lease timeout" rather than the profile's default.
	NoLeaseTimeout          bool
	Deadline, Backoff       time.Duration
	Retries                 int
	PropagateDeadline       bool
	TimeToLive, IdleTimeout time.Duration
	// MaxIdlePerHost is net/http's MaxIdleConnsPerHost (0: as many as Pool, or net/http's 2
	// when there is no pool limit either).
	MaxIdlePerHost int
	// ClientTimeout is net/http's http.Client.Timeout, a deadline on each request, body
	// included; the model takes it for Deadline, which it is without retries. Only the go
	// profile has it: the others bound a whole call with Deadline.
	ClientTimeout time.Duration
	// NoRouteRetry turns OkHttp's retryOnConnectionFailure off.
	NoRouteRetry bool
	// Resolver resolves host names (nil: the system's).
	Resolver *net.Resolver
	// HC5Retries, ValidateAfterInactivity, EvictIdle and EvictInterval are HttpClient 5's
	// rules for pooled connections that died (client.Config's fields of the same names);
	// only the hc5 profile has them. The zero values keep labrun's: nothing re-sent,
	// net/http's background watch, no evictor.
	HC5Retries              vocab.HC5Retries
	ValidateAfterInactivity time.Duration
	EvictIdle               time.Duration
	EvictInterval           time.Duration
	// Follow and TLS are exp-d's follow-up settings (client.FollowOptions; net/http has only
	// NoRedirects, as ErrUseLastResponse) and the roots for an https server.
	Follow client.FollowOptions
	TLS    *tls.Config
	// TLSHandshakeTimeout is the library's own limit for the TLS handshake (exp-k): HttpClient
	// 5's TlsConfig handshake timeout or socket timeout, HttpClient 4.5's SocketConfig
	// soTimeout, net/http's TLSHandshakeTimeout (0: none). OkHttp and HttpURLConnection have
	// none (their read timeout bounds the handshake), nor the JDK HttpClient (its connect
	// timeout does).
	TLSHandshakeTimeout time.Duration
}

// Caller is a client under test.
type Caller interface {
	Do(ctx context.Context, req *http.Request) (*client.Result, error)
	Close()
}

// Built is a profile's client for a spec, with the model's limits for the same rules.
type Built struct {
	C      Caller
	Limits model.Limits
	// Pool bounds the connections leased at once (0: no bound).
	Pool int
	// Stats gives the pool statistics, when the client has them (net/http has none).
	Stats func() client.Stats
	// MaxTotal is the total connection limit the client was configured with (0: none).
	MaxTotal int
}

// ModelPool is the pool size the model simulates for b with calls concurrent calls.
func (b Built) ModelPool(calls int) int {
	if b.Pool == 0 {
		return max(calls, 1)
	}
	return b.Pool
}

// buildHC5 is the hc5 profile: labrun's client with HttpClient 5's defaults.
func buildHC5(s Spec, r rules.Rules) (Built, error) {
	d := client.HC5Defaults()
	if s.NoLeaseTimeout {
		d.LeaseTimeout = 0
	}
	cfg := client.Config{
		MaxPerRoute:    or(s.Pool, d.MaxPerRoute),
		MaxTotal:       or(s.MaxTotal, max(d.MaxTotal, s.Pool)),
		LeaseTimeout:   or(s.LeaseTimeout, d.LeaseTimeout),
		ConnectTimeout: or(s.ConnectTimeout, d.ConnectTimeout),
		ReadTimeout:    s.ReadTimeout, Deadline: s.Deadline, Retries: s.Retries, Backoff: s.Backoff,
		TimeToLive: s.TimeToLive, IdleTimeout: s.IdleTimeout, PropagateDeadline: s.PropagateDeadline,
		Resolver: s.Resolver,

		Rules: r, ValidateAfterInactivity: s.ValidateAfterInactivity,
		EvictIdle: s.EvictIdle, EvictInterval: s.EvictInterval,
		Follow: s.Follow, TLS: s.TLS, TLSHandshakeTimeout: s.TLSHandshakeTimeout,
	}
	c, err := client.New(cfg)
	if err != nil {
		return Built{}, err
	}
	return Built{C: c, Limits: modelLimits(cfg), Pool: cfg.MaxPerRoute, Stats: c.Stats, MaxTotal: cfg.MaxTotal}, nil
}

// buildOkHttp is the okhttp profiles' client with OkHttp's defaults and r, the rules of its
// release (3.13, 3.2 or 3.14).
func buildOkHttp(s Spec, r rules.Rules) (Built, error) {
	cfg := client.Config{
		ConnectTimeout: or(s.ConnectTimeout, 10*time.Second),
		ReadTimeout:    or(s.ReadTimeout, 10*time.Second),
		WriteTimeout:   10 * time.Second,
		Deadline:       s.Deadline, Retries: s.Retries, Backoff: s.Backoff,
		IdleTimeout: or(s.IdleTimeout, 5*time.Minute),
		Rules:       r,
		Resolver:    s.Resolver,
		Follow:      s.Follow, TLS: s.TLS,
	}
	// RealConnection.connectSocket sets the read timeout on the socket before the handshake.
	cfg.TLSHandshakeTimeout = cfg.ReadTimeout
	c, err := client.New(cfg)
	if err != nil {
		return Built{}, err
	}
	l := modelLimits(cfg)
	l.TLSHandshakeTimeout = 0 // OkHttp has no such setting: the model's rule is its read timeout
	return Built{C: c, Limits: l, Stats: c.Stats}, nil
}

// The JDK's and HttpClient 4.5's defaults that the profiles build on.
const (
	// jdkKeepAlive is the JDK 17 HttpClient's idle timeout: ConnectionPool.KEEP_ALIVE,
	// jdk.httpclient.keepalive.timeout, 1200 s (JDK 25: 30 s).
	jdkKeepAlive = 1200 * time.Second
	// urlConnectionKeepAlive is HttpURLConnection's idle timeout when the server sends no
	// Keep-Alive header: KeepAliveCache, keepAliveTimeout 5 s.
	urlConnectionKeepAlive = 5 * time.Second
	// HC4PerRoute and hc4Total are PoolingHttpClientConnectionManager's defaults (httpclient 4.5).
	HC4PerRoute, hc4Total = 2, 20
)

// buildJDK is the jdk profile: no pool limit and no lease; spec.ReadTimeout is
// HttpRequest.timeout(), which runs from the send, connect included, to the response head;
// connectTimeout is not set by default; the pool watches idle connections for their end (as
// net/http's read loop does); a GET or HEAD whose connection ends before any response byte is
// sent once more.
func buildJDK(s Spec, r rules.Rules) (Built, error) {
	cfg := client.Config{
		ConnectTimeout: s.ConnectTimeout, HeadTimeout: s.ReadTimeout,
		Deadline: s.Deadline, Retries: s.Retries, Backoff: s.Backoff,
		IdleTimeout: or(s.IdleTimeout, jdkKeepAlive), Rules: r, Resolver: s.Resolver, TLS: s.TLS,
	}
	return buildLabrun(cfg, 0)
}

// buildURLConnection is the urlconnection profile: no pool limit, connect and read timeouts
// not set by default, the read timeout per read, no check of a pooled connection before it is
// used, and the one re-send of sun.net.www.http.HttpClient.parseHTTP.
func buildURLConnection(s Spec, r rules.Rules) (Built, error) {
	cfg := client.Config{
		ConnectTimeout: s.ConnectTimeout, ReadTimeout: s.ReadTimeout,
		Deadline: s.Deadline, Retries: s.Retries, Backoff: s.Backoff,
		IdleTimeout:             or(s.IdleTimeout, urlConnectionKeepAlive),
		ValidateAfterInactivity: client.NoValidation, Rules: r, Resolver: s.Resolver,
		// NetworkClient.doConnect sets the read timeout on the socket before the handshake.
		TLS: s.TLS, TLSHandshakeTimeout: s.ReadTimeout,
	}
	b, err := buildLabrun(cfg, 0)
	b.Limits.TLSHandshakeTimeout = 0 // no such setting: the model's rule is the read timeout
	return b, err
}

// buildHC4 is the hc4 profile: HttpClient 5's pool with 4.5's sizes, no lease or connect
// timeout by default (-1: infinite and the system's), validateAfterInactivity 2 s and
// DefaultHttpRequestRetryHandler, both on in HttpClients.createDefault().
func buildHC4(s Spec, r rules.Rules) (Built, error) {
	cfg := client.Config{
		MaxPerRoute: or(s.Pool, HC4PerRoute), MaxTotal: or(s.MaxTotal, max(hc4Total, s.Pool)),
		LeaseTimeout: s.LeaseTimeout, ConnectTimeout: s.ConnectTimeout, ReadTimeout: s.ReadTimeout,
		Deadline: s.Deadline, Retries: s.Retries, Backoff: s.Backoff,
		TimeToLive: s.TimeToLive, IdleTimeout: s.IdleTimeout,
		ValidateAfterInactivity: or(s.ValidateAfterInactivity, model.HC4ValidateAfterInactivity),
		Rules:                   r, Resolver: s.Resolver,
		// SSLConnectionSocketFactory.connectSocket makes the connect timeout the handshake's
		// socket timeout when SocketConfig sets none.
		TLS: s.TLS, TLSHandshakeTimeout: or(s.TLSHandshakeTimeout, s.ConnectTimeout),
	}
	b, err := buildLabrun(cfg, cfg.MaxPerRoute)
	b.Limits.TLSHandshakeTimeout = s.TLSHandshakeTimeout // SocketConfig soTimeout; the model derives the rest
	return b, err
}

// buildLabrun builds labrun's client for cfg, whose pool bounds pool connections per route
// (0: none).
func buildLabrun(cfg client.Config, pool int) (Built, error) {
	c, err := client.New(cfg)
	if err != nil {
		return Built{}, err
	}
	return Built{C: c, Limits: modelLimits(cfg), Pool: pool, Stats: c.Stats, MaxTotal: cfg.MaxTotal}, nil
}

// buildGo is the go profile: net/http's Client and Transport with the nearest settings.
func buildGo(s Spec, _ rules.Rules) (Built, error) {
	idle := s.MaxIdlePerHost
	if idle == 0 {
		idle = s.Pool
	}
	cfg := client.GoConfig{
		MaxConnsPerHost: s.Pool, MaxIdleConnsPerHost: idle,
		DialTimeout:           or(s.ConnectTimeout, 30*time.Second),
		ResponseHeaderTimeout: s.ReadTimeout, ClientTimeout: s.ClientTimeout,
		Deadline: s.Deadline, Retries: s.Retries, Backoff: s.Backoff,
		Resolver: s.Resolver, UseLastResponse: s.Follow.NoRedirects, TLS: s.TLS,
		TLSHandshakeTimeout: s.TLSHandshakeTimeout,
	}
	g, err := client.NewGo(cfg)
	if err != nil {
		return Built{}, err
	}
	l := model.Limits{ConnectTimeout: cfg.DialTimeout, ReadTimeout: cfg.ResponseHeaderTimeout,
		Deadline: firstSet(cfg.Deadline, cfg.ClientTimeout), Retries: cfg.Retries, Backoff: cfg.Backoff,
		TLSHandshakeTimeout: cfg.TLSHandshakeTimeout}
	return Built{C: g, Limits: l, Pool: s.Pool}, nil
}

// modelLimits converts labrun's client configuration to the model's limits; build adds the
// profile's rules.
func modelLimits(cfg client.Config) model.Limits {
	return model.Limits{
		LeaseTimeout:   cfg.LeaseTimeout,
		ConnectTimeout: cfg.ConnectTimeout,
		ReadTimeout:    firstSet(cfg.ReadTimeout, cfg.HeadTimeout),
		Deadline:       cfg.Deadline,
		Retries:        cfg.Retries,

		TLSHandshakeTimeout: cfg.TLSHandshakeTimeout,
		Backoff:             cfg.Backoff,

		ValidateAfterInactivity: cfg.ValidateAfterInactivity,
		EvictIdle:               cfg.EvictIdle,
		EvictInterval:           cfg.EvictInterval,
	}
}

// or returns v, or def when v is zero.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// firstSet returns the shorter of two limits, where 0 means "not set".
func firstSet(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
