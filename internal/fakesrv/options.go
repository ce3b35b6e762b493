package fakesrv

import (
	"fmt"
	"time"
)

// DefaultAddr is the default listen address: loopback, on a port the system picks.
const DefaultAddr = "127.0.0.1:0"

// DefaultMaxDuration is the default cap on every delay, stall and total trickle time. It is a
// safety net against a forgotten request holding a goroutine, far above any experiment.
const DefaultMaxDuration = 10 * time.Minute

// DefaultMaxOrders is the default bound on the distinct order ids the server remembers
// between two resets (WithMaxOrders): far above any experiment, and, with order ids of at
// most MaxOrderLen bytes, a few megabytes at most.
const DefaultMaxOrders = 10_000

// options holds the server-wide settings; see the With functions.
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
}

// defaultOptions are the settings of a Server created without options.
func defaultOptions() options {
	return options{maxDuration: DefaultMaxDuration, addr: DefaultAddr, protocol: HTTP1,
		maxOrders: DefaultMaxOrders, precise: true}
}

// check reports the first setting that New cannot use. The listen address is checked apart,
// by checkAddr, since only Start uses it.
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
	for _, name := range o.tlsNames {
		if name == "" {
			return fmt.Errorf("fakesrv: a TLS name must not be empty")
		}
	}
	return nil
}

// Option configures a Server in New.
type Option func(*options)

// WithIdempotent makes every reservation idempotent, deduplicated by order id, as if every
// request had Behaviour.Idempotent set.
func WithIdempotent(on bool) Option {
	return func(o *options) { o.idempotent = on }
}

// WithMaxDuration caps every delay, stall and total trickle time at d (default
// DefaultMaxDuration). A capped delay answers at d; a capped stall answers 200 with an empty
// body at d; a capped trickle stops sending at headTime + d, leaving the body short of its
// Content-Length, so the client sees the connection (HTTP/2: the stream) end early. New
// rejects d <= 0.
func WithMaxDuration(d time.Duration) Option {
	return func(o *options) { o.maxDuration = d }
}

// WithAddr sets the listen address, "host:port" (default DefaultAddr; port 0 picks a free
// port). New refuses a host that is not loopback unless WithAllowRemote(true) is also given:
// loopback is an IP in 127.0.0.0/8, ::1 or the name "localhost"; any other name, and an
// empty host (":8080", every interface), is not. A server that stalls and resets on request
// must not be reachable from other machines by accident.
func WithAddr(addr string) Option {
	return func(o *options) { o.addr = addr }
}

// WithOnDone calls f once per request when the server is done with it (answered, failed on
// purpose, or left by its client), with a copy of its log record, Finished set. f runs on the
// request's handler goroutine, so requests in flight call it concurrently, and a slow f holds
// the request's goroutine (not its response, which is over): labrun serve prints a line per
// request with it. nil, the default, calls nothing.
func WithOnDone(f func(Request)) Option {
	return func(o *options) { o.onDone = f }
}

// WithLogLimit keeps only the last n requests in the log (0, the default, keeps them all), so
// that a long-running server does not grow with its traffic. The counters are not affected.
func WithLogLimit(n int) Option {
	return func(o *options) { o.logLimit = n }
}

// WithLogBytes bounds the request log to about n bytes (0, the default, does not), counting
// each entry's path and order id and a fixed share for the rest, so that long URLs cannot
// make a long-running server grow either. The oldest entries go first, and Stats.Dropped
// counts them. The counters are not affected.
func WithLogBytes(n int) Option {
	return func(o *options) { o.logBytes = n }
}

// WithMaxOrders bounds the distinct order ids that the server remembers between two resets
// (default DefaultMaxOrders). A reservation of a new order id beyond it is refused with 507
// Insufficient Storage, reserves nothing, and counts in Stats.Dropped; the ids already known
// keep working. New rejects n < 1.
func WithMaxOrders(n int) Option {
	return func(o *options) { o.maxOrders = n }
}

// WithPreciseTiming chooses how the server waits until a scheduled time: precisely (the
// default), setting its timer a millisecond early and yielding the processor through the
// last stretch, or coarsely, with a timer brought forward by one of the lab's alarms
// (internal/clock) for waits of 5 ms and more, which yields at most half a millisecond per
// wait. The precise waits keep the in-process experiments within a few milliseconds of the
// model, at the price of up to a millisecond of CPU per wait; a coarse server lands a delay
// within a fraction of a millisecond too and costs far less, so it can be left running for
// others (labrun serve). Either way a trickle sends every byte due at a wake-up in one
// write, and a coarse one wakes up at most every CoarseTick.
func WithPreciseTiming(on bool) Option {
	return func(o *options) { o.precise = on }
}

// WithReadTimeout bounds how long a client may take to send a request: its head must
// arrive within d (at most 10 s) of the server starting to read it, and its body within d
// of the handler's start; a body that takes longer is answered 408 and its connection
// closed. 0, the default, gives the head 10 s and the body as long as it takes. New rejects
// d < 0.
func WithReadTimeout(d time.Duration) Option {
	return func(o *options) { o.readTimeout = d }
}

// WithIdleTimeout closes a keep-alive connection (HTTP/2: a connection without streams)
// idle for d. 0, the default, keeps idle connections as long as the client wants, as the
// pool experiments need. New rejects d < 0.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) { o.idleTimeout = d }
}

// WithAllowRemote lets WithAddr name a non-loopback address. Anyone who can reach that
// address can then hold the server's goroutines for up to its max duration per request.
func WithAllowRemote(on bool) Option {
	return func(o *options) { o.allowRemote = on }
}

// WithProtocol sets the protocol the server speaks (default HTTP1). The TLS protocols serve a
// certificate from a certificate authority generated in memory when the server is created;
// CACertPEM and ClientTLS give it to clients.
func WithProtocol(p Protocol) Option {
	return func(o *options) { o.protocol = p }
}

// WithTLSNames adds host names or IP addresses to the server's certificate, besides the
// 127.0.0.1, ::1 and localhost it always names. New refuses it for a protocol without TLS.
func WithTLSNames(names ...string) Option {
	return func(o *options) { o.tlsNames = append(o.tlsNames, names...) }
}

// WithMaxConcurrentStreams sets the SETTINGS_MAX_CONCURRENT_STREAMS that an HTTP/2 server
// advertises: how many requests a client may have in flight on one connection. 0, the
// default, leaves net/http's own default (at least 100). New refuses n > 0 for a protocol
// that is not HTTP/2.
func WithMaxConcurrentStreams(n int) Option {
	return func(o *options) { o.maxStreams = n }
}
