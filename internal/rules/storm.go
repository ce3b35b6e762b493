package rules

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// A RetryPolicy is how a caller retries and what bounds its retries (model.Storm, exp-n).
type RetryPolicy struct {
	Name, Source     string // for text only
	Attempts, Layers int
	Backoff          StormBackoff
	Budget           *RetryBudget
	Throttle         *RetryThrottle
	Quota            *RetryQuota
	Breaker          *BreakerRule
}

// StormBackoff: retry k (1 first) waits Jitter(u) x min(Base x Multiplier^(k-1), Cap), or
// lo + u(hi-lo) of Layer.Wait(k, Base, Cap).
type StormBackoff struct {
	Base, Cap  time.Duration
	Multiplier float64
	Jitter     Jitter
	Layer      *Backoff
	Pin        Pin
}

// Pin fixes u: Shortest 0, Longest 1.
type Pin int

// Pins.
const (
	Drawn Pin = iota
	Shortest
	Longest
)

// Band: u moves the waits.
func (b StormBackoff) Band() bool {
	if b.Layer != nil {
		return b.Layer.Jitter()
	}
	return b.Base > 0 && b.Jitter != NoJitter
}

// Jitter scales a back-off by u in [0, 1): 1, u, or 0.8 + 0.4u (grpc-go shouldRetry).
type Jitter int

// Jitters.
const (
	NoJitter Jitter = iota
	FullJitter
	GRPCJitter
)

// Delay is the wait before retry k for a draw u.
func (b StormBackoff) Delay(k int, u float64) time.Duration {
	switch b.Pin {
	case Shortest:
		u = 0
	case Longest:
		u = 1
	}
	if b.Layer != nil {
		lo, hi := b.Layer.Wait(k, b.Base, b.Cap)
		return lo + time.Duration(u*float64(hi-lo))
	}
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
	d = min(d, float64(MaxWait))
	switch b.Jitter {
	case FullJitter:
		d *= u
	case GRPCJitter:
		d *= 0.8 + 0.4*u
	}
	return time.Duration(d)
}

// RetryBudget (Finagle's RetryBudget, Envoy's retry_budget): a retry goes when the last
// Window's retries, with it, stay within Ratio x its calls + MinPerSecond x Window.
type RetryBudget struct {
	Ratio        float64
	MinPerSecond float64
	Window       time.Duration
}

// Allows reports whether a retry may go.
func (b RetryBudget) Allows(calls, retries int) bool {
	return float64(retries+1) <= b.Ratio*float64(calls)+b.MinPerSecond*b.Window.Seconds()
}

// RetryThrottle is gRFC A6's retryThrottling as grpc-go applies it (GRPCThrottled's
// Source): a failure takes 1 before the attempts are counted; no retry at or below half.
type RetryThrottle struct {
	MaxTokens, TokenRatio float64
}

// Fail takes a failed attempt's token and reports whether a retry may go.
func (t RetryThrottle) Fail(tokens *float64) bool {
	*tokens--
	if *tokens < 0 {
		*tokens = 0
	}
	return *tokens > t.MaxTokens/2
}

// Succeed adds TokenRatio.
func (t RetryThrottle) Succeed(tokens *float64) {
	*tokens += t.TokenRatio
	if *tokens > t.MaxTokens {
		*tokens = t.MaxTokens
	}
}

// RetryQuota is the AWS SDKs' (AWSStandard's Source): a successful retry refunds its
// RetryCost, a first attempt's success adds NoRetryIncrement, up to Tokens.
type RetryQuota struct {
	Tokens, RetryCost, NoRetryIncrement int
	TimeoutCost                         int // a timed-out attempt's retry; 0: RetryCost
}

// Cost is what the retry of an attempt that failed so (timed out or not) takes.
func (q RetryQuota) Cost(timedOut bool) int {
	if timedOut && q.TimeoutCost > 0 {
		return q.TimeoutCost
	}
	return q.RetryCost
}

// BreakerRule is gobreaker in front of every attempt; a refused attempt ends the call.
type BreakerRule struct {
	Trip        int
	Open        time.Duration
	HalfOpenMax int
}

// TotalAttempts is Attempts to the power Layers.
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

// ImmediateRetry is the business retry: n at once.
func ImmediateRetry(n int) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d immediate retries", n), Attempts: n + 1}
}

// JitteredBackoff is n retries, base doubling to 20 s, full jitter.
func JitteredBackoff(n int, base time.Duration) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d retries, back-off %v with full jitter", n, base), Attempts: n + 1,
		Backoff: StormBackoff{Base: base, Cap: 20 * time.Second, Jitter: FullJitter}}
}

// Budget is labrun's: n immediate retries within ratio of 10 s of calls + minPerSecond.
func Budget(n int, ratio, minPerSecond float64) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d immediate retries, budget %g%%", n, ratio*100), Attempts: n + 1,
		Budget: &RetryBudget{Ratio: ratio, MinPerSecond: minPerSecond, Window: 10 * time.Second},
		Source: "labrun's, after Finagle RetryBudget (20%, 10/s over 10 s) and Envoy retry_budget (20%)"}
}

// GRPCThrottled is grpc-go v1.85.0's retryPolicy under its retryThrottling.
func GRPCThrottled(attempts int, initial, maxBackoff time.Duration, multiplier, maxTokens, tokenRatio float64) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("grpc-go retryThrottling %g/%g", maxTokens, tokenRatio), Attempts: attempts,
		Backoff:  StormBackoff{Base: initial, Cap: maxBackoff, Multiplier: multiplier, Jitter: GRPCJitter},
		Throttle: &RetryThrottle{MaxTokens: maxTokens, TokenRatio: tokenRatio},
		Source:   "grpc-go v1.85.0 clientconn.go retryThrottler, stream.go shouldRetry (float64, in that order)"}
}

// AWSStandard is aws-sdk-go-v2 v1.48.0's (older releases: 5 a retry, 10 a timeout).
func AWSStandard() RetryPolicy {
	return RetryPolicy{Name: "aws-sdk-go-v2 standard", Attempts: 3,
		Backoff: StormBackoff{Base: 50 * time.Millisecond, Cap: 20 * time.Second, Jitter: FullJitter},
		Quota:   &RetryQuota{Tokens: 500, RetryCost: 14, NoRetryIncrement: 1},
		Source: "aws-sdk-go-v2 v1.48.0 aws/retry/standard.go (DefaultMaxAttempts, DefaultRetryRateTokens, defaultRetryCost, " +
			"DefaultNoRetryIncrement), middleware.go handleAttempt, jitter_backoff.go backoffDelay2026, ratelimit/token_bucket.go"}
}

// BotocoreStandard is botocore 1.29.27's standard retry mode (Debian's python3-botocore).
func BotocoreStandard() RetryPolicy {
	return RetryPolicy{Name: "botocore standard", Attempts: 3,
		Backoff: StormBackoff{Base: time.Second, Cap: 20 * time.Second, Jitter: FullJitter},
		Quota:   &RetryQuota{Tokens: 500, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1},
		Source: "botocore 1.29.27 retries/standard.py (DEFAULT_MAX_ATTEMPTS, ExponentialBackoff, RetryQuotaChecker " +
			"_RETRY_COST, _TIMEOUT_RETRY_REQUEST, _NO_RETRY_INCREMENT), retries/quota.py (INITIAL_CAPACITY)"}
}

// BotocoreLegacy is botocore 1.29.27's legacy retry mode: no quota.
func BotocoreLegacy() RetryPolicy {
	return RetryPolicy{Name: "botocore legacy", Attempts: 5,
		Backoff: StormBackoff{Base: time.Second, Cap: time.Hour, Jitter: FullJitter},
		Source:  "botocore 1.29.27 data/_retry.json (__default__: max_attempts 5, base rand, growth_factor 2), retryhandler.py delay_exponential"}
}

// BreakerFirst puts n immediate retries behind b.
func BreakerFirst(n int, b BreakerRule) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d immediate retries behind a breaker", n), Attempts: n + 1, Breaker: &b,
		Source: "github.com/sony/gobreaker/v2 v2.4.0"}
}

// Layered is layers of retries of attempts each.
func Layered(layers, attempts int) RetryPolicy {
	return RetryPolicy{Name: fmt.Sprintf("%d layers of %d attempts", layers, attempts), Attempts: attempts, Layers: layers}
}

// StormPolicyNames are StormPolicy's names.
func StormPolicyNames() []string {
	names := make([]string, len(stormPolicies))
	for i, e := range stormPolicies {
		names[i] = e.name
	}
	return names
}

var stormPolicies = []struct {
	name    string
	retries bool // takes --retries
	build   func(retries int, ratio, floor float64, open time.Duration) RetryPolicy
}{
	{"none", false, func(int, float64, float64, time.Duration) RetryPolicy { return NoRetry() }},
	{"retry", true, func(n int, _, _ float64, _ time.Duration) RetryPolicy { return ImmediateRetry(n) }},
	{"backoff", true, func(n int, _, _ float64, _ time.Duration) RetryPolicy {
		return JitteredBackoff(n, 100*time.Millisecond)
	}},
	{"budget", true, func(n int, ratio, floor float64, _ time.Duration) RetryPolicy { return Budget(n, ratio, floor) }},
	{"grpc", false, func(int, float64, float64, time.Duration) RetryPolicy {
		// gRFC A6's example service config.
		return GRPCThrottled(3, 100*time.Millisecond, time.Second, 2, 10, 0.1)
	}},
	{"aws-standard", false, func(int, float64, float64, time.Duration) RetryPolicy { return AWSStandard() }},
	{"botocore-standard", false, func(int, float64, float64, time.Duration) RetryPolicy { return BotocoreStandard() }},
	{"botocore-legacy", false, func(int, float64, float64, time.Duration) RetryPolicy { return BotocoreLegacy() }},
	{"breaker", true, func(n int, _, _ float64, open time.Duration) RetryPolicy {
		return BreakerFirst(n, BreakerRule{Trip: 10, Open: open, HalfOpenMax: 1})
	}},
	{"layers", true, func(n int, _, _ float64, _ time.Duration) RetryPolicy { return Layered(3, n+1) }},
}

// StormPolicy builds the policy called name, or says which flag is wrong.
func StormPolicy(name string, retries int, ratio, floor float64, open time.Duration) (RetryPolicy, error) {
	for _, e := range stormPolicies {
		switch {
		case e.name != name:
		case e.retries && retries < 1:
			return RetryPolicy{}, fmt.Errorf("--policy %s retries: give --retries of at least 1", name)
		default:
			return e.build(retries, ratio, floor, open), nil
		}
	}
	return RetryPolicy{}, fmt.Errorf("--policy: unknown policy %q (want %s)", name, strings.Join(StormPolicyNames(), ", "))
}
