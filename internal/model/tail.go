package model

import (
	"math"
	"time"

	"github.com/labrun/labrun/internal/dist"
)

// TailQuestion is the tail question: calls to a downstream whose delay follows Dist and which fails a
// share FailRate of the requests (at once, or, with FailHolds, by holding them as a stall),
// under a read timeout per attempt (0: none), Retries retries of a failed attempt with
// Backoff before each, and a Deadline on the whole call (0: none). Hedge is a hedging
// policy's delay: a second request when the first has not answered within it.
type TailQuestion struct {
	Dist      dist.Dist
	FailRate  float64
	FailHolds bool
	Timeout   time.Duration
	Retries   int
	Backoff   time.Duration
	Deadline  time.Duration
	Hedge     time.Duration
}

// TailAnswer is the answer, in closed form over Dist's CDF.
type TailAnswer struct {
	// TimedOut is the share of attempts the read timeout ends; Failed the share of calls whose
	// every attempt failed before the deadline, DeadlineEnded the share the deadline ends.
	TimedOut, Failed, DeadlineEnded float64
	// Executions is the expected number of requests per call, each executed by the server.
	Executions float64
	// P50 and P99 are what a caller waits, failures included; Forever when more than that share
	// of the calls never ends.
	P50, P99 time.Duration
	// HedgeP99 is the p99 with the hedge instead of retries (Forever: more than 1% of the calls
	// fail), HedgeExecutions its requests per call.
	HedgeP99        time.Duration
	HedgeExecutions float64
}

// Answer answers the question.
func (q TailQuestion) Answer() TailAnswer {
	fast, slow := q.failures()
	a := TailAnswer{TimedOut: slow, Executions: q.executions(fast, slow), Failed: q.failedBy(Forever, fast, slow)}
	if q.Deadline > 0 {
		a.Failed = q.failedBy(q.Deadline, fast, slow)
		a.DeadlineEnded = 1 - q.callCDF(q.Deadline, fast, slow)
	}
	a.P50, a.P99 = q.quantile(0.5, fast, slow), q.quantile(0.99, fast, slow)
	if q.Hedge > 0 {
		a.HedgeExecutions = 2 - q.succeeds(q.Hedge)
		a.HedgeP99 = quantileOf(0.99, q.bound(), func(t time.Duration) float64 {
			return 1 - (1-q.succeeds(t))*(1-q.succeeds(t-q.Hedge))
		})
	}
	return a
}

// failures are the shares of attempts that fail at once and that end at the timeout (or
// never, without one): a request failed by the server, or a delay beyond the timeout.
func (q TailQuestion) failures() (fast, slow float64) {
	if q.FailHolds {
		slow = q.FailRate
	} else {
		fast = q.FailRate
	}
	if q.Timeout > 0 {
		slow += (1 - q.FailRate) * (1 - q.Dist.CDF(q.Timeout))
	}
	return fast, slow
}

// succeeds is the share of attempts answered within t.
func (q TailQuestion) succeeds(t time.Duration) float64 {
	if t < 0 {
		return 0
	}
	if q.Timeout > 0 {
		t = min(t, q.Timeout)
	}
	return (1 - q.FailRate) * q.Dist.CDF(t)
}

// callCDF is the share of calls that end (answered or failed) within t.
func (q TailQuestion) callCDF(t time.Duration, fast, slow float64) float64 {
	return min(q.answeredBy(t, fast, slow)+q.failedBy(t, fast, slow), 1)
}

// answeredBy is the share of calls answered within t: attempt k+1 answers after k failures,
// j of them at the timeout.
func (q TailQuestion) answeredBy(t time.Duration, fast, slow float64) float64 {
	var p float64
	for k := 0; k <= q.Retries; k++ {
		for j := 0; j <= k; j++ {
			if w := q.sequence(k, j, fast, slow); w > 0 {
				p += w * q.succeeds(t-time.Duration(j)*q.Timeout-time.Duration(k)*q.Backoff)
			}
		}
	}
	return p
}

// failedBy is the share of calls whose every attempt failed within t.
func (q TailQuestion) failedBy(t time.Duration, fast, slow float64) float64 {
	var p float64
	n := q.Retries + 1
	for j := 0; j <= n; j++ {
		if w := q.sequence(n, j, fast, slow); w > 0 && time.Duration(j)*q.Timeout+time.Duration(n-1)*q.Backoff <= t {
			p += w
		}
	}
	return p
}

// sequence is the share of calls whose first k attempts failed, j of them at the timeout; 0
// when such an attempt never ends (held without a timeout).
func (q TailQuestion) sequence(k, j int, fast, slow float64) float64 {
	if j > 0 && q.Timeout == 0 {
		return 0
	}
	return binom(k, j) * math.Pow(fast, float64(k-j)) * math.Pow(slow, float64(j))
}

// executions is the expected number of attempts: attempt k+1 is sent when k failed and the
// deadline has not passed when it starts.
func (q TailQuestion) executions(fast, slow float64) float64 {
	var e float64
	for k := 0; k <= q.Retries; k++ {
		for j := 0; j <= k; j++ {
			start := time.Duration(j)*q.Timeout + time.Duration(k)*q.Backoff
			if q.Deadline > 0 && k > 0 && start >= q.Deadline {
				continue
			}
			e += q.sequence(k, j, fast, slow)
		}
	}
	return e
}

// bound is a time by which every call that ends has ended, as far as the quantiles look.
func (q TailQuestion) bound() time.Duration {
	if q.Deadline > 0 {
		return q.Deadline
	}
	n := time.Duration(q.Retries + 1)
	if q.Timeout > 0 {
		return n*q.Timeout + n*q.Backoff
	}
	return min(n*(dist.Max+q.Backoff)+q.Hedge, Forever/2)
}

// quantile is the caller's p-quantile: min(call, deadline).
func (q TailQuestion) quantile(p, fast, slow float64) time.Duration {
	return quantileOf(p, q.bound(), func(t time.Duration) float64 {
		if q.Deadline > 0 && t >= q.Deadline {
			return 1
		}
		return q.callCDF(t, fast, slow)
	})
}

// quantileOf is the least t in [0, hi] with cdf(t) >= p, to the microsecond; Forever when
// cdf(hi) < p.
func quantileOf(p float64, hi time.Duration, cdf func(time.Duration) float64) time.Duration {
	if cdf(hi) < p-1e-12 {
		return Forever
	}
	lo := time.Duration(0)
	for hi-lo > time.Microsecond {
		mid := lo + (hi-lo)/2
		if cdf(mid) >= p-1e-12 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
