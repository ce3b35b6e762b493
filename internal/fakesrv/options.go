package fakesrv

import (
	"fmt"
	"net/url"
	"time"
)

// DefaultAddr is the default listen address: loopback, a free port.
const DefaultAddr = "127.0.0.1:0"

// DefaultMaxDuration caps every delay, stall and trickle by default: a safety net against a
// forgotten request holding a goroutine.
const DefaultMaxDuration = 10 * time.Minute

// DefaultMaxOrders bounds the distinct order ids remembered between two resets by default.
const DefaultMaxOrders = 10_000

type options struct {
	idempotent  bool
	maxDuration time.Duration
	addr        string
	allowRemote bool
	logLimit    int
	logBytes    int
	maxOrders   int
	protocol    Protocol
	tlsNames    []string
	maxStreams  int
	precise     bool
	readTimeout time.Duration
	idleTimeout time.Duration
	onDone      func(Request)
	upstream    *url.URL    // WithUpstream: a proxy
	faultRules  []FaultRule // the proxy's first rules
}

func defaultOptions() options {
	return options{maxDuration: DefaultMaxDuration, addr: DefaultAddr, protocol: HTTP1,
		maxOrders: DefaultMaxOrders, precise: true}
}

// check reports the first setting New cannot use; checkAddr checks the address.
func (o *options) check() error {
	spec, ok := lookupProtocol(o.protocol)
	switch {
	case o.logLimit < 0:
		return fmt.Errorf("fakesrv: log limit must not be negative, got %d", o.logLimit)
	case o.logBytes < 0:
		return fmt.Errorf("fakesrv: log bytes must not be negative, got %d", o.logBytes)
	case o.maxOrders < 1:
		return fmt.Errorf("fakesrv: max orders must be at least 1, got %d", o.maxOrders)
	case o.readTimeout < 0:
		return fmt.Errorf("fakesrv: read timeout must not be negative, got %v", o.readTimeout)
	case o.idleTimeout < 0:
		return fmt.Errorf("fakesrv: idle timeout must not be negative, got %v", o.idleTimeout)
	case o.maxDuration <= 0:
		return fmt.Errorf("fakesrv: max duration must be positive, got %v", o.maxDuration)
	case !ok:
		return fmt.Errorf("fakesrv: unknown protocol %q, want one of %s", o.protocol, protocolNames())
	case o.maxStreams < 0:
		return fmt.Errorf("fakesrv: max concurrent streams must not be negative, got %d", o.maxStreams)
	case o.maxStreams > 0 && !spec.http2:
		return fmt.Errorf("fakesrv: max concurrent streams is an HTTP/2 setting, and protocol %s is not HTTP/2", o.protocol)
	case len(o.tlsNames) > 0 && !spec.TLS:
		return fmt.Errorf("fakesrv: TLS names need a TLS protocol, and protocol %s has no TLS", o.protocol)
	}
	if err := checkFaultRules(o.faultRules); err != nil {
		return fmt.Errorf("fakesrv: %w", err)
	}
	if len(o.faultRules) > 0 && o.upstream == nil {
		return fmt.Errorf("fakesrv: fault rules need an upstream")
	}
	for _, name := range o.tlsNames {
		if name == "" {
			return fmt.Errorf("fakesrv: a TLS name must not be empty")
		}
	}
	return nil
}

// Option configures a Server in New.
type Option func(*options)

// WithIdempotent makes every reservation idempotent, as Behaviour.Idempotent does.
func WithIdempotent(on bool) Option {
	return func(o *options) { o.idempotent = on }
}

// WithMaxDuration caps every delay, stall and trickle at d (DefaultMaxDuration): a capped
// delay answers at d, a capped stall answers an empty 200, a capped trickle stops short of its
// Content-Length. New rejects d <= 0.
func WithMaxDuration(d time.Duration) Option {
	return func(o *options) { o.maxDuration = d }
}

// WithAddr sets the listen address, "host:port" (DefaultAddr). New refuses a host that is not
// loopback (127.0.0.0/8, ::1, localhost; not ":8080") without WithAllowRemote(true): a server
// that stalls on request must not be reachable from elsewhere by accident.
func WithAddr(addr string) Option {
	return func(o *options) { o.addr = addr }
}

// WithOnDone calls f with a copy of each request's record when the server is done with it, on
// the request's goroutine (so concurrently for requests in flight).
func WithOnDone(f func(Request)) Option {
	return func(o *options) { o.onDone = f }
}

// WithLogLimit keeps only the last n requests in the log (0: all); the counters keep counting.
func WithLogLimit(n int) Option {
	return func(o *options) { o.logLimit = n }
}

// WithLogBytes bounds the request log to about n bytes (0: no bound), the oldest entries going
// first and counted in Stats.Dropped.
func WithLogBytes(n int) Option {
	return func(o *options) { o.logBytes = n }
}

// WithMaxOrders bounds the distinct order ids remembered between two resets
// (DefaultMaxOrders): a new one beyond it is answered 507, reserves nothing and counts in
// Stats.Dropped. New rejects n < 1.
func WithMaxOrders(n int) Option {
	return func(o *options) { o.maxOrders = n }
}

// WithPreciseTiming chooses how the server waits: precisely (the default), with a timer set
// early and the last stretch yielded, which keeps the experiments close to the model at some CPU
// per wait; or coarsely, with a timer brought forward by the lab's alarm for longer waits, cheap
// enough to leave running (labrun serve). A coarse trickle wakes at most every CoarseTick.
func WithPreciseTiming(on bool) Option {
	return func(o *options) { o.precise = on }
}

// WithReadTimeout bounds how long a client may take to send a request: the head within d (at
// most 10 s), the body within d of the handler's start, else 408 and the connection closed. 0
// gives the head 10 s and the body no bound. New rejects d < 0.
func WithReadTimeout(d time.Duration) Option {
	return func(o *options) { o.readTimeout = d }
}

// WithIdleTimeout closes a connection idle for d (HTTP/2: without streams); 0 keeps it as long
// as the client wants. New rejects d < 0.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) { o.idleTimeout = d }
}

// WithAllowRemote lets WithAddr name a non-loopback address.
func WithAllowRemote(on bool) Option {
	return func(o *options) { o.allowRemote = on }
}

// WithProtocol sets the protocol (HTTP1 by default); a TLS protocol's certificate comes from a
// CA made in memory (CACertPEM, ClientTLS).
func WithProtocol(p Protocol) Option {
	return func(o *options) { o.protocol = p }
}

// WithTLSNames adds names or IPs to the certificate besides 127.0.0.1, ::1 and localhost.
func WithTLSNames(names ...string) Option {
	return func(o *options) { o.tlsNames = append(o.tlsNames, names...) }
}

// WithMaxConcurrentStreams sets the SETTINGS_MAX_CONCURRENT_STREAMS an HTTP/2 server advertises
// (0: net/http's default). New refuses it for a protocol that is not HTTP/2.
func WithMaxConcurrentStreams(n int) Option {
	return func(o *options) { o.maxStreams = n }
}
