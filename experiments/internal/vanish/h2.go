package vanish

import (
	"context"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
)

// JobHTTP2 is the HTTP/2 job's name.
const JobHTTP2 = "vanish.http2"

// HTTP2Input configures the HTTP/2 job: net/http over h2c on pooled connections whose peer
// vanished after one exchange each.
type HTTP2Input struct {
	// Retries2 is tcp_retries2, 0..MaxRetries2: it ends the call with no health check or deadline.
	Retries2 int `json:"retries2"`
	// SendPingTimeout and PingTimeout are http.HTTP2Config's health check.
	SendPingTimeout time.Duration `json:"sendPingTimeout"`
	PingTimeout     time.Duration `json:"pingTimeout"`
	// Inactivity is the idle time before the calls, below SendPingTimeout.
	Inactivity time.Duration `json:"inactivity"`
	Deadline   time.Duration `json:"deadline"`
}

// DefaultHTTP2 is the HTTP/2 row at reduced scale.
func DefaultHTTP2() HTTP2Input {
	return HTTP2Input{Retries2: 2, SendPingTimeout: time.Second, PingTimeout: 500 * time.Millisecond,
		Inactivity: 300 * time.Millisecond, Deadline: time.Second}
}

// Check reports an input that makes no sense.
func (in HTTP2Input) Check() error {
	switch {
	case in.Retries2 < 0 || in.Retries2 > MaxRetries2:
		return fmt.Errorf("vanish: retries2 must be in 0..%d, got %d", MaxRetries2, in.Retries2)
	case in.SendPingTimeout <= 0 || in.PingTimeout <= 0 || in.Deadline <= 0:
		return fmt.Errorf("vanish: send ping timeout, ping timeout and deadline must be positive, got %v, %v, %v",
			in.SendPingTimeout, in.PingTimeout, in.Deadline)
	case in.Inactivity >= in.SendPingTimeout:
		return fmt.Errorf("vanish: inactivity (%v) must be shorter than the send ping timeout (%v): the call must go out before the health check",
			in.Inactivity, in.SendPingTimeout)
	}
	return checkWaits(map[string]time.Duration{"send ping timeout": in.SendPingTimeout,
		"ping timeout": in.PingTimeout, "inactivity": in.Inactivity, "deadline": in.Deadline})
}

// HTTP2Sample is one HTTP/2 call on a pooled connection whose peer vanished.
type HTTP2Sample struct {
	Sample
	// Idle is how long the connection had read nothing when the call started.
	Idle time.Duration `json:"idle"`
	// PingLost: the health check closed the connection (closeForLostPing, h2_bundle.go).
	PingLost bool `json:"pingLost,omitempty"`
	HTTP2    bool `json:"http2"`
}

// HTTP2Result is what the HTTP/2 job measured.
type HTTP2Result struct {
	Input HTTP2Input `json:"input"`
	// Kernel holds the timers; Kernel.DataGiveUp(Retries2) is KernelCall's expected time.
	Kernel model.Kernel `json:"kernel"`
	// Ping has the health check and no deadline: it fails at model.HTTP2PingGiveUp.
	Ping HTTP2Sample `json:"ping"`
	// KernelCall has neither: tcp_retries2 ends it.
	KernelCall HTTP2Sample `json:"kernelCall"`
	// Deadline has the deadline only.
	Deadline HTTP2Sample `json:"deadline"`
}

// HTTP2 runs the HTTP/2 job in a namespace child.
func HTTP2(ctx context.Context, in HTTP2Input) (HTTP2Result, error) {
	var out HTTP2Result
	if err := in.Check(); err != nil {
		return out, err
	}
	return out, netns.Run(ctx, JobHTTP2, in, &out)
}

// pingLost is net/http's error text for a connection the health check closed
// (closeForLostPing, h2_bundle.go); no exported value matches it.
const pingLost = "http2: client connection lost"
