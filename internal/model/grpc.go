package model

import (
	"fmt"
	"math"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// gRPC's deadline rules as grpc-go v1.85.0 applies them (exp-m): one deadline, none by default,
// covers the whole call, retries included.

// GRPCMaxAttempts caps a retry policy's maxAttempts (dialoptions.go defaultMaxCallAttempts).
const GRPCMaxAttempts = 5

// GRPCKeepaliveFloor is the shortest keepalive Time grpc-go accepts (WithKeepaliveParams).
const GRPCKeepaliveFloor = 10 * time.Second

// GRPCJitter is grpc-go's jitter: each pause is the backoff times a factor in
// [1-GRPCJitter, 1+GRPCJitter] (stream.go shouldRetry).
const GRPCJitter = 0.2

// GRPCCall is one unary call and the handler that serves it.
type GRPCCall struct {
	// Deadline is the caller's deadline from the start of the call (0: none, gRPC's default).
	Deadline time.Duration
	// Spent is what the caller's budget lost before this call.
	Spent time.Duration
	// Work is the handler's work; Hang means it never answers.
	Work time.Duration
	Hang bool
	// WatchesContext says the handler returns as soon as its context ends.
	WatchesContext bool
	// Cap is where the experiment stops waiting (0: none).
	Cap time.Duration
}

// GRPCPrediction is the model's account of a GRPCCall, in times from the start of the call.
type GRPCPrediction struct {
	Outcome vocab.Outcome
	// End is when the caller's call ends.
	End time.Duration
	// Measured is when an experiment sees it end: End, or Cap for a hang.
	Measured time.Duration
	// Timeout is the grpc-timeout sent, 0 for none.
	Timeout time.Duration
	// ServerDone is when the server's context ends by its deadline.
	ServerDone time.Duration
	HandlerEnd time.Duration
	// Executed says the handler did its work to the end: the call is charged.
	Executed bool
}

// GRPCBudget is the budget a call carries at a hop that starts spent into its caller's deadline
// d: d - spent, at least 0; 0 without a deadline.
func GRPCBudget(d, spent time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return max(d-spent, 0)
}

// PredictGRPC predicts one unary call, ended by the first of its deadline (less Spent), the
// answer and the cap. A handler that ignores its context works on after the caller left.
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
		p.HandlerEnd, p.Executed = 0, false
	}
	return p
}

// GRPCServerEnds are the codes a handler may see when the deadline ends its context: the
// server's timer (DeadlineExceeded) and the client's RST_STREAM (Canceled) race.
func GRPCServerEnds() []string { return []string{"Canceled", "DeadlineExceeded"} }

// GRPCServerEndsReason says why the server's context may end either way.
const GRPCServerEndsReason = "the server's own deadline timer and the client's RST_STREAM(CANCEL) race " +
	"(grpc-go http2_server.go operateHeaders and handleRSTStream): either ends the context first"

// GRPCTimedOutStreamEnds are the ways a timed-out unary call's stream ends, the connection left
// up: the client's or the server's RST_STREAM, or rarely the handler's trailers first.
func GRPCTimedOutStreamEnds() []string {
	return []string{"RST_STREAM from the client", "RST_STREAM from the server", "the server's DeadlineExceeded trailers"}
}

// GRPCRetryPolicy is a service config's retryPolicy (gRFC A6), as grpc-go reads it.
type GRPCRetryPolicy struct {
	MaxAttempts    int // the first included; capped at GRPCMaxAttempts
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
	// Pushback is the server's grpc-retry-pushback-ms (0: none): the pause is exactly it and the
	// exponent restarts.
	Pushback time.Duration
}

func (p GRPCRetryPolicy) Attempts() int { return min(max(p.MaxAttempts, 1), GRPCMaxAttempts) }

// Backoff is the pause before retry n (from 1) as a range: min(initial x multiplier^(n-1), max)
// times the jitter, or the pushback.
func (p GRPCRetryPolicy) Backoff(n int) (lo, hi time.Duration) {
	if p.Pushback > 0 {
		return p.Pushback, p.Pushback
	}
	cur := math.Min(float64(p.InitialBackoff)*math.Pow(p.Multiplier, float64(n-1)), float64(p.MaxBackoff))
	return time.Duration(cur * (1 - GRPCJitter)), time.Duration(cur * (1 + GRPCJitter))
}

// GRPCRetry is a call under a retry policy against a handler that works Work and answers
// UNAVAILABLE trailers-only (which grpc-go retries) until attempt OKOn (0: never).
type GRPCRetry struct {
	Policy GRPCRetryPolicy
	Work   time.Duration
	OKOn   int
	// CallCost and PauseCost are what an attempt and a pause take beyond Work and the backoff
	// on the machine (0 in the ideal).
	CallCost, PauseCost time.Duration
}

// GRPCRetryPrediction is the model's account of a GRPCRetry.
type GRPCRetryPrediction struct {
	Outcome    vocab.Outcome // OK, or Failed once the attempts are used up
	Executions int
	// Min and Max bound when the call ends.
	Min, Max time.Duration
}

// Mid is the middle of the range.
func (p GRPCRetryPrediction) Mid() time.Duration { return (p.Min + p.Max) / 2 }

// Predict follows the attempts: Work (plus CallCost), then Backoff(n) (plus PauseCost).
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

// GRPCTransparent is gRPC's transparent retry (gRFC A6): a stream the server never processed
// is sent again at once, uncounted, even with retries off, during the first attempt only.
// refused is how many streams in a row the server refuses.
func GRPCTransparent(refused int) (streams, executions int, outcome vocab.Outcome) {
	switch {
	case refused <= 0:
		return 1, 1, vocab.OK
	case refused == 1:
		return 2, 1, vocab.OK
	}
	return 2, 0, vocab.Failed
}

// GRPCWaves predicts calls started at once on one connection allowing streamLimit streams, each
// served in work, as a pool of streamLimit (grpc-go queues on streamQuota); in call order.
func GRPCWaves(calls, streamLimit int, work, deadline time.Duration) []Prediction {
	return Simulate(Scenario{
		Calls: calls, Pool: streamLimit, Idle: streamLimit,
		Downstream: Downstream{Delay: work},
		Limits:     Limits{Rules: rules.GoNet(), Deadline: deadline},
	})
}

// GRPCKeepaliveNotice is when a grpc-go client with keepalive t and timeout to notices a silent
// peer: max(t, GRPCKeepaliveFloor) + to; never for t 0.
func GRPCKeepaliveNotice(t, to time.Duration) time.Duration {
	if t <= 0 {
		return Forever
	}
	return max(t, GRPCKeepaliveFloor) + to
}

// GRPCTimeoutText is grpc-timeout's value as grpc-go writes it (EncodeDuration); a budget of 0
// or less is not sent.
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

// GRPCStreamMessages is how many messages a server stream sending one every every after work
// delivers before the deadline d (0: none).
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

// GRPCTransparentConns is the connections a call whose first stream was turned away takes: one
// for a refusal, two for a GOAWAY.
func GRPCTransparentConns(goAway bool) int {
	if goAway {
		return 2
	}
	return 1
}

// GRPCChannelConns is the connections calls take through one channel to one address: one, as a
// timed-out call resets only its stream.
func GRPCChannelConns(calls int) int { return min(calls, 1) }
