package storm

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/sony/gobreaker/v2"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
)

// outcome is how one attempt ended.
type outcome int

const (
	answered     outcome = iota // in time, 200
	failedAnswer                // in time, 503
	timedOut
	shed // refused by a breaker, never sent
)

// A gate runs a policy's decisions live, one callGate per call.
type gate interface {
	call(i int, at time.Duration) callGate
}

// callGate decides for one call.
type callGate interface {
	// attempt runs try through what stands in front of it (a breaker).
	attempt(try func() outcome) outcome
	// retry says whether failed attempt k (0 first) is retried and after what wait.
	retry(k int, o outcome, at time.Duration) (time.Duration, bool)
	// succeeded says the call was answered at attempt k.
	succeeded(k int)
}

// policyGate runs a rules.RetryPolicy's attempts, back-off and budget as labrun's own code.
type policyGate struct {
	p              rules.RetryPolicy
	seed           uint64
	mu             sync.Mutex // guards calls and retries
	calls, retries []time.Duration
	cb             *gobreaker.CircuitBreaker[struct{}]
}

func newPolicyGate(p rules.RetryPolicy, seed uint64) *policyGate {
	g := &policyGate{p: p, seed: seed}
	if b := p.Breaker; b != nil {
		g.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
			Name: "downstream", MaxRequests: uint32(b.HalfOpenMax), Timeout: b.Open,
			ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= uint32(b.Trip) },
		})
	}
	return g
}

type policyCall struct {
	g *policyGate
	i int
}

var errFailed = errors.New("attempt failed")

func (g *policyGate) call(i int, at time.Duration) callGate {
	if g.p.Budget != nil {
		g.mu.Lock()
		g.calls = append(g.calls, at)
		g.mu.Unlock()
	}
	return policyCall{g, i}
}

func (c policyCall) attempt(try func() outcome) outcome {
	if c.g.cb == nil {
		return try()
	}
	var o outcome
	_, err := c.g.cb.Execute(func() (struct{}, error) {
		o = try()
		if o != answered {
			return struct{}{}, errFailed
		}
		return struct{}{}, nil
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return shed
	}
	return o
}

func (c policyCall) retry(k int, o outcome, at time.Duration) (time.Duration, bool) {
	p := c.g.p
	if o == shed || k+1 >= p.TotalAttempts() {
		return 0, false
	}
	if b := p.Budget; b != nil {
		c.g.mu.Lock()
		defer c.g.mu.Unlock()
		if !b.Allows(countSince(c.g.calls, at-b.Window), countSince(c.g.retries, at-b.Window)) {
			return 0, false
		}
		c.g.retries = append(c.g.retries, at)
	}
	return p.Backoff.Delay(k+1, model.StormJitter(c.g.seed, c.i, k+1)), true
}

func (policyCall) succeeded(int) {}

// countSince counts the times after from.
func countSince(ts []time.Duration, from time.Duration) int {
	n := 0
	for _, t := range ts {
		if t > from {
			n++
		}
	}
	return n
}

// awsGate is aws-sdk-go-v2's standard retryer, the real one: its quota (a shared
// ratelimit.TokenRateLimit), GetInitialToken, GetRetryToken and RetryDelay, driven as
// aws/retry/middleware.go's handleAttempt drives them; only the back-off's random draw is
// labrun's (model.StormJitter), so that the model knows it.
type awsGate struct {
	p       rules.RetryPolicy
	seed    uint64
	limiter *ratelimit.TokenRateLimit
}

func newAWSGate(p rules.RetryPolicy, seed uint64) *awsGate {
	return &awsGate{p: p, seed: seed, limiter: ratelimit.NewTokenRateLimit(retry.DefaultRetryRateTokens)}
}

// statusError is an attempt's failure as the SDK classifies it: an HTTP status (504 for a
// timed-out attempt), which DefaultRetryableHTTPStatusCodes retries.
type statusError int

func (e statusError) Error() string       { return "status " + itoa(int(e)) }
func (e statusError) HTTPStatusCode() int { return int(e) }

type awsCall struct {
	std          *retry.Standard
	initial      func(error) error
	releaseRetry func(error) error
}

func (g *awsGate) call(i int, _ time.Duration) callGate {
	std := retry.NewStandard(func(o *retry.StandardOptions) {
		o.RateLimiter = g.limiter
		o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			return g.p.Backoff.Delay(attempt, model.StormJitter(g.seed, i, attempt)), nil
		})
	})
	return &awsCall{std: std, initial: std.GetInitialToken()}
}

func (c *awsCall) attempt(try func() outcome) outcome { return try() }

func (c *awsCall) retry(k int, o outcome, _ time.Duration) (time.Duration, bool) {
	err := error(statusError(503))
	if o == timedOut {
		err = statusError(504)
	}
	if !c.std.IsErrorRetryable(err) || k+1 >= c.std.MaxAttempts() {
		return 0, false
	}
	rel, tokenErr := c.std.GetRetryToken(context.Background(), err)
	if tokenErr != nil {
		return 0, false
	}
	c.releaseRetry = rel
	d, delayErr := c.std.RetryDelay(k+1, err)
	return d, delayErr == nil
}

func (c *awsCall) succeeded(k int) {
	if k == 0 {
		_ = c.initial(nil)
	} else if c.releaseRetry != nil {
		_ = c.releaseRetry(nil)
	}
}
