// Package vanish measures what HTTP clients see when the peer vanishes (docs/vanish.md): a host that is down (SYNs unanswered), a pooled connection whose peer went away
// silently (no FIN, no RST), a stale check on that connection, TCP keepalive on it, and Go's
// HTTP/2 health check on it, all with the kernel's timers scaled down to seconds.
//
// Each measurement is a job that runs in a namespace child (package netns): the child's own
// network namespace is the client host with its own tcp_retries2 and tcp_syn_retries, a second
// namespace is the server host, and the server vanishes when its end of the veth pair goes
// down. HostDown, Dropped, Keepalive and HTTP2 run one job each and return what it measured;
// the binary must dispatch Jobs() with netns.MaybeChild. DialDown measures a connect to a host that
// is down from the calling namespace, with a socket's own SYN count, and needs no namespace.
//
// A job runs its calls concurrently, on separate connections over the same vanished link, and
// each job finishes well within 15 s with its default input. Every result carries the
// kernel's parameters as a model.Kernel, so that the expected values come from the model.
package vanish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/vocab"
)

// The jobs' names, as Jobs() lists them.
const (
	JobHostDown  = "vanish.host-down"
	JobDropped   = "vanish.dropped"
	JobKeepalive = "vanish.keepalive"
)

// Limits that keep every job well under 15 s: the kernel's timers are scaled down only as far
// as these counts allow.
const (
	// MaxSYNRetries gives up a connect after 7 s.
	MaxSYNRetries = 2
	// MaxRetries2 gives up a request after about 6.8 s on a veth at HZ = 250 (rarely 13.3 s
	// for 4, when the timer wheel is early enough to miss the budget: see model.Kernel).
	MaxRetries2 = 4
	// MaxWait bounds every timeout, deadline and pause of a job's input.
	MaxWait = 5 * time.Second
	// MaxKeepalive bounds the keepalive give-up time of a job's input, in the kernel's
	// whole seconds.
	MaxKeepalive = 6 * time.Second
)

// checkWaits reports a duration that is negative or over MaxWait.
func checkWaits(waits map[string]time.Duration) error {
	for name, d := range waits {
		if d < 0 || d > MaxWait {
			return fmt.Errorf("vanish: %s must be in 0..%v, got %v", name, MaxWait, d)
		}
	}
	return nil
}

// Sample is one measured call, dial or read.
type Sample struct {
	// Elapsed is how long it took, from its start to its end.
	Elapsed time.Duration `json:"elapsed"`
	// Outcome is how it ended. The kernel giving up is vocab.Failed, as for any measured
	// call; KernelTimeout tells it apart.
	Outcome vocab.Outcome `json:"outcome"`
	// Phase is where a client call ended; empty for a dial or a read.
	Phase vocab.Phase `json:"phase,omitempty"`
	// KernelTimeout means the kernel gave up on the connection (ETIMEDOUT): unanswered SYNs,
	// retransmissions or keepalive probes.
	KernelTimeout bool `json:"kernelTimeout,omitempty"`
	// Attempts is how many attempts a client call made. net/http's Transport replays a GET
	// on a new connection by itself when a pooled one fails before any response byte: that
	// stays inside one attempt.
	Attempts int `json:"attempts,omitempty"`
	// Reused means the call went out on a pooled connection (its first attempt did).
	Reused bool `json:"reused,omitempty"`
	// Err is the error the client saw, "" on success.
	Err string `json:"err,omitempty"`
}

// HostDownInput configures the host-down job: every connect goes to the server address after
// the server vanished, so its SYNs go unanswered.
type HostDownInput struct {
	// SYNRetries is both the dial's TCP_SYNCNT and the namespace's tcp_syn_retries (for the
	// client, whose dialer has no socket options): 1..MaxSYNRetries.
	SYNRetries int `json:"synRetries"`
	// LinearTimeouts is the namespace's tcp_syn_linear_timeouts (Linux 6.5 and later, 4 by
	// default there): that many SYN retransmissions at a fixed 1 s before the exponential
	// ones. 0 is the documented schedule, 1+2+4... s, and the only value older kernels take.
	// For 1 or 2 retries it changes nothing: the time budget ends the connect first.
	LinearTimeouts int `json:"linearTimeouts"`
	// ConnectTimeout is the connect timeout of the timed dial and the timed client call.
	ConnectTimeout time.Duration `json:"connectTimeout"`
}

// DefaultHostDown is the documented host-down row at reduced scale: 1 SYN retry on the
// documented schedule (3 s), a connect timeout of 1 s.
func DefaultHostDown() HostDownInput {
	return HostDownInput{SYNRetries: 1, ConnectTimeout: time.Second}
}

// Check reports an input that makes no sense.
func (in HostDownInput) Check() error {
	switch {
	case in.SYNRetries < 1 || in.SYNRetries > MaxSYNRetries:
		return fmt.Errorf("vanish: syn retries must be in 1..%d, got %d", MaxSYNRetries, in.SYNRetries)
	case in.LinearTimeouts < 0 || in.LinearTimeouts > 127:
		return fmt.Errorf("vanish: linear timeouts must be in 0..127, got %d", in.LinearTimeouts)
	case in.ConnectTimeout == 0:
		return errors.New("vanish: connect timeout must be set")
	}
	return checkWaits(map[string]time.Duration{"connect timeout": in.ConnectTimeout})
}

// HostDownResult is what the host-down job measured.
type HostDownResult struct {
	Input HostDownInput `json:"input"`
	// Kernel holds the namespace's SYN rules: Kernel.SYNGiveUp(SYNRetries) is the expected
	// give-up time.
	Kernel model.Kernel `json:"kernel"`
	// Dial is a net.Dialer with TCP_SYNCNT and no timeout: it ends when the kernel gives up.
	Dial Sample `json:"dial"`
	// DialTimeout is a net.Dialer with the connect timeout.
	DialTimeout Sample `json:"dialTimeout"`
	// Client is labrun's client with no connect timeout: the namespace's tcp_syn_retries
	// decides.
	Client Sample `json:"client"`
	// ClientTimeout is labrun's client with the connect timeout.
	ClientTimeout Sample `json:"clientTimeout"`
}

// DroppedInput configures the dropped-connection job: calls on pooled connections whose peer
// vanished after one successful exchange each.
type DroppedInput struct {
	// Retries2 is the namespace's tcp_retries2, 0..MaxRetries2.
	Retries2 int `json:"retries2"`
	// ReadTimeout is the read timeout of the read-timeout call and of the call after the
	// stale check; Deadline the whole-call deadline of the deadline call.
	ReadTimeout time.Duration `json:"readTimeout"`
	Deadline    time.Duration `json:"deadline"`
	// ConnectTimeout bounds the new connection a client opens when it replays a GET after
	// the kernel gave up on the pooled one: the server is gone, so that connect hangs.
	ConnectTimeout time.Duration `json:"connectTimeout"`
	// Inactivity is how long the connections sit idle after the peer vanished, before the
	// calls and the stale check (HttpClient 5's validateAfterInactivity, scaled down).
	Inactivity time.Duration `json:"inactivity"`
}

// DefaultDropped is the documented dropped-connection row at reduced scale.
func DefaultDropped() DroppedInput {
	return DroppedInput{Retries2: 3, ReadTimeout: 250 * time.Millisecond, Deadline: time.Second,
		ConnectTimeout: time.Second, Inactivity: 300 * time.Millisecond}
}

// Check reports an input that makes no sense.
func (in DroppedInput) Check() error {
	switch {
	case in.Retries2 < 0 || in.Retries2 > MaxRetries2:
		return fmt.Errorf("vanish: retries2 must be in 0..%d, got %d", MaxRetries2, in.Retries2)
	case in.ReadTimeout == 0 || in.Deadline == 0 || in.ConnectTimeout == 0:
		return fmt.Errorf("vanish: read timeout, deadline and connect timeout must be set, got %v, %v, %v",
			in.ReadTimeout, in.Deadline, in.ConnectTimeout)
	}
	return checkWaits(map[string]time.Duration{"read timeout": in.ReadTimeout, "deadline": in.Deadline,
		"connect timeout": in.ConnectTimeout, "inactivity": in.Inactivity})
}

// DroppedResult is what the dropped-connection job measured. Every call starts after
// Inactivity on a connection that carried one exchange before the peer vanished.
type DroppedResult struct {
	Input DroppedInput `json:"input"`
	// Kernel holds the connection's timers: Kernel.DataGiveUp(Retries2) is the expected
	// give-up time of Raw.
	Kernel model.Kernel `json:"kernel"`
	// Raw is a request written on a plain connection and a blocking read with no deadline:
	// it ends when the kernel gives up. Retransmissions is how many times the kernel sent the
	// request again by then (tail loss probe included).
	Raw             Sample `json:"raw"`
	Retransmissions int    `json:"retransmissions"`
	// Client is labrun's client, GET, no read timeout. When the kernel gives up, net/http's
	// Transport replays the GET on a new connection (the call stays one attempt), which hangs
	// in connect until ConnectTimeout.
	Client Sample `json:"client"`
	// ClientPost is the same with a POST whose body cannot be sent again: nothing is
	// replayed, and the kernel's error reaches the caller.
	ClientPost Sample `json:"clientPost"`
	// ReadTimeout is labrun's client with the read timeout; Deadline with the deadline.
	ReadTimeout Sample `json:"readTimeout"`
	Deadline    Sample `json:"deadline"`
	// Go is Go's net/http (client.NewGo) with DialTimeout = ConnectTimeout and no other
	// limit: it replays the GET too.
	Go Sample `json:"go"`
	// Stale is pit 6's advice held against itself.
	Stale StaleResult `json:"stale"`
}

// StaleResult is HttpClient 5's stale check (validateAfterInactivity) on a connection the
// server closed and on one whose peer vanished.
type StaleResult struct {
	// ClosedHealthy is the check on a connection the server closed (FIN) before the peer
	// vanished: false, the check sees the FIN.
	ClosedHealthy bool   `json:"closedHealthy"`
	ClosedReason  string `json:"closedReason,omitempty"`
	// VanishedHealthy is the check on the connection whose peer vanished: true, there is
	// nothing to see.
	VanishedHealthy bool   `json:"vanishedHealthy"`
	VanishedReason  string `json:"vanishedReason,omitempty"`
	// After is the request sent on the vanished connection once the check passed, with the
	// read timeout: only the read timeout ends it.
	After Sample `json:"after"`
}

// KeepaliveInput configures the keepalive job: idle pooled connections whose peer vanished
// right after their exchange.
type KeepaliveInput struct {
	// Idle, Interval and Count are the keepalive settings (net.KeepAliveConfig). The kernel
	// counts Idle and Interval in whole seconds and Go rounds them up: 200 ms is 1 s.
	Idle     time.Duration `json:"idle"`
	Interval time.Duration `json:"interval"`
	Count    int           `json:"count"`
	// Retries2 is the namespace's tcp_retries2: it decides the call on the connection with no
	// keepalive, and plays no part in keepalive.
	Retries2 int `json:"retries2"`
	// ConnectTimeout bounds the connects to the vanished server.
	ConnectTimeout time.Duration `json:"connectTimeout"`
	// NextCall is when the next call starts, after the exchange; 0 means half a second after
	// the expected keepalive give-up (model.KeepaliveGiveUp).
	NextCall time.Duration `json:"nextCall"`
}

// DefaultKeepalive is the keepalive row at reduced scale: 1 s idle, 1 s between 3 probes.
func DefaultKeepalive() KeepaliveInput {
	return KeepaliveInput{Idle: time.Second, Interval: time.Second, Count: 3, Retries2: 2, ConnectTimeout: time.Second}
}

// Check reports an input that makes no sense.
func (in KeepaliveInput) Check() error {
	switch {
	case in.Idle <= 0 || in.Interval <= 0 || in.Count < 1:
		return fmt.Errorf("vanish: keepalive needs a positive idle, interval and count, got %v, %v, %d", in.Idle, in.Interval, in.Count)
	case model.KeepaliveGiveUp(in.Idle, in.Interval, in.Count) > MaxKeepalive:
		return fmt.Errorf("vanish: keepalive must give up within %v, got %v (idle and interval count in whole seconds)",
			MaxKeepalive, model.KeepaliveGiveUp(in.Idle, in.Interval, in.Count))
	case in.Retries2 < 0 || in.Retries2 > MaxRetries2:
		return fmt.Errorf("vanish: retries2 must be in 0..%d, got %d", MaxRetries2, in.Retries2)
	case in.ConnectTimeout == 0:
		return errors.New("vanish: connect timeout must be set")
	case in.NextCall < 0 || in.NextCall > MaxKeepalive+time.Second:
		return fmt.Errorf("vanish: next call must be in 0..%v, got %v", MaxKeepalive+time.Second, in.NextCall)
	}
	return checkWaits(map[string]time.Duration{"connect timeout": in.ConnectTimeout})
}

// NextCallAt is when the next call starts, from the last exchange: NextCall, or half a second
// after the expected keepalive give-up.
func (in KeepaliveInput) NextCallAt() time.Duration {
	if in.NextCall > 0 {
		return in.NextCall
	}
	return model.KeepaliveGiveUp(in.Idle, in.Interval, in.Count) + 500*time.Millisecond
}

// KeepaliveResult is what the keepalive job measured.
type KeepaliveResult struct {
	Input KeepaliveInput `json:"input"`
	// Idle, Interval and Count are the settings the socket holds (read back from it).
	Idle     time.Duration `json:"idle"`
	Interval time.Duration `json:"interval"`
	Count    int           `json:"count"`
	// Kernel holds the timers: Kernel.KeepaliveGiveUp(Idle, Interval, Count) is the expected
	// Killed.Elapsed, and Kernel.DataGiveUp(Retries2) the wait of NoKeepalive on the dead
	// connection (its RTO is the keepalive connection's, on the same path).
	Kernel model.Kernel `json:"kernel"`
	// Killed is a blocking read on the idle connection, as net/http's Transport keeps on each
	// pooled connection, from the last byte received: it ends when keepalive gives up.
	Killed Sample `json:"killed"`
	// NextCall is a GET through net/http with the keepalive settings, at Input.NextCall after
	// the exchange: keepalive has removed the dead connection from the pool, so the call
	// dials (and the server being gone, fails at the connect timeout).
	NextCall Sample `json:"nextCall"`
	// NoKeepalive is the same call through a Transport with keepalive off: it goes out on the
	// dead connection, waits until tcp_retries2 gives up, then the Transport replays it on a
	// new connection.
	NoKeepalive Sample `json:"noKeepalive"`
}

// HostDown runs the host-down job in a namespace child.
func HostDown(ctx context.Context, in HostDownInput) (HostDownResult, error) {
	var out HostDownResult
	if err := in.Check(); err != nil {
		return out, err
	}
	return out, netns.Run(ctx, JobHostDown, in, &out)
}

// Dropped runs the dropped-connection job in a namespace child.
func Dropped(ctx context.Context, in DroppedInput) (DroppedResult, error) {
	var out DroppedResult
	if err := in.Check(); err != nil {
		return out, err
	}
	return out, netns.Run(ctx, JobDropped, in, &out)
}

// Keepalive runs the keepalive job in a namespace child.
func Keepalive(ctx context.Context, in KeepaliveInput) (KeepaliveResult, error) {
	var out KeepaliveResult
	if err := in.Check(); err != nil {
		return out, err
	}
	return out, netns.Run(ctx, JobKeepalive, in, &out)
}
