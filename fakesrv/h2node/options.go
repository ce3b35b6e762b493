package h2node

import (
	"time"
)

type options struct {
	addr         string
	maxStreams   uint32
	idleTimeout  time.Duration
	writeTimeout time.Duration // writeTimeout, shorter in tests
	latency      time.Duration
	slowAfter    int
	slowLatency  time.Duration
	throttle     bool
	ca           *CA
	useTLS       bool
}

// Option configures a Node in New.
type Option func(*options)

// WithAddr sets the listen address (default "127.0.0.1:0"). It must be a loopback IP address:
// a node that freezes on request must not be reachable from other machines.
func WithAddr(addr string) Option { return func(o *options) { o.addr = addr } }

// WithMaxStreams sets the SETTINGS_MAX_CONCURRENT_STREAMS the node advertises (default
// DefaultMaxStreams). A stream beyond it is refused with RST_STREAM(REFUSED_STREAM) from the
// connection's first frame on, as net/http's server does. A limit lowered later (the APNs
// throttle) applies once the client has acknowledged the SETTINGS that lowered it: until
// then the previous, larger limit holds, as RFC 9113 section 6.5.3 lets a peer assume.
func WithMaxStreams(n uint32) Option { return func(o *options) { o.maxStreams = n } }

// WithIdleTimeout sets how long a connection may carry no stream and send nothing before the
// node sends GOAWAY and closes it (default DefaultIdleTimeout). While streams are open, a
// connection may be silent for their longest answer time (MaxDelay) on top of it. A frozen
// node closes nothing: the timer counts again from the thaw.
func WithIdleTimeout(d time.Duration) Option { return func(o *options) { o.idleTimeout = d } }

// WithLatency sets how long the node takes to answer each request (default 0).
func WithLatency(d time.Duration) Option { return func(o *options) { o.latency = d } }

// WithSlowAfter makes the node answer in d, instead of its latency, every request after the
// first k it received: a node that turns slow.
func WithSlowAfter(k int, d time.Duration) Option {
	return func(o *options) { o.slowAfter, o.slowLatency = k, d }
}

// WithThrottle turns on the APNs throttle: after answering a request with 400 on a
// connection, the node sends a SETTINGS frame lowering that connection's stream limit to 1,
// and after the next success on it, another restoring the limit. A burst of rejected
// notifications is then serialized, one stream at a time, until a success lets the rest run
// side by side again.
func WithThrottle(on bool) Option { return func(o *options) { o.throttle = on } }

// WithTLS serves TLS with a certificate for the node's IP address issued by ca (a new CA when
// ca is nil); Node.ClientTLS then returns a client configuration that trusts it.
func WithTLS(ca *CA) Option {
	return func(o *options) { o.useTLS, o.ca = true, ca }
}
