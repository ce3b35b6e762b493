package experiments

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/model"
)

// The client profiles an experiment can run under (--client).
const (
	// ProfileHC5 is labrun's client with Apache HttpClient 5's semantics (the default).
	ProfileHC5 = "hc5"
	// ProfileOkHttp is labrun's client with OkHttp's defaults and rules: connect and read 10 s,
	// no lease, response follow-ups, each resolved address a route retried on failure.
	ProfileOkHttp = "okhttp"
	// ProfileGo is Go's own net/http client with the nearest settings and none of labrun's
	// layers.
	ProfileGo = "go"
)

// Profiles lists the profiles.
func Profiles() []string { return []string{ProfileHC5, ProfileOkHttp, ProfileGo} }

// CheckProfile reports an unknown profile, naming the flag.
func CheckProfile(p string) error {
	for _, q := range Profiles() {
		if p == q {
			return nil
		}
	}
	return fmt.Errorf("--client: unknown client %q (want %s)", p, strings.Join(Profiles(), ", "))
}

// spec is what an experiment sets on its client, in terms every profile understands. A zero
// field takes the profile's own default (HttpClient 5: lease and connect 3 min, 5 connections
// per route; OkHttp: connect and read 10 s; net/http: dial 30 s, no other limit).
type spec struct {
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
	// NoRouteRetry turns OkHttp's retryOnConnectionFailure off.
	NoRouteRetry bool
	// Resolver resolves host names (nil: the system's).
	Resolver *net.Resolver
}

// caller is a client under test.
type caller interface {
	Do(ctx context.Context, req *http.Request) (*client.Result, error)
	Close()
}

// built is a profile's client for a spec, with the model's limits for the same rules.
type built struct {
	c      caller
	limits model.Limits
	// pool bounds the connections leased at once (0: no bound).
	pool int
	// stats gives the pool statistics, when the client has them (net/http has none).
	stats func() client.Stats
	// maxTotal is the total connection limit the client was configured with (0: none).
	maxTotal int
}

// build makes profile's client for s.
func build(profile string, s spec) (built, error) {
	switch profile {
	case ProfileOkHttp:
		cfg := client.Config{
			ConnectTimeout: or(s.ConnectTimeout, 10*time.Second),
			ReadTimeout:    or(s.ReadTimeout, 10*time.Second),
			WriteTimeout:   10 * time.Second,
			Deadline:       s.Deadline, Retries: s.Retries, Backoff: s.Backoff,
			IdleTimeout:              or(s.IdleTimeout, 5*time.Minute),
			FollowUps:                true,
			RoutePerAttempt:          true,
			RetryOnConnectionFailure: !s.NoRouteRetry,
			Resolver:                 s.Resolver,
		}
		c, err := client.New(cfg)
		if err != nil {
			return built{}, err
		}
		l := modelLimits(cfg)
		l.Profile, l.RetryOnConnectionFailure = model.OkHttp, cfg.RetryOnConnectionFailure
		return built{c: c, limits: l, stats: c.Stats}, nil
	case ProfileGo:
		idle := s.MaxIdlePerHost
		if idle == 0 {
			idle = s.Pool
		}
		cfg := client.GoConfig{
			MaxConnsPerHost: s.Pool, MaxIdleConnsPerHost: idle,
			DialTimeout:           or(s.ConnectTimeout, 30*time.Second),
			ResponseHeaderTimeout: s.ReadTimeout,
			Deadline:              s.Deadline, Retries: s.Retries, Backoff: s.Backoff,
			Resolver: s.Resolver,
		}
		g, err := client.NewGo(cfg)
		if err != nil {
			return built{}, err
		}
		l := model.Limits{Profile: model.Go, ConnectTimeout: cfg.DialTimeout, ReadTimeout: cfg.ResponseHeaderTimeout,
			Deadline: cfg.Deadline, Retries: cfg.Retries, Backoff: cfg.Backoff}
		return built{c: g, limits: l, pool: s.Pool}, nil
	default:
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
		}
		c, err := client.New(cfg)
		if err != nil {
			return built{}, err
		}
		return built{c: c, limits: modelLimits(cfg), pool: cfg.MaxPerRoute, stats: c.Stats, maxTotal: cfg.MaxTotal}, nil
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

// modelLimits converts labrun's client configuration to the model's limits.
func modelLimits(cfg client.Config) model.Limits {
	return model.Limits{
		LeaseTimeout:   cfg.LeaseTimeout,
		ConnectTimeout: cfg.ConnectTimeout,
		ReadTimeout:    cfg.ReadTimeout,
		Deadline:       cfg.Deadline,
		Retries:        cfg.Retries,
		Backoff:        cfg.Backoff,
	}
}

// modelPool is the pool size the model simulates for b with calls concurrent calls.
func (b built) modelPool(calls int) int {
	if b.pool == 0 {
		return max(calls, 1)
	}
	return b.pool
}
