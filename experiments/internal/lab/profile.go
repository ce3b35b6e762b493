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

// The profiles an experiment's code names; --client takes every one of Profiles.
const (
	ProfileOkHttp314     = "okhttp@3.14"
	ProfileJDK           = "jdk"
	ProfileURLConnection = "urlconnection"
	ProfileHC4           = "hc4"
	ProfileOkHttp32      = "okhttp@3.2"
)

// Profile is a client profile (--client): a library's entry that labrun can run, built for
// what an experiment asks, with the model's limits for the same rules.
type Profile struct {
	Name               string
	Description        string
	Rules              func(s Spec) rules.Rules
	PropagatesDeadline bool // it can send its remaining budget (Spec.PropagateDeadline)
	// Make builds the client for s that executes r, with the model's limits but the rules.
	Make func(s Spec, r rules.Rules) (Built, error)
}

// Profiles returns the client profiles, the default (ProfileHC5) first.
func Profiles() []Profile {
	var out []Profile
	for _, pre := range rules.Profiles() {
		p := Profile{Name: pre.Name, Description: pre.Profile.Description, PropagatesDeadline: pre.Profile.PropagatesDeadline,
			Rules: func(s Spec) rules.Rules {
				return pre.Rules(rules.Settings{AutomaticRetries: s.HC5Retries == vocab.HC5RetriesDefault, NoRetryOnConnectionFailure: s.NoRouteRetry})
			},
			Make: labrunBuilder(pre)}
		if pre.Profile.NetHTTP {
			p.Make = buildGo
		}
		out = append(out, p)
	}
	return out
}

// Library names the library and release whose rules the profile follows.
func (p Profile) Library() string { return p.Rules(Spec{}).Library }

// ProfileNames lists the names --client takes.
func ProfileNames() []string { return rules.Names(rules.Profiles()) }

// LookupProfile returns the profile called name, or an error that names the flag.
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

// HC4PerRoute is the hc4 profile's pool per route.
const HC4PerRoute = rules.HC4PerRoute

// Spec is what an experiment sets on its client; a zero field takes the library's default.
type Spec struct {
	Pool, MaxTotal                            int
	LeaseTimeout, ConnectTimeout, ReadTimeout time.Duration
	// NoLeaseTimeout says "no lease timeout" rather than the profile's default.
	NoLeaseTimeout          bool
	Deadline, Backoff       time.Duration
	Retries                 int
	PropagateDeadline       bool
	TimeToLive, IdleTimeout time.Duration
	// MaxIdlePerHost is net/http's MaxIdleConnsPerHost (0: Pool, else net/http's 2).
	MaxIdlePerHost int
	// ClientTimeout is net/http's http.Client.Timeout (the go profile's; the model's Deadline).
	ClientTimeout time.Duration
	// NoRouteRetry turns OkHttp's retryOnConnectionFailure off.
	NoRouteRetry bool
	// Resolver resolves host names (nil: the system's).
	Resolver *net.Resolver
	// HC5Retries, ValidateAfterInactivity, EvictIdle and EvictInterval are HttpClient's
	// (client.Config's fields of the same names).
	HC5Retries              vocab.HC5Retries
	ValidateAfterInactivity time.Duration
	EvictIdle               time.Duration
	EvictInterval           time.Duration
	// Follow are the follow-up settings; TLS the roots for an https server.
	Follow client.FollowOptions
	TLS    *tls.Config
	// TLSHandshakeTimeout is the library's own handshake limit, where it has one.
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

// labrunBuilder builds labrun's client with pre's default limits for what a spec leaves
// unset, each setting only where the library's rules give it a meaning.
func labrunBuilder(pre rules.Preset) func(Spec, rules.Rules) (Built, error) {
	d, bare, propagates := pre.Limits, pre.Profile.Bare, pre.Profile.PropagatesDeadline
	return func(s Spec, r rules.Rules) (Built, error) {
		cfg := client.Config{
			ConnectTimeout: or(s.ConnectTimeout, d.Connect), WriteTimeout: d.Write,
			Deadline: s.Deadline, Retries: s.Retries, Backoff: s.Backoff,
			IdleTimeout: or(s.IdleTimeout, d.KeepAlive), PropagateDeadline: propagates && s.PropagateDeadline,
			Rules: r, Resolver: s.Resolver, Follow: s.Follow, TLS: s.TLS,
		}
		if r.Read.FromAttemptStart {
			cfg.HeadTimeout = or(s.ReadTimeout, d.Read)
		} else {
			cfg.ReadTimeout = or(s.ReadTimeout, d.Read)
		}
		if !r.Pool.Unbounded {
			lease := d.Lease
			if s.NoLeaseTimeout {
				lease = 0
			}
			cfg.MaxPerRoute, cfg.MaxTotal = or(s.Pool, d.PerRoute), or(s.MaxTotal, max(d.Total, s.Pool))
			cfg.LeaseTimeout, cfg.TimeToLive = or(s.LeaseTimeout, lease), s.TimeToLive
		}
		switch {
		case r.Reuse.Check == rules.CheckAfterInactivity && bare:
			cfg.ValidateAfterInactivity = s.ValidateAfterInactivity
		case r.Reuse.Check == rules.CheckAfterInactivity:
			cfg.ValidateAfterInactivity = or(s.ValidateAfterInactivity, d.Validate)
		case r.Reuse.Check == rules.CheckNone && r.Reuse.Watch == rules.WatchNever:
			cfg.ValidateAfterInactivity = client.NoValidation
		}
		if r.Reuse.PeriodicEvictor {
			cfg.EvictIdle, cfg.EvictInterval = s.EvictIdle, s.EvictInterval
		}
		// The model's handshake limit is the library's own setting; one the library takes
		// from another timeout is the model's rule (PreFirst.Handshake).
		handshake := time.Duration(0)
		switch r.PreFirst.Handshake.Limit {
		case rules.LimitTLSHandshake:
			cfg.TLSHandshakeTimeout, handshake = s.TLSHandshakeTimeout, s.TLSHandshakeTimeout
		case rules.LimitTLSHandshakeElseConnect:
			cfg.TLSHandshakeTimeout, handshake = or(s.TLSHandshakeTimeout, s.ConnectTimeout), s.TLSHandshakeTimeout
		case rules.LimitRead:
			cfg.TLSHandshakeTimeout = cfg.ReadTimeout
		}
		c, err := client.New(cfg)
		if err != nil {
			return Built{}, err
		}
		l := modelLimits(cfg)
		l.TLSHandshakeTimeout = handshake
		return Built{C: c, Limits: l, Pool: cfg.MaxPerRoute, Stats: c.Stats, MaxTotal: cfg.MaxTotal}, nil
	}
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

// modelLimits converts labrun's client configuration to the model's limits, but the rules.
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
