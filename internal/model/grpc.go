package model

import (
	"fmt"
	"math"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// This file holds gRPC's deadline rules as grpc-go v1.85.0 applies them (labrun exp-m). gRPC
// has no connect or read timeout of its own: one deadline governs the whole call, retries
// included, and there is none by default. Every rule cites the function of grpc-go it comes
// from.

// GRPCMaxAttempts is grpc-go's cap on a retry policy's maxAttempts: a service config that asks
// for more gets 5 (dialoptions.go defaultMaxCallAttempts, applied in service_config.go
// convertRetryPolicy; WithMaxCallAttempts changes it).
const GRPCMaxAttempts = 5

// GRPCKeepaliveFloor is the shortest client keepalive Time grpc-go accepts: WithKeepaliveParams
// raises anything shorter to it (dialoptions.go WithKeepaliveParams,
// internal.KeepaliveMinPingTime).
const GRPCKeepaliveFloor = 10 * time.Second

// GRPCJitter is grpc-go's backoff jitter: each pause is the computed backoff times a random
// factor in [1-GRPCJitter, 1+GRPCJitter] (stream.go csAttempt.shouldRetry: "0.8 + 0.4 *
// rand.Float64()", the 2024 revision of gRFC A6).
const GRPCJitter = 0.2

// GRPCCall is one unary call and the handler that serves it.
type GRPCCall struct {
	// Deadline is the caller's deadline from the start of the call (0: none, gRPC's default).
	Deadline time.Duration
	// Spent is the time the caller's budget had already lost before this call started (a hop
	// further down a chain that passes its context on): the call has Deadline - Spent left.
	Spent time.Duration
	// Work is the handler's work before it answers; Hang means it never answers.
	Work time.Duration
	Hang bool
	// WatchesContext says the handler returns as soon as its context ends; otherwise it does
	// its work to the end whatever the caller did.
	WatchesContext bool
	// Cap is where the experiment stops waiting for a call that never ends (0: none).
	Cap time.Duration
}

// GRPCPrediction is the model's account of a GRPCCall, in times from the start of the call.
type GRPCPrediction struct {
	// Outcome is OK, Deadline, or Hang (no deadline and a handler that never answers).
	Outcome vocab.Outcome
	// End is when the caller's call ends: the deadline, the work, or Forever.
	End time.Duration
	// Measured is when an experiment sees the call end: End, or Cap for a hang.
	Measured time.Duration
	// Timeout is the budget the call carries on the wire (grpc-timeout), 0 when it sends none.
	Timeout time.Duration
	// ServerDone is when the server's context ends: the deadline, or Forever when it has none
	// (the server's context also ends when the call is answered, which is not counted here).
	ServerDone time.Duration
	// HandlerEnd is when the handler returns: its work, or the end of its context when it
	// watches it; Forever for a hang.
	HandlerEnd time.Duration
	// Executed says the handler did its work to the end: the call is charged, whatever the
	// caller saw.
	Executed bool
}

// GRPCBudget is the budget a call carries at a hop that starts spent into its caller's
// deadline d: d - spent, never below 0; 0 when there is no deadline. A client sends it as
// grpc-timeout, computed when the headers are written (internal/transport/http2_client.go
// createHeaderFields: "timeout := time.Until(dl)"), and the server sets its context's deadline
// from it when the headers arrive (http2_server.go operateHeaders).
func GRPCBudget(d, spent time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return max(d-spent, 0)
}

// PredictGRPC predicts one unary call: it ends at the first of its deadline (left after
// Spent), the handler's answer, and the cap. A handler that ignores its context finishes its
// work after the caller left and is charged; one that watches it returns when its context ends.
// A deadline that has already passed never reaches the handler.
func PredictGRPC(c GRPCCall) GRPCPrediction {
	work := c.Work
	if c.Hang {
		work = Forever
	}
	p := GRPCPrediction{Timeout: GRPCBudget(c.Deadline, c.Spent), ServerDone: Forever}
	if c.Deadline > 0 {
		p.ServerDone = p.Timeout
	}
	switch {
	case c.Deadline > 0 && p.Timeout <= work:
		p.Outcome, p.End = vocab.Deadline, p.Timeout
	case work == Forever:
		p.Outcome, p.End = vocab.Hang, Forever
	default:
		p.Outcome, p.End = vocab.OK, work
	}
	p.Measured = p.End
	if p.End == Forever && c.Cap > 0 {
		p.Measured = c.Cap
	}
	p.HandlerEnd = work
	if c.WatchesContext {
		p.HandlerEnd = min(work, p.ServerDone)
	}
	p.Executed = p.HandlerEnd == work && work != Forever
	if c.Deadline > 0 && p.Timeout == 0 {
		p.HandlerEnd, p.Executed = 0, false // grpc-go fails the call before it sends it
	}
	return p
}

// GRPCServerEnds are the codes a server handler may see when the caller's deadline ends its
// context: the server's own timer (DeadlineExceeded) and the client's RST_STREAM(CANCEL),
// which it turns into Canceled (http2_server.go handleRSTStream), race; whichever arrives
// first wins. A row about the server's context expects either.
func GRPCServerEnds() []string { return []string{"Canceled", "DeadlineExceeded"} }

// GRPCServerEndsReason says why the server's context may end either way.
const GRPCServerEndsReason = "the server's own deadline timer and the client's RST_STREAM(CANCEL) race " +
	"(grpc-go http2_server.go operateHeaders and handleRSTStream): either ends the context first"

// GRPCRetryPolicy is a service config's retryPolicy (gRFC A6), as grpc-go reads it.
type GRPCRetryPolicy struct {
	MaxAttempts    int // the first attempt included; capped at GRPCMaxAttempts
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
	// Pushback is the server's grpc-retry-pushback-ms on every failure (0: none): the pause is
	// then exactly it, without jitter, and the backoff's exponent starts again (stream.go
	// shouldRetry resets numRetriesSincePushback).
	Pushback time.Duration
}

// Attempts is how many attempts the policy allows: MaxAttempts capped at GRPCMaxAttempts.
func (p GRPCRetryPolicy) Attempts() int { return min(max(p.MaxAttempts, 1), GRPCMaxAttempts) }

// Backoff is the pause before retry n (n = 1 for the first retry) as a range: min(initial x
// multiplier^(n-1), max) scaled by the jitter's [0.8, 1.2], or exactly the pushback
// (stream.go csAttempt.shouldRetry). grpc-go truncates the product to whole nanoseconds.
func (p GRPCRetryPolicy) Backoff(n int) (lo, hi time.Duration) {
	if p.Pushback > 0 {
		return p.Pushback, p.Pushback
	}
	cur := math.Min(float64(p.InitialBackoff)*math.Pow(p.Multiplier, float64(n-1)), float64(p.MaxBackoff))
	return time.Duration(cur * (1 - GRPCJitter)), time.Duration(cur * (1 + GRPCJitter))
}

// GRPCRetry is a call under a retry policy against a handler that works Work and then answers
// UNAVAILABLE with no response headers (trailers-only, the only answer grpc-go retries:
// shouldRetry's TrailersOnly check), until attempt OKOn answers OK (0: never).
type GRPCRetry struct {
	Policy GRPCRetryPolicy
	Work   time.Duration
	OKOn   int
	// CallCost is what each attempt takes beyond Work on the machine that runs it (its round
	// trip, the wake-ups of the goroutines that carry it), and PauseCost what each pause takes
	// beyond its backoff (the wake-up of grpc-go's backoff timer). grpc-go adds no time of its
	// own between attempts (stream.go retryLocked: the pause, then a new attempt at once);
	// both are 0 in the ideal, and an experiment gives them as it measured them.
	CallCost, PauseCost time.Duration
}

// GRPCRetryPrediction is the model's account of a GRPCRetry.
type GRPCRetryPrediction struct {
	Outcome vocab.Outcome // OK, or Failed (UNAVAILABLE once the attempts are used up)
	// Executions counts the attempts the server ran: every one, since each did its work
	// before it answered.
	Executions int
	// Min and Max bound when the call ends: the attempts' work plus the pauses' jitter range.
	Min, Max time.Duration
}

// Mid is the middle of the range, the expected time of a row that states the range.
func (p GRPCRetryPrediction) Mid() time.Duration { return (p.Min + p.Max) / 2 }

// Predict follows the attempts: each works Work (plus CallCost), then pauses Backoff(n) (plus
// PauseCost) before the next.
func (r GRPCRetry) Predict() GRPCRetryPrediction {
	n := r.Policy.Attempts()
	p := GRPCRetryPrediction{Outcome: vocab.Failed, Executions: n}
	if r.OKOn > 0 && r.OKOn <= n {
		p.Outcome, p.Executions = vocab.OK, r.OKOn
	}
	p.Min = time.Duration(p.Executions) * (r.Work + r.CallCost)
	p.Max = p.Min
	for i := 1; i < p.Executions; i++ {
		lo, hi := r.Policy.Backoff(i)
		p.Min += lo + r.PauseCost
		p.Max += hi + r.PauseCost
	}
	return p
}

// GRPCTransparent is the model of gRPC's transparent retry (gRFC A6): a stream the server
// never processed (refused with RST_STREAM(REFUSED_STREAM), or beyond a GOAWAY's last stream
// id) is sent again at once, whatever the retry policy says, even WithDisableRetry, and it is
// not counted as an attempt. grpc-go does it once per call: only while the first attempt is
// in progress (stream.go csAttempt.shouldRetry, "cs.firstAttempt && unprocessed";
// http2_client.go handleRSTStream and handleGoAway mark the stream unprocessed). refused is
// how many of the call's streams in a row the server refuses; the call gets streams streams,
// the server executes it executions times, and it fails (vocab.Failed) when the retry was
// refused too.
func GRPCTransparent(refused int) (streams, executions int, outcome vocab.Outcome) {
	switch {
	case refused <= 0:
		return 1, 1, vocab.OK
	case refused == 1:
		return 2, 1, vocab.OK
	}
	return 2, 0, vocab.Failed
}

// GRPCWaves predicts calls calls started at once on one connection whose server allows
// streamLimit concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS), each served in work: the
// pool rule of exp-b with the pool = the stream limit (Simulate), one connection for all.
// grpc-go's client queues a stream until one ends (http2_client.go NewStream waits on
// streamQuota). It returns the predictions in call order.
func GRPCWaves(calls, streamLimit int, work, deadline time.Duration) []Prediction {
	return Simulate(Scenario{
		Calls: calls, Pool: streamLimit, Idle: streamLimit,
		Downstream: Downstream{Delay: work},
		Limits:     Limits{Rules: rules.GoNet(), Deadline: deadline},
	})
}

// GRPCKeepaliveNotice is when a grpc-go client with keepalive Time t and Timeout to notices a
// peer that stopped answering: the first ping goes after max(t, GRPCKeepaliveFloor) without a
// frame read, and the connection closes to after it without an answer
// (http2_client.go keepalive). Without keepalive (t 0) it never does.
func GRPCKeepaliveNotice(t, to time.Duration) time.Duration {
	if t <= 0 {
		return Forever
	}
	return max(t, GRPCKeepaliveFloor) + to
}

// GRPCTimeoutText is grpc-timeout's value as grpc-go writes it: the smallest unit in which the
// budget fits 8 digits, rounded up (internal/grpcutil/encode_duration.go EncodeDuration). A
// budget of 0 or less is not sent: grpc-go fails the call first.
func GRPCTimeoutText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	const maxValue = 1e8 - 1
	units := []struct {
		d time.Duration
		u string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}}
	for _, u := range units {
		if v := ceilDur(d, u.d); v <= maxValue {
			return fmt.Sprintf("%d%s", v, u.u)
		}
	}
	return fmt.Sprintf("%dH", ceilDur(d, time.Hour))
}

func ceilDur(d, unit time.Duration) int64 {
	v := int64(d / unit)
	if d%unit > 0 {
		v++
	}
	return v
}

// GRPCStreamMessages is how many messages a server stream that sends one every every, after
// work, delivers before the caller's deadline d (0: none, which with messages left to send
// is every one of them): a deadline covers the whole call, with no timer per message
// (stream.go newClientStreamWithParams sets one context for the call).
func GRPCStreamMessages(work, every, d time.Duration, messages int) int {
	if d <= 0 {
		return messages
	}
	n := 0
	for k := 1; (messages == 0 || k <= messages) && work+time.Duration(k)*every < d; k++ {
		n++
	}
	return n
}

// GRPCTransparentConns is the connections a call whose first stream was turned away takes:
// a refused stream is sent again on the same connection; one beyond a GOAWAY's last stream
// id on a new one, since the connection takes no new streams after it (http2_client.go
// handleGoAway).
func GRPCTransparentConns(goAway bool) int {
	if goAway {
		return 2
	}
	return 1
}

// GRPCChannelConns is the connections calls calls take through one grpc-go channel to one
// address: one, whatever they do. A call that times out resets its stream (RST_STREAM CANCEL)
// and leaves the connection up (http2_client.go closeStream), where HTTP/1.1 must close it
// (StormConns); a call beyond the server's stream limit waits for a stream to end rather than
// dial (http2_client.go NewStream waits on streamQuota).
func GRPCChannelConns(calls int) int { return min(calls, 1) }
