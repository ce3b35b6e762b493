package model

import (
	"fmt"
	"math"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// gRPC (grpc-go v1.85.0): one deadline, none by default, covers the whole call and its retries.

// GRPCMaxAttempts caps maxAttempts (dialoptions.go).
const GRPCMaxAttempts = 5

// GRPCKeepaliveFloor is the shortest keepalive Time accepted.
const GRPCKeepaliveFloor = 10 * time.Second

// GRPCJitter scales each pause by [1-j, 1+j] (stream.go shouldRetry).
const GRPCJitter = 0.2

// GRPCCall is one unary call and its handler.
type GRPCCall struct {
	// Deadline: 0 is none, gRPC's default.
	Deadline time.Duration
	// Spent is the budget used before.
	Spent time.Duration
	// Work is the handler's; Hang never answers.
	Work           time.Duration
	Hang           bool
	WatchesContext bool
	// Cap ends an experiment's wait (0: none).
	Cap time.Duration
	// Rules are the library's (zero: grpc-go's): how it writes grpc-timeout.
	Rules rules.GRPC
}

// GRPCPrediction accounts for a GRPCCall, from its start.
type GRPCPrediction struct {
	Outcome vocab.Outcome
	End     time.Duration
	// Measured is End, or Cap for a hang.
	Measured time.Duration
	// Timeout is the grpc-timeout sent (0: none), as Rules.SentMax tells it at each hop.
	Timeout time.Duration
	// ServerDone: the server's context ends by its deadline.
	ServerDone time.Duration
	HandlerEnd time.Duration
	// Executed: the handler finished; the call is charged.
	Executed bool
}

// GRPCBudget is max(d - spent, 0), or 0 without a deadline.
func GRPCBudget(d, spent time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return max(d-spent, 0)
}

// PredictGRPC predicts one unary call.
func PredictGRPC(c GRPCCall) GRPCPrediction {
	work := c.Work
	if c.Hang {
		work = Forever
	}
	budget := GRPCBudget(c.Deadline, c.Spent)
	p := GRPCPrediction{Timeout: c.Rules.SentMax(budget), ServerDone: Forever}
	if c.Spent > 0 {
		p.Timeout = c.Rules.SentMax(GRPCBudget(c.Rules.SentMax(c.Deadline), c.Spent))
	}
	if c.Deadline > 0 {
		p.ServerDone = p.Timeout
	}
	switch {
	case c.Deadline > 0 && min(budget, p.Timeout) <= work:
		p.Outcome, p.End = vocab.Deadline, min(budget, p.Timeout)
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

// GRPCServerEnds are the codes a handler may see at the deadline.
func GRPCServerEnds() []string { return []string{"Canceled", "DeadlineExceeded"} }

// GRPCServerEndsReason says why there are two.
const GRPCServerEndsReason = "the server's own deadline timer and the client's RST_STREAM(CANCEL) race " +
	"(grpc-go http2_server.go operateHeaders and handleRSTStream): either ends the context first"

// GRPCRetryPolicy is a service config's retryPolicy (gRFC A6), as grpc-go reads it.
type GRPCRetryPolicy struct {
	MaxAttempts    int // first included; capped
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
	// Pushback (grpc-retry-pushback-ms) is the pause exactly; the exponent restarts.
	Pushback time.Duration
}

func (p GRPCRetryPolicy) Attempts() int { return min(max(p.MaxAttempts, 1), GRPCMaxAttempts) }

// Backoff is the pause range before retry n (from 1), or the pushback.
func (p GRPCRetryPolicy) Backoff(n int) (lo, hi time.Duration) {
	if p.Pushback > 0 {
		return p.Pushback, p.Pushback
	}
	cur := math.Min(float64(p.InitialBackoff)*math.Pow(p.Multiplier, float64(n-1)), float64(p.MaxBackoff))
	return time.Duration(cur * (1 - GRPCJitter)), time.Duration(cur * (1 + GRPCJitter))
}

// GRPCRetry is a retried call; the handler answers UNAVAILABLE until attempt OKOn (0: never).
type GRPCRetry struct {
	Policy GRPCRetryPolicy
	Work   time.Duration
	OKOn   int
	// CallCost and PauseCost are the machine's extra (0 ideal).
	CallCost, PauseCost time.Duration
}

// GRPCRetryPrediction accounts for a GRPCRetry.
type GRPCRetryPrediction struct {
	Outcome    vocab.Outcome // or Failed
	Executions int
	// Min and Max bound the end.
	Min, Max time.Duration
}

// Mid is the range's middle.
func (p GRPCRetryPrediction) Mid() time.Duration { return (p.Min + p.Max) / 2 }

// Predict follows the attempts and pauses.
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

// GRPCTransparent is gRPC's transparent retry (gRFC A6): a stream refused unprocessed is re-sent
// once, uncounted; refused counts refusals in a row. Under r.RefusedIsAttempt each is an attempt
// of the policy of maxAttempts attempts.
func GRPCTransparent(r rules.GRPC, refused, attempts int) (streams, executions int, outcome vocab.Outcome) {
	if r.RefusedIsAttempt && refused > 0 {
		if n := min(max(attempts, 1), GRPCMaxAttempts); refused < n {
			return refused + 1, 1, vocab.OK
		}
		return min(max(attempts, 1), GRPCMaxAttempts), 0, vocab.Failed
	}
	switch {
	case refused <= 0:
		return 1, 1, vocab.OK
	case refused == 1:
		return 2, 1, vocab.OK
	}
	return 2, 0, vocab.Failed
}

// GRPCRefusedUnavailable counts a call whose first stream is refused and whose every attempt
// then answers UNAVAILABLE, under a policy of maxAttempts attempts: the streams and executions.
func GRPCRefusedUnavailable(r rules.GRPC, attempts int) (streams, executions int) {
	n := min(max(attempts, 1), GRPCMaxAttempts)
	if r.RefusedIsAttempt {
		return n, n - 1
	}
	return n + 1, n
}

// GRPCWaves predicts calls started together on one connection, as a pool of streamLimit.
func GRPCWaves(calls, streamLimit int, work, deadline time.Duration) []Prediction {
	return Simulate(Scenario{
		Calls: calls, Pool: streamLimit, Idle: streamLimit,
		Downstream: Downstream{Delay: work},
		Limits:     Limits{Rules: rules.GoNet(), Deadline: deadline},
	})
}

// GRPCKeepaliveNotice is when a client notices a silent peer; Forever for t 0.
func GRPCKeepaliveNotice(t, to time.Duration) time.Duration {
	if t <= 0 {
		return Forever
	}
	return max(t, GRPCKeepaliveFloor) + to
}

// GRPCTimeoutText is grpc-timeout's value (EncodeDuration); "" for d <= 0.
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

// GRPCTimeoutTextFor is grpc-timeout as r writes d, rounded by Sent: "1510m", "1S".
func GRPCTimeoutTextFor(r rules.GRPC, d time.Duration) string {
	if r.Digits <= 0 || d <= 0 {
		return GRPCTimeoutText(d)
	}
	ms := ceilDur(d, time.Millisecond)
	if ms < 1000 || ms%1000 != 0 {
		return fmt.Sprintf("%dm", ms)
	}
	return fmt.Sprintf("%dS", ms/1000)
}

func ceilDur(d, unit time.Duration) int64 {
	v := int64(d / unit)
	if d%unit > 0 {
		v++
	}
	return v
}

// GRPCStreamMessages counts a stream's messages delivered before the deadline d (0: none).
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

// GRPCTransparentConns is 1 after a refused stream, 2 after a GOAWAY.
func GRPCTransparentConns(goAway bool) int {
	if goAway {
		return 2
	}
	return 1
}

// GRPCChannelConns is one: a timed-out call resets only its stream.
func GRPCChannelConns(calls int) int { return min(calls, 1) }
