package cascade

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/dist"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/results"
)

// Cascade is experiment L: the caller's side of a slow downstream. An order service with a
// pool of workers calls inventory through a small connection pool; inventory pauses. With the
// lease timeout at its default every worker ends up stuck at the pool and the health check
// waits with them; a short lease timeout fails all but the pool's size at once; a large pool
// lets every worker press on inventory (the quiz). Then the pool sized by Little's law under
// a steady load, hedging a slow tail, a timeout storm with and without a circuit breaker, and
// the budgets of a call chain. Times are the production ones divided by cascadeScale. This file
// holds the cascade and the quiz; cascadesizing.go, cascadehedge.go, cascadestorm.go and
// cascadebudgets.go the other rows.
type Cascade struct {
	Workers  int
	Pool     int
	QuizPool int
	// Capacity is how many calls inventory serves at once once its pause is over.
	Capacity     int
	Pause        time.Duration
	Service      time.Duration
	LeaseTimeout time.Duration

	// The pool sizing row: calls at QPS per second for Window, each held Hold.
	QPS    int
	Hold   time.Duration
	Window time.Duration

	// The hedging rows: HedgeCalls calls, one every hedgeSpacing, take HedgeFast, but the
	// first request of every HedgeEvery-th takes HedgeSlow; the hedge goes after HedgeAfter.
	HedgeCalls int
	HedgeEvery int
	HedgeFast  time.Duration
	HedgeSlow  time.Duration
	HedgeAfter time.Duration
	// The hedging rows over a distribution, with DelayDist only: DistCalls calls whose
	// requests' delays are drawn from DelayDist under Seed, keyed by call and copy.
	DelayDist string
	Seed      int
	DistCalls int

	// The timeout storm rows: StormCalls calls, one every stormSpacing, with a read timeout of
	// StormRead; the downstream takes StormFast but StormSlow for the calls that start in the
	// first Storm. The breaker opens after Trip failures in a row for BreakerOpen.
	StormCalls  int
	Storm       time.Duration
	StormRead   time.Duration
	StormFast   time.Duration
	StormSlow   time.Duration
	Trip        int
	BreakerOpen time.Duration

	// The budget rows: the gateway calls order with Gateway, order calls inventory with
	// Order (growing) or Shrunk (shrinking), inventory works Work.
	Gateway time.Duration
	Order   time.Duration
	Shrunk  time.Duration
	Work    time.Duration
}

// cascadeScale is how much shorter exp-l's times are than the production ones it stands for:
// a 3 s pause runs as 300 ms.
const cascadeScale = 10

// sizingHeadroom is the sizing rule's factor: pool = QPS x p99 x 1.5.
const sizingHeadroom = 1.5

// New returns experiment L with its documented parameters, scaled.
func New() *Cascade {
	return &Cascade{
		Workers: 200, Pool: 5, QuizPool: 500, Capacity: 20,
		Pause: 300 * time.Millisecond, Service: 5 * time.Millisecond, LeaseTimeout: 50 * time.Millisecond,
		QPS: 100, Hold: 30 * time.Millisecond, Window: 500 * time.Millisecond,
		HedgeCalls: 50, HedgeEvery: 25, HedgeFast: 10 * time.Millisecond, HedgeSlow: 150 * time.Millisecond, HedgeAfter: 30 * time.Millisecond,
		Seed: dist.DefaultSeed, DistCalls: defaultDistCalls,
		StormCalls: 24, Storm: 340 * time.Millisecond, StormRead: 60 * time.Millisecond, StormFast: 2 * time.Millisecond,
		StormSlow: 200 * time.Millisecond, Trip: 3, BreakerOpen: 120 * time.Millisecond,
		Gateway: 100 * time.Millisecond, Order: 200 * time.Millisecond, Shrunk: 80 * time.Millisecond, Work: 250 * time.Millisecond,
	}
}

// Info implements Experiment.
func (*Cascade) Info() lab.Info {
	return lab.Info{
		Name:  "exp-l",
		Topic: "caller",
		Alone: true,
		Title: "the caller's side of a slow downstream",
		Description: "An order service with 200 workers calls inventory through 5 pooled connections; " +
			"inventory pauses (a GC pause, 3 s in production, 300 ms here: every time is a tenth of " +
			"its production value). With the lease timeout at HttpClient 5's default (3 minutes) 5 " +
			"workers wait on inventory and 195 at the pool: every worker is stuck, the health check " +
			"served by the same workers waits with them, and the service recovers only once the " +
			"backlog has drained. With a 50 ms lease timeout all but 5 fail at 50 ms and the health " +
			"check answers at once. The quiz: a pool of 500 lets all 200 workers press on inventory " +
			"(the pool is a bulkhead). Then a pool sized QPS x p99 x 1.5 under a steady load, and a " +
			"gateway, order and inventory chain with growing timeouts, shrinking ones, and the " +
			"remaining budget passed down in X-Deadline-Ms: the work done after the gateway gave up.",
		Examples: []string{
			"labrun exp-l",
			"labrun exp-l --lease-timeout 20ms   # fail faster still",
			"labrun exp-l --quiz-pool 50         # a bulkhead of 50",
			"labrun exp-l --qps 200 --hold 20ms  # another load to size the pool for",
			"labrun exp-l --delay-dist lognormal:10ms:0.8  # a lognormal tail, hedged",
		},
	}
}

// Params implements Experiment.
func (c *Cascade) Params() []lab.Param {
	const maxD = 10 * time.Second
	return []lab.Param{
		{Name: "workers", Usage: "the caller's workers (threads)", Int: &c.Workers, Min: 1, Max: 1000},
		{Name: "pool", Usage: "connections per route", Int: &c.Pool, Min: 1, Max: 1000},
		{Name: "quiz-pool", Usage: "the larger pool of the quiz", Int: &c.QuizPool, Min: 1, Max: 1000},
		{Name: "capacity", Usage: "calls the downstream serves at once after its pause (0 = no bound)", Int: &c.Capacity, Min: 0, Max: 1000},
		{Name: "pause", Usage: "the downstream's pause", Duration: &c.Pause, MaxDuration: maxD},
		{Name: "service", Usage: "the downstream's time per call", Duration: &c.Service, MaxDuration: maxD},
		{Name: "lease-timeout", Usage: "the short lease timeout", Duration: &c.LeaseTimeout, MaxDuration: maxD},
		{Name: "qps", Usage: "calls per second of the pool sizing row", Int: &c.QPS, Min: 1, Max: 1000},
		{Name: "hold", Usage: "the downstream's time per call in the pool sizing row", Duration: &c.Hold, MaxDuration: maxD},
		{Name: "window", Usage: "how long the pool sizing row's load lasts", Duration: &c.Window, MaxDuration: maxD},
		{Name: "hedge-calls", Usage: "calls of the hedging rows", Int: &c.HedgeCalls, Min: 1, Max: 1000},
		{Name: "hedge-every", Usage: "one call in this many is slow (the tail)", Int: &c.HedgeEvery, Min: 1, Max: 1000},
		{Name: "hedge-fast", Usage: "the downstream's time for most calls", Duration: &c.HedgeFast, MaxDuration: maxD},
		{Name: "hedge-slow", Usage: "the downstream's time for a slow call", Duration: &c.HedgeSlow, MaxDuration: maxD},
		{Name: "hedge-after", Usage: "the hedge's delay: past the p95 (hedge-fast), with room for jitter", Duration: &c.HedgeAfter, MaxDuration: maxD},
		{Name: "delay-dist", Usage: "hedging over a distribution too: its rows draw each request's delay from it by call and copy (" + dist.Grammar + ")", String: &c.DelayDist},
		{Name: "seed", Usage: "the seed of --delay-dist's draws", Int: &c.Seed, Min: 0, Max: fakesrv.MaxSeed},
		{Name: "dist-calls", Usage: "calls of each --delay-dist row", Int: &c.DistCalls, Min: 100, Max: maxDistCalls},
		{Name: "storm-calls", Usage: "calls of the timeout storm rows (at most 24: under a second, no TIME_WAIT socket is reused)", Int: &c.StormCalls, Min: 1, Max: 24},
		{Name: "storm", Usage: "the calls that start this early find the downstream's latency past the read timeout", Duration: &c.Storm, MaxDuration: maxD},
		{Name: "storm-read", Usage: "the read timeout of the timeout storm rows", Duration: &c.StormRead, MaxDuration: maxD},
		{Name: "storm-fast", Usage: "the downstream's time outside the storm", Duration: &c.StormFast, MaxDuration: maxD},
		{Name: "storm-slow", Usage: "the downstream's time during the storm", Duration: &c.StormSlow, MaxDuration: maxD},
		{Name: "trip", Usage: "failures in a row that open the breaker", Int: &c.Trip, Min: 1, Max: 1000},
		{Name: "breaker-open", Usage: "how long the breaker stays open", Duration: &c.BreakerOpen, MaxDuration: maxD},
		{Name: "gateway", Usage: "the gateway's timeout on its call to order", Duration: &c.Gateway, MaxDuration: maxD},
		{Name: "order", Usage: "order's timeout on its call to inventory (growing)", Duration: &c.Order, MaxDuration: maxD},
		{Name: "shrunk", Usage: "order's timeout on its call to inventory (shrinking)", Duration: &c.Shrunk, MaxDuration: maxD},
		{Name: "work", Usage: "inventory's work on the chain's call", Duration: &c.Work, MaxDuration: maxD},
	}
}

// Check implements Checker.
func (c *Cascade) Check() error {
	switch {
	case c.LeaseTimeout == 0:
		return fmt.Errorf("--lease-timeout must be set: the cascade compares it with the default")
	case c.Service == 0 || c.Hold == 0:
		return fmt.Errorf("--service and --hold must be set: a downstream that takes no time holds no connection")
	case c.Gateway == 0 || c.Order == 0 || c.Shrunk == 0:
		return fmt.Errorf("--gateway, --order and --shrunk must be set: a chain with a missing timeout has no budget")
	case c.Order <= c.Gateway:
		return fmt.Errorf("--order (%v) must exceed --gateway (%v): it is the growing timeout", c.Order, c.Gateway)
	case c.Shrunk >= c.Gateway:
		return fmt.Errorf("--shrunk (%v) must be below --gateway (%v): it is the shrinking timeout", c.Shrunk, c.Gateway)
	}
	if c.HedgeAfter <= c.HedgeFast || c.HedgeAfter+c.HedgeFast >= c.HedgeSlow {
		return fmt.Errorf("--hedge-after (%v) must lie between --hedge-fast (%v) and --hedge-slow (%v) less --hedge-fast: a hedge before the fast answer doubles every call, one after the slow answer changes nothing",
			c.HedgeAfter, c.HedgeFast, c.HedgeSlow)
	}
	if c.StormRead == 0 || c.StormSlow <= c.StormRead || c.StormFast >= c.StormRead || c.StormFast >= stormSpacing {
		return fmt.Errorf("--storm-read (%v) must be set, above --storm-fast (%v) and below --storm-slow (%v), and --storm-fast below the %v between calls: the storm is the latency jittering past the read timeout",
			c.StormRead, c.StormFast, c.StormSlow, stormSpacing)
	}
	if n := c.sizingCalls(); n < 1 || n > 1000 {
		return fmt.Errorf("--qps x --window must make 1 to 1000 calls, got %d", n)
	}
	return c.checkDist()
}

// withoutDist is ps but the distribution rows' parameters, which change no other row.
func withoutDist(ps []lab.Param) []lab.Param {
	return slices.DeleteFunc(ps, func(p lab.Param) bool { return slices.Contains(distParams, p.Name) })
}

// sizingCalls is how many calls the pool sizing row makes.
func (c *Cascade) sizingCalls() int {
	return int(math.Round(float64(c.QPS) * c.Window.Seconds()))
}

// leaseOf is the lease timeout b's client applies: net/http's wait for MaxConnsPerHost has
// none, whatever the spec asked.
func leaseOf(b lab.Built) time.Duration {
	if b.Limits.Rules.Pool.NoLeaseTimeout {
		return 0
	}
	return b.Limits.LeaseTimeout
}

// Run implements Experiment.
func (c *Cascade) Run(ctx context.Context, opt lab.Options) (results.Run, error) {
	if err := lab.Check(c, opt.Profile()); err != nil {
		return results.Run{}, err
	}
	d, err := upstream.NewDownstream(c.Capacity)
	if err != nil {
		return results.Run{}, err
	}
	defer d.Close()
	def := lab.AtDocumented(opt, withoutDist(c.Params()), withoutDist(New().Params()))
	run := lab.NewRun(c, opt)
	run.Axis = "from the start of the downstream's pause"
	variants := []struct {
		name string
		s    lab.Spec
		docs cascadeDocs
	}{
		{fmt.Sprintf("incident: pool %d, lease timeout at the default", c.Pool), lab.Spec{Pool: c.Pool},
			cascadeDocs{busy: "200 of 200 stuck", pending: "195 queued at the pool"}},
		{fmt.Sprintf("pool %d, lease timeout %v", c.Pool, c.LeaseTimeout), lab.Spec{Pool: c.Pool, LeaseTimeout: c.LeaseTimeout},
			cascadeDocs{peak: "at most 5 on inventory"}},
		{fmt.Sprintf("quiz: pool %d, lease timeout %v", c.QuizPool, c.LeaseTimeout), lab.Spec{Pool: c.QuizPool, LeaseTimeout: c.LeaseTimeout},
			cascadeDocs{peak: "all 200 on inventory"}},
	}
	for i, v := range variants {
		step := fmt.Sprintf("%s · cascade %d/%d: %s", c.Info().Name, i+1, len(variants), v.name)
		rows, calls, err := c.cascade(ctx, opt, d, v.name, v.s, func(expected time.Duration) { opt.Step(expected, "%s", step) })
		if err != nil {
			return results.Run{}, err
		}
		if def {
			v.docs.apply(rows)
		}
		run.Rows = append(run.Rows, rows...)
		run.Calls = append(run.Calls, calls...)
	}
	rows, err := c.sizing(ctx, opt, d)
	if err != nil {
		return results.Run{}, err
	}
	run.Rows = append(run.Rows, rows...)
	rows, err = c.hedging(ctx, opt, d)
	if err != nil {
		return results.Run{}, err
	}
	run.Rows = append(run.Rows, rows...)
	if c.DelayDist != "" {
		if rows, err = c.hedgingDist(ctx, opt); err != nil {
			return results.Run{}, err
		}
		run.Rows = append(run.Rows, rows...)
	}
	rows, err = c.storm(ctx, opt)
	if err != nil {
		return results.Run{}, err
	}
	run.Rows = append(run.Rows, rows...)
	rows, calls, err := c.budgets(ctx, opt)
	if err != nil {
		return results.Run{}, err
	}
	run.Rows = append(run.Rows, rows...)
	run.Calls = append(run.Calls, calls...)
	run.Finish(opt.Tolerance)
	return run, nil
}
