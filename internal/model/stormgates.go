package model

import (
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// stormGates is the policy's state across calls.
type stormGates struct {
	p                 rules.RetryPolicy
	tokens            float64 // the throttle's
	quota             int
	callTimes, retryT []time.Duration // the budget's window
	ci, ri            int
	// the breaker's
	state         BreakerState
	gen, fails    int
	succ, inHalf  int
	openedAt      time.Duration
	attemptGen    map[int]int
	retryCostPaid map[int]int // per call: the quota its pending retry took
}

func newStormGates(p rules.RetryPolicy) *stormGates {
	g := &stormGates{p: p, state: Closed, attemptGen: map[int]int{}, retryCostPaid: map[int]int{}}
	if p.Throttle != nil {
		g.tokens = p.Throttle.MaxTokens
	}
	if p.Quota != nil {
		g.quota = p.Quota.Tokens
	}
	return g
}

// admit asks the breaker for attempt ref at t; false sheds it.
func (g *stormGates) admit(t time.Duration, ref int) bool {
	b := g.p.Breaker
	if b == nil {
		return true
	}
	if g.state == Opened && t > g.openedAt+b.Open {
		g.set(t, HalfOpen)
	}
	if g.state == Opened || (g.state == HalfOpen && g.inHalf >= b.HalfOpenMax) {
		return false
	}
	if g.state == HalfOpen {
		g.inHalf++
	}
	g.attemptGen[ref] = g.gen
	return true
}

func (g *stormGates) set(t time.Duration, to BreakerState) {
	g.state, g.gen, g.fails, g.succ, g.inHalf, g.openedAt = to, g.gen+1, 0, 0, 0, t
}

// settle tells the breaker attempt ref's outcome; an earlier generation's counts for nothing.
func (g *stormGates) settle(t time.Duration, ref int, ok bool) {
	b := g.p.Breaker
	if b == nil {
		return
	}
	gen, seen := g.attemptGen[ref]
	delete(g.attemptGen, ref)
	if !seen || gen != g.gen {
		return
	}
	switch {
	case ok && g.state == HalfOpen:
		g.succ++
		if g.succ >= b.HalfOpenMax {
			g.set(t, Closed)
		}
	case ok:
		g.fails = 0
	case g.state == HalfOpen:
		g.set(t, Opened)
	default:
		g.fails++
		if g.fails >= b.Trip {
			g.set(t, Opened)
		}
	}
}

// called records a call made at t, for the budget.
func (g *stormGates) called(t time.Duration) {
	if g.p.Budget != nil {
		g.callTimes = append(g.callTimes, t)
	}
}

// retry decides whether call i's failed attempt k is retried, and takes what it costs.
func (g *stormGates) retry(t time.Duration, i, k int, timedOut bool) bool {
	p := g.p
	if th := p.Throttle; th != nil && !th.Fail(&g.tokens) {
		return false
	}
	if k+1 >= p.TotalAttempts() {
		return false
	}
	if q := p.Quota; q != nil {
		cost := q.Cost(timedOut)
		if g.quota < cost {
			return false
		}
		g.quota -= cost
		g.retryCostPaid[i] = cost
	}
	if b := p.Budget; b != nil {
		for g.ci < len(g.callTimes) && g.callTimes[g.ci] <= t-b.Window {
			g.ci++
		}
		for g.ri < len(g.retryT) && g.retryT[g.ri] <= t-b.Window {
			g.ri++
		}
		if !b.Allows(len(g.callTimes)-g.ci, len(g.retryT)-g.ri) {
			return false
		}
		g.retryT = append(g.retryT, t)
	}
	return true
}

// succeeded tells the bounds that call i's attempt k succeeded.
func (g *stormGates) succeeded(i, k int) {
	if th := g.p.Throttle; th != nil {
		th.Succeed(&g.tokens)
	}
	if q := g.p.Quota; q != nil {
		refund := q.NoRetryIncrement
		if k > 0 {
			refund = g.retryCostPaid[i]
		}
		g.quota = min(g.quota+refund, q.Tokens)
	}
	delete(g.retryCostPaid, i)
}

// failed tells the bounds that call i ended failed.
func (g *stormGates) failed(i int) { delete(g.retryCostPaid, i) }
