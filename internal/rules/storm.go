package rules

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// A RetryPolicy is how a caller of a downstream retries a failed attempt (a timeout, an error
// answer) and what bounds its retries across calls: the business retry, back-off with
// jitter, a retry budget, gRPC's retry throttling, the AWS SDKs' retry quota, a circuit
// breaker in front of the retries, layers of retries. The storm model (model.Storm) and exp-n
// read it; nobody compares Name.
type RetryPolicy struct {
	// Name and Source name the policy and where its figures are read from, for text only.
	Name, Source string
	// Attempts is each call's attempts per layer, the first included (1: no retry); Layers is
	// how many retry layers stack (0 or 1: one), each retrying the whole of the one below.
	Attempts, Layers int
	Backoff          StormBackoff
	Budget           *RetryBudget
	Throttle         *RetryThrottle
	Quota            *RetryQuota
	Breaker          *BreakerRule
}

// StormBackoff is the wait before a retry: retry k (1 for the first) waits
// Jitter(u) x min(Base x Multiplier^(k-1), Cap), u uniform in [0, 1). A zero Base retries at
// once.
type StormBackoff struct {
	Base, Cap  time.Duration
	Multiplier float64
	Jitter     Jitter
}

// Jitter is how a uniform u in [0, 1) scales a back-off.
type Jitter int

// The jitters.
const (
	// NoJitter waits the whole back-off.
	NoJitter Jitter = iota
	// FullJitter waits u x the back-off (the AWS SDKs).
	FullJitter
	// GRPCJitter waits (0.8 + 0.4u) x the back-off (grpc-go stream.go shouldRetry).
	GRPCJitter
)

// Delay is the wait before retry k (1 for the first) for a uniform u in [0, 1).
func (b StormBackoff) Delay(k int, u float64) time.Duration {
	if b.Base <= 0 || k < 1 {
		return 0
	}
	m := b.Multiplier
	if m == 0 {
		m = 2
	}
	d := float64(b.Base) * math.Pow(m, float64(k-1))
	if b.Cap > 0 {
		d = min(d, float64(b.Cap))
	}
	switch b.Jitter {
	case FullJitter:
		d *= u
	case GRPCJitter:
		d *= 0.8 + 0.4*u
	}
	return time.Duration(d)
}

// RetryBudget bounds retries to a share of the calls (Finagle's RetryBudget, Linkerd's
// retryBudget, Envoy's retry_budget): a retry is sent when the retries of the last Window,
// with it, stay within Ratio x the calls of the last Window plus MinPerSecond x Window.
type RetryBudget struct {
	Ratio        float64
	MinPerSecond float64
	Window       time.Duration
}

// Allows reports whether a retry may go, given the calls and the retries of the last Window.
func (b RetryBudget) Allows(calls, retries int) bool {
	return float64(retries+1) <= b.Ratio*float64(calls)+b.MinPerSecond*b.Window.Seconds()
}

// RetryThrottle is gRPC's retryThrottling (gRFC A6) as grpc-go v1.85.0 applies it
// (clientconn.go retryThrottler, stream.go shouldRetry): the count starts at MaxTokens; an
// attempt that fails with a retryable status takes 1 (not below 0) before the attempts are
// counted, and no retry is sent while the count is then at or below MaxTokens/2; a call
// that succeeds adds TokenRatio, up to MaxTokens. The arithmetic is float64, in that order.
type RetryThrottle struct {
	MaxTokens, TokenRatio float64
}

// Fail takes a token for a failed attempt and reports whether a retry is still allowed.
func (t RetryThrottle) Fail(tokens *float64) bool {
	*tokens--
	if *tokens < 0 {
		*tokens = 0
	}
	return *tokens > t.MaxTokens/2
}

// Succeed adds a successful call's share.
func (t RetryThrottle) Succeed(tokens *float64) {
	*tokens += t.TokenRatio
	if *tokens > t.MaxTokens {
		*tokens = t.MaxTokens
	}
}

// RetryQuota is the AWS SDKs' retry quota as aws-sdk-go-v2 v1.48.0 applies it
// (aws/retry/standard.go GetRetryToken, GetInitialToken; aws/retry/middleware.go
// handleAttempt; aws/ratelimit/token_bucket.go): Tokens to start with and at most; a retry
// takes RetryCost and is not sent when fewer remain (the call fails); a retry that succeeds
// refunds its cost; a call that succeeds at its first attempt adds NoRetryIncrement.
type RetryQuota struct {
	Tokens, RetryCost, NoRetryIncrement int
}

// BreakerRule is a circuit breaker in front of every attempt (gobreaker v2.4.0's Settings):
// Trip failures in a row open it for Open; then HalfOpenMax attempts go, and as many
// successes close it while a failure opens it again. An attempt it refuses ends the call.
type BreakerRule struct {
	Trip        int
	Open        time.Duration
	HalfOpenMax int
}

// TotalAttempts is how many attempts a call makes at most: Attempts per layer, multiplied
// over the layers.
func (p RetryPolicy) TotalAttempts() int {
	n := max(p.Attempts, 1)
	for range max(p.Layers, 1) - 1 {
		n *= max(p.Attempts, 1)
	}
	return n
}

// NoRetry sends every call once.
func NoRetry() RetryPolicy {
	return RetryPolicy{Name: "no retry", Attempts: 1}
}

// ImmediateRetry is the business retry: n retries sent at once after a failure.
func ImmediateRetry(n int) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d immediate retries", n), Attempts: n + 1}
}

// JitteredBackoff is exponential back-off with full jitter, n retries from base, doubled,
// capped at 20 s (the AWS Architecture Blog's "Exponential Backoff And Jitter", 2015).
func JitteredBackoff(n int, base time.Duration) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d retries, back-off %v with full jitter", n, base), Attempts: n + 1,
		Backoff: StormBackoff{Base: base, Cap: 20 * time.Second, Jitter: FullJitter}}
}

// Budget is labrun's retry budget: n immediate retries, at most ratio of the calls over a
// 10 s window plus minPerSecond. Finagle's RetryBudget defaults to 20% and 10 retries/s over
// 10 s (finagle-core com.twitter.finagle.service.RetryBudget); Envoy's retry_budget to 20%
// of active requests with 3 retries at least (envoy.config.cluster.v3.CircuitBreakers).
func Budget(n int, ratio, minPerSecond float64) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d immediate retries, budget %g%%", n, ratio*100), Attempts: n + 1,
		Budget: &RetryBudget{Ratio: ratio, MinPerSecond: minPerSecond, Window: 10 * time.Second},
		Source: "Finagle RetryBudget, Envoy retry_budget"}
}

// GRPCThrottled is grpc-go v1.85.0's retry (a service config's retryPolicy: maxAttempts,
// initialBackoff, maxBackoff, backoffMultiplier, jitter 0.8 to 1.2) under its retryThrottling
// (maxTokens, tokenRatio).
func GRPCThrottled(attempts int, initial, maxBackoff time.Duration, multiplier, maxTokens, tokenRatio float64) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("grpc-go retryThrottling %g/%g", maxTokens, tokenRatio), Attempts: attempts,
		Backoff:  StormBackoff{Base: initial, Cap: maxBackoff, Multiplier: multiplier, Jitter: GRPCJitter},
		Throttle: &RetryThrottle{MaxTokens: maxTokens, TokenRatio: tokenRatio},
		Source:   "grpc-go v1.85.0 clientconn.go retryThrottler, stream.go shouldRetry"}
}

// AWSStandard is aws-sdk-go-v2 v1.48.0's standard retryer: 3 attempts (DefaultMaxAttempts),
// a quota of 500 tokens (DefaultRetryRateTokens), 14 per retry, timeouts included
// (defaultRetryCost), 1 back per call that succeeds at once (DefaultNoRetryIncrement), and
// the back-off b x min(50 ms x 2^(k-1), 20 s) (retry/jitter_backoff.go backoffDelay2026,
// BaseDelay 50 ms, DefaultMaxBackoff 20 s). Older releases cost 5 a retry and 10 a timeout.
func AWSStandard() RetryPolicy {
	return RetryPolicy{Name: "aws-sdk-go-v2 standard", Attempts: 3,
		Backoff: StormBackoff{Base: 50 * time.Millisecond, Cap: 20 * time.Second, Jitter: FullJitter},
		Quota:   &RetryQuota{Tokens: 500, RetryCost: 14, NoRetryIncrement: 1},
		Source:  "aws-sdk-go-v2 v1.48.0 aws/retry/standard.go, aws/ratelimit/token_bucket.go"}
}

// BreakerFirst is the business retry (n at once) behind a circuit breaker on every attempt.
func BreakerFirst(n int, b BreakerRule) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d immediate retries behind a breaker", n), Attempts: n + 1, Breaker: &b,
		Source: "github.com/sony/gobreaker/v2 v2.4.0"}
}

// Layered is layers of retries, each of attempts at once: a client's re-send under a
// business retry under a gateway's retry.
func Layered(layers, attempts int) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d layers of %d attempts", layers, attempts), Attempts: attempts, Layers: layers}
}

// StormPolicyNames are the names StormPolicy knows, in order.
func StormPolicyNames() []string {
	names := make([]string, len(stormPolicies))
	for i, e := range stormPolicies {
		names[i] = e.name
	}
	return names
}

// stormPolicies is the table behind StormPolicy: a policy's name and how it is built from the
// retries a call makes, the budget's ratio and the breaker's open time.
var stormPolicies = []struct {
	name string
	// retries says the policy takes the call's retries (at least 1).
	retries bool
	build   func(retries int, ratio float64, open time.Duration) RetryPolicy
}{
	{"none", false, func(int, float64, time.Duration) RetryPolicy { return NoRetry() }},
	{"retry", true, func(n int, _ float64, _ time.Duration) RetryPolicy { return ImmediateRetry(n) }},
	{"backoff", true, func(n int, _ float64, _ time.Duration) RetryPolicy { return JitteredBackoff(n, 100*time.Millisecond) }},
	{"budget", true, func(n int, ratio float64, _ time.Duration) RetryPolicy { return Budget(n, ratio, 10) }},
	{"grpc", false, func(int, float64, time.Duration) RetryPolicy {
		// gRFC A6's example service config: maxAttempts 3, backoff 0.1 s to 1 s x 2, maxTokens
		// 10, tokenRatio 0.1.
		return GRPCThrottled(3, 100*time.Millisecond, time.Second, 2, 10, 0.1)
	}},
	{"aws-standard", false, func(int, float64, time.Duration) RetryPolicy { return AWSStandard() }},
	{"breaker", true, func(n int, _ float64, open time.Duration) RetryPolicy {
		return BreakerFirst(n, BreakerRule{Trip: 10, Open: open, HalfOpenMax: 1})
	}},
	{"layers", true, func(n int, _ float64, _ time.Duration) RetryPolicy { return Layered(3, n+1) }},
}

// StormPolicy returns the policy called name with retries retries a call (where the policy
// takes them), a budget of ratio and a breaker open for open. An unknown name, or a policy
// that takes retries given none, is an error naming the flag.
func StormPolicy(name string, retries int, ratio float64, open time.Duration) (RetryPolicy, error) {
	for _, e := range stormPolicies {
		switch {
		case e.name != name:
		case e.retries && retries < 1:
			return RetryPolicy{}, fmt.Errorf("--policy %s retries: give --retries of at least 1", name)
		default:
			return e.build(retries, ratio, open), nil
		}
	}
	return RetryPolicy{}, fmt.Errorf("--policy: unknown policy %q (want %s)", name, strings.Join(StormPolicyNames(), ", "))
}
