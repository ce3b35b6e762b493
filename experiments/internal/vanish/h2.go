package vanish

import (
	"context"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
)

// JobHTTP2 is the name of the HTTP/2 job, as Jobs() lists it.
const JobHTTP2 = "vanish.http2"

// HTTP2Input configures the HTTP/2 job: calls through Go's net/http over HTTP/2 (h2c, prior
// knowledge) on pooled connections whose peer vanished after one exchange each.
type HTTP2Input struct {
	// Retries2 is the namespace's tcp_retries2, 0..MaxRetries2: it ends the call that has no
	// health check and no deadline.
	Retries2 int `json:"retries2"`
	// SendPingTimeout and PingTimeout are the health check's http.HTTP2Config fields: a PING
	// after SendPingTimeout without a frame read, and the connection closed when no answer
	// came PingTimeout later.
	SendPingTimeout time.Duration `json:"sendPingTimeout"`
	PingTimeout     time.Duration `json:"pingTimeout"`
	// Inactivity is how long the connections sit idle after their exchange before the calls
	// start: below SendPingTimeout, so that the calls go out before the health check.
	Inactivity time.Duration `json:"inactivity"`
	// Deadline is the whole-call deadline (a context deadline) of the call that has it.
	Deadline time.Duration `json:"deadline"`
}

// DefaultHTTP2 is the HTTP/2 row at reduced scale: a PING after 1 s without a frame, 500 ms
// to answer it, calls after 300 ms idle, tcp_retries2 2 for the call that waits for the
// kernel, a deadline of 1 s.
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
	// Idle is how long the connection had read nothing when the call started: from the end
	// of its previous response, the last frame it read.
	Idle time.Duration `json:"idle"`
	// PingLost means net/http closed the connection because its health check's PING went
	// unanswered ("http2: client connection lost", closeForLostPing in h2_bundle.go).
	PingLost bool `json:"pingLost,omitempty"`
	// HTTP2 means the call's connection spoke HTTP/2: its first exchange did.
	HTTP2 bool `json:"http2"`
}

// HTTP2Result is what the HTTP/2 job measured.
type HTTP2Result struct {
	Input HTTP2Input `json:"input"`
	// Kernel holds the connections' timers: Kernel.DataGiveUp(Retries2) is the expected
	// Kernel.Elapsed.
	Kernel model.Kernel `json:"kernel"`
	// Ping is a call through a Transport with the health check (HTTP2Config.SendPingTimeout
	// and PingTimeout), no deadline: it fails when the check closes the connection, at
	// model.HTTP2PingGiveUp after the last frame read.
	Ping HTTP2Sample `json:"ping"`
	// KernelCall is the same call with no health check: it fails when tcp_retries2 gives up.
	KernelCall HTTP2Sample `json:"kernelCall"`
	// Deadline is the call with no health check and the deadline.
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

// pingLost is the text of the error net/http's HTTP/2 Transport gives the calls on a
// connection its health check closed (closeForLostPing in h2_bundle.go). net/http exports no
// value to match, so the text is all there is.
const pingLost = "http2: client connection lost"
