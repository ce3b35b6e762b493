// Package vanish measures what HTTP clients see when the peer vanishes (docs/vanish.md): a host
// that is down, a pooled connection whose peer went away silently, a stale check and TCP
// keepalive on it, and Go's HTTP/2 health check, with the kernel's timers scaled to seconds.
// Jobs run in a namespace child (dispatch Jobs() with netns.MaybeChild) whose server host
// vanishes when its veth goes down; results carry the kernel's parameters (model.Kernel).
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

const (
	JobHostDown  = "vanish.host-down"
	JobDropped   = "vanish.dropped"
	JobKeepalive = "vanish.keepalive"
)

// Limits that keep every job well under 15 s.
const (
	MaxSYNRetries = 2
	// MaxRetries2 gives up a request after about 6.8 s on a veth at HZ = 250 (docs/vanish.md).
	MaxRetries2 = 4
	// MaxWait bounds every timeout, deadline and pause of an input.
	MaxWait = 5 * time.Second
	// MaxKeepalive bounds an input's keepalive give-up time.
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
	Elapsed time.Duration `json:"elapsed"`
	// Outcome is vocab.Failed when the kernel gave up; KernelTimeout tells it apart.
	Outcome vocab.Outcome `json:"outcome"`
	Phase   vocab.Phase   `json:"phase,omitempty"`
	// KernelTimeout: the kernel gave up (ETIMEDOUT).
	KernelTimeout bool `json:"kernelTimeout,omitempty"`
	// Attempts counts a client call's attempts; net/http's own replay stays inside one.
	Attempts int `json:"attempts,omitempty"`
	// Reused: the first attempt reused a pooled connection.
	Reused bool   `json:"reused,omitempty"`
	Err    string `json:"err,omitempty"`
}

// HostDownInput configures the host-down job: connects to the vanished server.
type HostDownInput struct {
	// SYNRetries is TCP_SYNCNT and tcp_syn_retries, 1..MaxSYNRetries.
	SYNRetries int `json:"synRetries"`
	// LinearTimeouts is tcp_syn_linear_timeouts (Linux 6.5+): SYN retransmissions at a fixed 1 s
	// first; 0 is the documented schedule. For 1 or 2 retries it changes nothing.
	LinearTimeouts int           `json:"linearTimeouts"`
	ConnectTimeout time.Duration `json:"connectTimeout"`
}

// DefaultHostDown is the host-down row at reduced scale.
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
	// Kernel holds the SYN rules; Kernel.SYNGiveUp(SYNRetries) is the expected give-up.
	Kernel model.Kernel `json:"kernel"`
	// Dial has TCP_SYNCNT and no timeout; DialTimeout has the connect timeout.
	Dial        Sample `json:"dial"`
	DialTimeout Sample `json:"dialTimeout"`
	// Client is labrun's client without connect timeout; ClientTimeout with it.
	Client        Sample `json:"client"`
	ClientTimeout Sample `json:"clientTimeout"`
}

// DroppedInput configures the dropped-connection job: pooled connections that carried one
// exchange before their peer vanished.
type DroppedInput struct {
	Retries2 int `json:"retries2"`
	// ReadTimeout and Deadline bound the calls that have them.
	ReadTimeout time.Duration `json:"readTimeout"`
	Deadline    time.Duration `json:"deadline"`
	// ConnectTimeout bounds the connect of a GET replayed after the kernel gave up.
	ConnectTimeout time.Duration `json:"connectTimeout"`
	// Inactivity is the idle time before the calls (validateAfterInactivity, scaled down).
	Inactivity time.Duration `json:"inactivity"`
}

// DefaultDropped is the dropped-connection row at reduced scale.
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

// DroppedResult is what the dropped-connection job measured.
type DroppedResult struct {
	Input DroppedInput `json:"input"`
	// Kernel holds the timers; Kernel.DataGiveUp(Retries2) is Raw's expected time.
	Kernel model.Kernel `json:"kernel"`
	// Raw is a request and a read without deadline on a plain connection; Retransmissions counts
	// the kernel's re-sends.
	Raw             Sample `json:"raw"`
	Retransmissions int    `json:"retransmissions"`
	// Client is labrun's GET without read timeout: net/http replays it after the kernel gives up,
	// which hangs in connect until ConnectTimeout.
	Client Sample `json:"client"`
	// ClientPost's body cannot be re-sent: the kernel's error reaches the caller.
	ClientPost  Sample `json:"clientPost"`
	ReadTimeout Sample `json:"readTimeout"`
	Deadline    Sample `json:"deadline"`
	// Go is net/http (client.NewGo) with DialTimeout only: it replays the GET too.
	Go    Sample      `json:"go"`
	Stale StaleResult `json:"stale"`
}

// StaleResult is HttpClient 5's stale check on a closed and on a vanished connection.
type StaleResult struct {
	// ClosedHealthy is false: the check sees the FIN.
	ClosedHealthy bool   `json:"closedHealthy"`
	ClosedReason  string `json:"closedReason,omitempty"`
	// VanishedHealthy is true: there is nothing to see.
	VanishedHealthy bool   `json:"vanishedHealthy"`
	VanishedReason  string `json:"vanishedReason,omitempty"`
	// After is a request on the vanished connection after the check: only the read timeout ends it.
	After Sample `json:"after"`
}

// KeepaliveInput configures the keepalive job: idle pooled connections whose peer vanished.
type KeepaliveInput struct {
	// Idle, Interval and Count are net.KeepAliveConfig's, in whole seconds rounded up.
	Idle     time.Duration `json:"idle"`
	Interval time.Duration `json:"interval"`
	Count    int           `json:"count"`
	// Retries2 is tcp_retries2, for the call without keepalive.
	Retries2       int           `json:"retries2"`
	ConnectTimeout time.Duration `json:"connectTimeout"`
	// NextCall is when the next call starts after the exchange; 0: NextCallAt's default.
	NextCall time.Duration `json:"nextCall"`
}

// DefaultKeepalive is the keepalive row at reduced scale.
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

// NextCallAt is NextCall, or half a second after the expected keepalive give-up.
func (in KeepaliveInput) NextCallAt() time.Duration {
	if in.NextCall > 0 {
		return in.NextCall
	}
	return model.KeepaliveGiveUp(in.Idle, in.Interval, in.Count) + 500*time.Millisecond
}

// KeepaliveResult is what the keepalive job measured.
type KeepaliveResult struct {
	Input KeepaliveInput `json:"input"`
	// Idle, Interval and Count are read back from the socket.
	Idle     time.Duration `json:"idle"`
	Interval time.Duration `json:"interval"`
	Count    int           `json:"count"`
	// Kernel holds the timers: KeepaliveGiveUp(Idle, Interval, Count) is Killed's expected time,
	// DataGiveUp(Retries2) NoKeepalive's wait.
	Kernel model.Kernel `json:"kernel"`
	// Killed is a blocking read on the idle connection from the last byte, ended by keepalive.
	Killed Sample `json:"killed"`
	// NextCall is a GET with keepalive at NextCallAt: it dials, as keepalive dropped the dead
	// connection, and fails at the connect timeout.
	NextCall Sample `json:"nextCall"`
	// NoKeepalive waits on the dead connection until tcp_retries2 gives up; net/http replays it.
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
