package model

import (
	"math"
	"slices"
	"time"

	"github.com/labrun/labrun/internal/dist"
)

// TailQuestion is the tail question: a downstream whose delays follow Dist and which fails
// FailRate of the requests (at once, or held with FailHolds), a Timeout per attempt, retries,
// a Deadline (0: none), and a hedge's delay.
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

// TailAnswer is the answer, in closed form over Dist's CDF; a time is Forever when more than
// that share of the calls never ends.
type TailAnswer struct {
	// TimedOut: of the attempts; Failed (every attempt, before the deadline), DeadlineEnded:
	// of the calls.
	TimedOut, Failed, DeadlineEnded float64
	Executions                      float64
	// P50 and P99 are what a caller waits, failures included; HedgeP99 with the hedge.
	P50, P99        time.Duration
	HedgeP99        time.Duration
	HedgeExecutions float64
}

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
		a.HedgeP99 = q.HedgeQuantile(0.99)
	}
	return a
}

// Quantile is the p-quantile (0 to 1) of what a caller waits, failures included.
func (q TailQuestion) Quantile(p float64) time.Duration {
	fast, slow := q.failures()
	return q.quantile(p, fast, slow)
}

// HedgeQuantile is a hedged call's p-quantile: a copy after Hedge, the first success wins.
func (q TailQuestion) HedgeQuantile(p float64) time.Duration {
	return quantileOf(p, q.bound(), q.hedgeCDF)
}

func (q TailQuestion) hedgeCDF(t time.Duration) float64 {
	return 1 - (1-q.succeeds(t))*(1-q.succeeds(t-q.Hedge))
}

// CostQuantile is Quantile (HedgeQuantile when hedged) on a machine that adds to each call
// one of costs, each as likely.
func (q TailQuestion) CostQuantile(p float64, hedged bool, costs []time.Duration) time.Duration {
	fast, slow := q.failures()
	cdf := func(t time.Duration) float64 {
		if q.Deadline > 0 && t >= q.Deadline {
			return 1
		}
		return q.callCDF(t, fast, slow)
	}
	if hedged {
		cdf = q.hedgeCDF
	}
	if len(costs) == 0 {
		return quantileOf(p, q.bound(), cdf)
	}
	return quantileOf(p, q.bound()+slices.Max(costs), func(t time.Duration) float64 {
		var sum float64
		for _, c := range costs {
			sum += cdf(t - c)
		}
		return sum / float64(len(costs))
	})
}

// failures are the shares of attempts that fail at once, and that end at the timeout (or
// never, without one).
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

func (q TailQuestion) succeeds(t time.Duration) float64 {
	if t < 0 {
		return 0
	}
	if q.Timeout > 0 {
		t = min(t, q.Timeout)
	}
	return (1 - q.FailRate) * q.Dist.CDF(t)
}

func (q TailQuestion) callCDF(t time.Duration, fast, slow float64) float64 {
	return min(q.answeredBy(t, fast, slow)+q.failedBy(t, fast, slow), 1)
}

// answeredBy is the share of calls answered within t, by attempt k+1 after k failures.
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

// sequence is the share of calls whose first k attempts failed, j of them at the timeout.
func (q TailQuestion) sequence(k, j int, fast, slow float64) float64 {
	if j > 0 && q.Timeout == 0 {
		return 0
	}
	return binom(k, j) * math.Pow(fast, float64(k-j)) * math.Pow(slow, float64(j))
}

// executions is the expected number of attempts: k+1 when k failed before the deadline.
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

// bound is a time by which every call that ends has ended.
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

// quantileOf is the least t in [0, hi] with cdf(t) >= p, to the microsecond, or Forever.
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
