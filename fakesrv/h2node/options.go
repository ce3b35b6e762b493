package h2node

import (
	"time"
)

type options struct {
	addr         string
	maxStreams   uint32
	idleTimeout  time.Duration
	writeTimeout time.Duration // shorter in tests
	latency      time.Duration
	slowAfter    int
	slowLatency  time.Duration
	throttle     bool
	ca           *CA
	useTLS       bool
}

// Option configures a Node in New.
type Option func(*options)

// WithAddr sets the listen address (default "127.0.0.1:0"); it must be loopback.
func WithAddr(addr string) Option { return func(o *options) { o.addr = addr } }

// WithMaxStreams sets SETTINGS_MAX_CONCURRENT_STREAMS (default DefaultMaxStreams); streams
// beyond are refused. A lowered limit applies once acknowledged (RFC 9113 section 6.5.3).
func WithMaxStreams(n uint32) Option { return func(o *options) { o.maxStreams = n } }

// WithIdleTimeout sets how long an idle connection lives (default DefaultIdleTimeout).
func WithIdleTimeout(d time.Duration) Option { return func(o *options) { o.idleTimeout = d } }

// WithLatency sets each answer's latency (default 0).
func WithLatency(d time.Duration) Option { return func(o *options) { o.latency = d } }

// WithSlowAfter answers in d every request after the first k: a node turning slow.
func WithSlowAfter(k int, d time.Duration) Option {
	return func(o *options) { o.slowAfter, o.slowLatency = k, d }
}

// WithThrottle turns on the APNs throttle: a 400 lowers its connection's stream limit to 1
// until the next success.
func WithThrottle(on bool) Option { return func(o *options) { o.throttle = on } }

// WithTLS serves TLS with a certificate issued by ca (nil: a new CA); ClientTLS trusts it.
func WithTLS(ca *CA) Option {
	return func(o *options) { o.useTLS, o.ca = true, ca }
}
