package experiments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cristalhq/hedgedhttp"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/fakesrv"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Cascade is experiment L: the caller's side of a slow downstream. An order service with a
// pool of workers calls inventory through a small connection pool; inventory pauses. With the
// lease timeout at its default every worker ends up stuck at the pool and the health check
// waits with them; a short lease timeout fails all but the pool's size at once; a large pool
// lets every worker press on inventory (the quiz). Then the pool sized by Little's law under
// a steady load, and the budgets of a call chain. Times are the production ones divided by
// cascadeScale.
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

// NewCascade returns experiment L with its documented parameters, scaled.
func NewCascade() *Cascade {
	return &Cascade{
		Workers: 200, Pool: 5, QuizPool: 500, Capacity: 20,
		Pause: 300 * time.Millisecond, Service: 5 * time.Millisecond, LeaseTimeout: 50 * time.Millisecond,
		QPS: 100, Hold: 30 * time.Millisecond, Window: 500 * time.Millisecond,
		HedgeCalls: 50, HedgeEvery: 25, HedgeFast: 10 * time.Millisecond, HedgeSlow: 150 * time.Millisecond, HedgeAfter: 30 * time.Millisecond,
		StormCalls: 24, Storm: 340 * time.Millisecond, StormRead: 60 * time.Millisecond, StormFast: 2 * time.Millisecond,
		StormSlow: 200 * time.Millisecond, Trip: 3, BreakerOpen: 120 * time.Millisecond,
		Gateway: 100 * time.Millisecond, Order: 200 * time.Millisecond, Shrunk: 80 * time.Millisecond, Work: 250 * time.Millisecond,
	}
}

// Info implements Experiment.
func (*Cascade) Info() Info {
	return Info{
		Name:  "exp-l",
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
		},
	}
}

// Params implements Experiment.
func (c *Cascade) Params() []param.Param {
	const maxD = 10 * time.Second
	return []param.Param{
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
	return nil
}

// sizingCalls is how many calls the pool sizing row makes.
func (c *Cascade) sizingCalls() int {
	return int(math.Round(float64(c.QPS) * c.Window.Seconds()))
}

// Run implements Experiment.
func (c *Cascade) Run(ctx context.Context, opt Options) (results.Run, error) {
	if err := check(c, opt.profile()); err != nil {
		return results.Run{}, err
	}
	d, err := upstream.NewDownstream(c.Capacity)
	if err != nil {
		return results.Run{}, err
	}
	defer d.Close()
	def := atDocumented(opt, c.Params(), NewCascade().Params())
	run := newRun(c, opt)
	run.Axis = "from the start of the downstream's pause"
	variants := []struct {
		name string
		s    spec
		docs cascadeDocs
	}{
		{fmt.Sprintf("incident: pool %d, lease timeout at the default", c.Pool), spec{Pool: c.Pool},
			cascadeDocs{busy: "200 of 200 stuck", pending: "195 queued at the pool"}},
		{fmt.Sprintf("pool %d, lease timeout %v", c.Pool, c.LeaseTimeout), spec{Pool: c.Pool, LeaseTimeout: c.LeaseTimeout},
			cascadeDocs{peak: "at most 5 on inventory"}},
		{fmt.Sprintf("quiz: pool %d, lease timeout %v", c.QuizPool, c.LeaseTimeout), spec{Pool: c.QuizPool, LeaseTimeout: c.LeaseTimeout},
			cascadeDocs{peak: "all 200 on inventory"}},
	}
	for i, v := range variants {
		step := fmt.Sprintf("%s · cascade %d/%d: %s", c.Info().Name, i+1, len(variants), v.name)
		rows, calls, err := c.cascade(ctx, opt, d, v.name, v.s, func(expected time.Duration) { opt.progress(expected, "%s", step) })
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
	rows, err = c.storm(ctx, opt)
	if err != nil {
		return results.Run{}, err
	}
	run.Rows = append(run.Rows, rows...)
	rows, err = c.budgets(ctx, opt)
	if err != nil {
		return results.Run{}, err
	}
	run.Rows = append(run.Rows, rows...)
	run.Finish(opt.Tolerance)
	return run, nil
}

// cascadeDocs are the documented figures of a cascade variant's count rows.
type cascadeDocs struct{ busy, pending, peak string }

// apply sets the documented figures on the rows of a cascade variant, by their kind.
func (d cascadeDocs) apply(rows []results.Row) {
	for i := range rows {
		var text string
		switch rows[i].Server {
		case cascadeBusy:
			text = d.busy
		case cascadePending:
			text = d.pending
		case cascadePeak:
			text = d.peak
		}
		rows[i].Documented = text
	}
}

// The server notes of the cascade's count rows, which also tell apply which row is which.
const (
	cascadeBusy    = "workers holding a request"
	cascadePending = "requests waiting for a connection"
	cascadePeak    = "the most requests inventory held at once"
)

// cascadeRecord is what one request of the cascade measured, in times from the pause's start.
type cascadeRecord struct {
	worker, leased, end time.Duration // leased -1: never
	outcome             vocab.Outcome
}

// cascade runs one variant: as many requests as workers arrive together as inventory pauses,
// and a health check arrives at a third and at two thirds of the pause.
func (c *Cascade) cascade(ctx context.Context, opt Options, d *upstream.Downstream, name string, s spec, starting func(time.Duration)) ([]results.Row, []results.Call, error) {
	b, err := build(opt.profile(), s)
	if err != nil {
		return nil, nil, err
	}
	defer b.c.Close()
	lease := b.limits.LeaseTimeout
	if b.limits.Profile == model.Go {
		lease = 0 // net/http's wait for MaxConnsPerHost has no timeout
	}
	width := b.modelPool(c.Workers)
	if c.Capacity > 0 {
		width = min(width, c.Capacity)
	}
	handoff, err := c.handoff(ctx, b, d, width)
	if err != nil {
		return nil, nil, err
	}
	health := []time.Duration{c.Pause / 3, 2 * c.Pause / 3}
	m := model.Cascade{Workers: c.Workers, Pool: b.modelPool(c.Workers), LeaseTimeout: lease, Requests: c.Workers,
		Health: health, Pause: c.Pause, Service: c.Service + handoff, Capacity: c.Capacity}
	pred := m.Predict()
	m.Service = c.Service
	prod := m.Predict() // the production figures: scaled up, without this machine's hand-off
	starting(pred.Recovered)

	d.Fake().Reset()
	d.ResetCounts()
	w := upstream.NewWorkers(c.Workers)
	beh := fakesrv.Behaviour{Delay: c.Service}
	recs := make([]cascadeRecord, c.Workers)
	calls := make([]results.Call, c.Workers)
	waits := make([]time.Duration, len(health))
	// Every request's goroutine is started first and released at once, so that starting 200
	// goroutines does not count as queueing.
	start := make(chan struct{})
	var t0 time.Time
	var g errgroup.Group
	for i := range recs {
		g.Go(func() error {
			<-start
			var res workerResult
			got, err := w.Do(ctx, func() {
				r, err := callURL(ctx, b.c, d.URL, beh, strconv.Itoa(i))
				res = workerResult{r, err, time.Since(t0)}
			})
			if err != nil {
				return err
			}
			if res.err != nil {
				return res.err
			}
			worker := got.Sub(t0)
			rec := cascadeRecord{worker: worker, leased: -1, end: res.end, outcome: res.r.Outcome}
			if a := res.r.Attempts[0]; a.Outcome != vocab.LeaseTimeout {
				rec.leased = worker + a.Lease
			}
			recs[i] = rec
			// One lane per variant (laneSep): the requests stacked, a track each, draw the
			// workers over time, leasing and waiting.
			calls[i] = timeline(name+laneSep+"requests", res.r, worker)
			return nil
		})
	}
	for j, at := range health {
		g.Go(func() error {
			<-start
			if !clock.SleepUntil(ctx, t0.Add(at)) {
				return ctx.Err()
			}
			asked := time.Now()
			got, err := w.Do(ctx, func() {})
			waits[j] = got.Sub(asked)
			return err
		})
	}
	t0 = time.Now()
	d.PauseUntil(t0.Add(c.Pause))
	close(start)
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	rows := c.cascadeRows(name, pred, prod, recs, waits, health, d.Peak())
	for i := range rows {
		if rows[i].Server == "" && rows[i].ExpectedMs != nil {
			rows[i].Server = fmt.Sprintf("model: %v per call + %.1f ms measured hand-off", c.Service, float64(handoff)/float64(time.Millisecond))
		}
	}
	return rows, calls, ctx.Err()
}

// handoffBatches is how many batches measure the hand-off.
const handoffBatches = 4

// handoff measures what a call costs beyond the downstream's service time on this machine
// when a backlog drains (loopback, the server's wake-up, the pool handing the connection to
// the next waiter): handoffBatches + 1 batches of width calls started together through b,
// width being what serves the backlog at once (the pool, or the downstream's capacity when it
// is smaller), timed from the end of the first batch, which dials. Each batch pays the
// hand-off once; the model takes it as part of the service time.
func (c *Cascade) handoff(ctx context.Context, b built, d *upstream.Downstream, width int) (time.Duration, error) {
	d.PauseUntil(time.Time{})
	beh := fakesrv.Behaviour{Delay: c.Service}
	n := width * (handoffBatches + 1)
	ends := make([]time.Duration, n)
	start := make(chan struct{})
	var t0 time.Time
	var g errgroup.Group
	for i := range ends {
		g.Go(func() error {
			<-start
			res, err := callURL(ctx, b.c, d.URL, beh, "hand-off")
			if err != nil {
				return err
			}
			if res.Outcome != vocab.OK {
				return fmt.Errorf("measure the hand-off: %w", res.Attempts[len(res.Attempts)-1].Err)
			}
			ends[i] = time.Since(t0)
			return nil
		})
	}
	t0 = time.Now()
	close(start)
	if err := g.Wait(); err != nil {
		return 0, err
	}
	// The first batch dials the connections; the batches after it hand them over.
	slices.Sort(ends)
	drain := ends[n-1] - ends[width-1]
	return (max(drain-handoffBatches*c.Service, 0) / handoffBatches).Round(100 * time.Microsecond), ctx.Err()
}

// workerResult is a call's result as a worker saw it, with when its worker was freed.
type workerResult struct {
	r   *client.Result
	err error
	end time.Duration
}

// cascadeRows turns a cascade variant's model and measurements into rows.
func (c *Cascade) cascadeRows(name string, pred, production model.CascadePrediction, recs []cascadeRecord, waits, health []time.Duration, peak int) []results.Row {
	look := health[0]
	prod := func(d time.Duration) string { return (d * cascadeScale).String() }
	busy, pending := 0, 0
	for _, r := range recs {
		got := r.leased
		if got < 0 {
			got = r.end
		}
		if r.worker <= look && look < r.end {
			busy++
		}
		if r.worker <= look && look < got {
			pending++
		}
	}
	rows := []results.Row{
		{Name: fmt.Sprintf("%s: workers busy at %v (%s in production)", name, look, prod(look)),
			ExpectedCalls: pred.BusyAt(look), Calls: busy, Server: cascadeBusy},
		{Name: fmt.Sprintf("%s: waiting at the pool at %v", name, look),
			ExpectedCalls: pred.PendingAt(look), Calls: pending, Server: cascadePending},
	}
	outcomes := map[vocab.Outcome]bool{}
	for _, r := range recs {
		outcomes[r.outcome] = true
	}
	for _, cl := range pred.Calls {
		outcomes[cl.Outcome] = true
	}
	for _, o := range vocab.Outcomes() {
		if !outcomes[o] {
			continue
		}
		want := pred.Ends(o)
		var got []time.Duration
		for _, r := range recs {
			if r.outcome == o {
				got = append(got, r.end)
			}
		}
		slices.Sort(got)
		row := results.Row{ExpectedOutcome: o, ExpectedCalls: len(want), Calls: len(got)}
		if len(want) > 0 {
			row.ExpectedMs = expectedMs(want[(len(want)-1)/2])
		}
		if len(got) > 0 {
			row.Outcome, row.MeasuredMs = o, results.Ms(got[(len(got)-1)/2])
			row.Server = fmt.Sprintf("ended %s to %s", fmtMs(got[0]), fmtMs(got[len(got)-1]))
		}
		switch o {
		case vocab.OK:
			row.Name = name + ": answered (median end)"
		case vocab.LeaseTimeout:
			row.Name = name + ": no connection in time (median end)"
		default:
			row.Name = fmt.Sprintf("%s: %s (median end)", name, o)
		}
		rows = append(rows, row)
	}
	for j, at := range health {
		rows = append(rows, results.Row{
			Name:       fmt.Sprintf("%s: health check at %v waits for a worker (x%d in production: %s)", name, at, cascadeScale, prod(production.Health[j])),
			ExpectedMs: expectedMs(pred.Health[j]), MeasuredMs: results.Ms(waits[j]),
			ExpectedCalls: 1, Calls: 1,
		})
	}
	var last time.Duration
	for _, r := range recs {
		last = max(last, r.end)
	}
	rows = append(rows,
		results.Row{Name: fmt.Sprintf("%s: recovered, the last worker freed (x%d: %s)", name, cascadeScale, prod(production.Recovered)),
			ExpectedMs: expectedMs(pred.Recovered), MeasuredMs: results.Ms(last), ExpectedCalls: len(recs), Calls: len(recs)},
		results.Row{Name: name + ": requests on inventory at once, at the peak",
			ExpectedCalls: pred.PeakDownstream, Calls: peak, Server: cascadePeak},
	)
	return rows
}

// sizing runs the pool sizing row: calls at a steady rate through a pool of QPS x p99 x 1.5
// connections, where p99 is the downstream's time per call, as the model has it.
func (c *Cascade) sizing(ctx context.Context, opt Options, d *upstream.Downstream) ([]results.Row, error) {
	pool := model.PoolSize(float64(c.QPS), c.Hold, sizingHeadroom)
	b, err := build(opt.profile(), spec{Pool: pool, LeaseTimeout: c.LeaseTimeout})
	if err != nil {
		return nil, err
	}
	defer b.c.Close()
	n := c.sizingCalls()
	opt.progress(c.Window+c.Hold, "%s · pool sizing: %d calls at %d/s through %d connections", c.Info().Name, n, c.QPS, pool)
	d.PauseUntil(time.Time{})
	beh := fakesrv.Behaviour{Delay: c.Hold}
	type span struct {
		from, to time.Duration
		lease    time.Duration // the wait for a connection
		outcome  vocab.Outcome
		took     time.Duration
	}
	spans := make([]span, n)
	t0 := time.Now()
	var g errgroup.Group
	for i := range spans {
		g.Go(func() error {
			at := time.Duration(float64(i) / float64(c.QPS) * float64(time.Second))
			if !clock.SleepUntil(ctx, t0.Add(at)) {
				return ctx.Err()
			}
			start := time.Since(t0)
			res, err := callURL(ctx, b.c, d.URL, beh, "size"+strconv.Itoa(i))
			if err != nil {
				return err
			}
			a := res.Attempts[0]
			spans[i] = span{from: start + a.Lease, to: time.Since(t0), lease: a.Lease, outcome: res.Outcome, took: res.Elapsed}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// The leased peak: a sweep over the spans' starts and ends, ends first at a tie.
	type edge struct {
		at time.Duration
		d  int
	}
	var edges []edge
	var held, longest time.Duration
	waited, queued, ok := 0, 0, 0
	var took []time.Duration
	for _, s := range spans {
		edges = append(edges, edge{s.from, 1}, edge{s.to, -1})
		held += s.to - s.from
		longest = max(longest, s.lease)
		if s.lease > time.Millisecond {
			queued++
		}
		if s.lease > c.Hold/2 {
			waited++
		}
		if s.outcome == vocab.OK {
			ok++
			took = append(took, s.took)
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return a.d - b.d
	})
	peak, cur := 0, 0
	for _, e := range edges {
		cur += e.d
		peak = max(peak, cur)
	}
	// The pool keeps up when no call waits for a connection a significant part of a call's
	// time (half of it); a wait of a millisecond or two, when a late timer bunches two calls,
	// is in the server column. A pool below Little's average makes the waits grow without end.
	keepsUp := fmt.Sprintf("no call waited over %v for a connection", c.Hold/2)
	measured := keepsUp
	if waited > 0 {
		measured = fmt.Sprintf("%d calls waited over %v for a connection", waited, c.Hold/2)
	}
	mean := float64(held) / float64(c.Window+c.Hold)
	little := model.Concurrency(float64(c.QPS), c.Hold)
	rows := []results.Row{{
		Name:            fmt.Sprintf("sizing: %d/s x p99 %v x %.1f = pool %d", c.QPS, c.Hold, sizingHeadroom, pool),
		ExpectedOutcome: results.State(keepsUp), Outcome: results.State(measured),
		Server: fmt.Sprintf("Little's law: %.1f leased on average; measured %.1f, peak %d of %d; %d waited over 1 ms, longest %s",
			little, mean, peak, pool, queued, fmtMs(longest)),
	}}
	row := results.Row{Name: "sizing: calls answered (median time)", ExpectedOutcome: vocab.OK, ExpectedCalls: n, Calls: ok,
		ExpectedMs: expectedMs(c.Hold)}
	if ok > 0 {
		slices.Sort(took)
		row.Outcome, row.MeasuredMs = vocab.OK, results.Ms(took[(len(took)-1)/2])
	}
	return append(rows, row), ctx.Err()
}

// budgets runs the chain three times: growing timeouts, shrinking ones, and growing ones with
// the remaining budget passed down.
func (c *Cascade) budgets(ctx context.Context, opt Options) ([]results.Row, error) {
	p, err := LookupProfile(opt.profile())
	if err != nil {
		return nil, err
	}
	variants := []struct {
		name      string
		chain     model.Chain
		propagate bool
	}{
		{fmt.Sprintf("budgets, growing: gateway %v, order %v", c.Gateway, c.Order), model.Chain{Timeouts: []time.Duration{c.Gateway, c.Order}, Work: c.Work}, false},
		{fmt.Sprintf("budgets, shrinking: gateway %v, order %v", c.Gateway, c.Shrunk), model.Chain{Timeouts: []time.Duration{c.Gateway, c.Shrunk}, Work: c.Work}, false},
		{fmt.Sprintf("budgets, propagated: gateway %v, order %v, %s", c.Gateway, c.Order, vocab.DeadlineHeader), model.Chain{Timeouts: []time.Duration{c.Gateway, c.Order}, Work: c.Work, Propagate: true}, true},
	}
	var rows []results.Row
	for i, v := range variants {
		if v.propagate && !p.PropagatesDeadline {
			rows = append(rows, results.Row{Name: v.name, Skipped: fmt.Sprintf("the %s client sends no budget", p.Name)})
			continue
		}
		pred := v.chain.Predict()
		opt.progress(max(v.chain.Timeouts[1], v.chain.Work), "%s · budgets %d/%d", c.Info().Name, i+1, len(variants))
		r, err := c.chain(ctx, opt, v.name, v.chain, pred)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// chain runs one chain: the gateway's client calls order, an HTTP hop whose handler calls
// inventory (a fake server that reserves, then works) and keeps at it whatever its caller
// does, as a thread blocked in a call does.
func (c *Cascade) chain(ctx context.Context, opt Options, name string, ch model.Chain, pred model.ChainPrediction) ([]results.Row, error) {
	inv, err := newServer()
	if err != nil {
		return nil, err
	}
	defer inv.Close()
	beh := fakesrv.Behaviour{Order: "chain", Delay: ch.Work}
	orderDone := make(chan time.Time, 1) // when order's handler ended
	order, err := upstream.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusGatewayTimeout
		defer func() { orderDone <- time.Now() }()
		deadline := ch.Timeouts[1]
		if ch.Propagate {
			if ms, err := strconv.Atoi(r.Header.Get(vocab.DeadlineHeader)); err == nil {
				deadline = min(deadline, time.Duration(ms)*time.Millisecond)
			}
		}
		b, err := build(opt.profile(), spec{Deadline: deadline, PropagateDeadline: ch.Propagate})
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		defer b.c.Close()
		res, err := callURL(context.WithoutCancel(r.Context()), b.c, inv.URL, beh, "")
		if err == nil && res.Outcome == vocab.OK {
			status = res.Status
		}
		w.WriteHeader(status)
	}))
	if err != nil {
		return nil, err
	}
	defer order.Close()
	gw, err := build(opt.profile(), spec{Deadline: ch.Timeouts[0], PropagateDeadline: ch.Propagate})
	if err != nil {
		return nil, err
	}
	defer gw.c.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, order.URL+"/order", nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	t0 := time.Now()
	res, _ := gw.c.Do(ctx, req)
	var orderEnd time.Duration
	select {
	case at := <-orderDone:
		orderEnd = at.Sub(t0)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(ch.Timeouts[1] + ch.Work + time.Second):
		return nil, fmt.Errorf("%s: order's handler did not end", name)
	}
	log := settled(ctx, inv, 1)
	var invEnd time.Duration
	if len(log) > 0 && !log[0].Finished.IsZero() {
		invEnd = log[0].Finished.Sub(t0)
	}
	wantOutcome := vocab.OK
	if pred.TimedOut {
		wantOutcome = vocab.Deadline
	}
	gaveUp := res.Elapsed
	after := func(end time.Duration) time.Duration { return max(end-gaveUp, 0) }
	return []results.Row{
		{Name: name + ": the gateway's call ends", ExpectedOutcome: wantOutcome, Outcome: res.Outcome,
			ExpectedMs: expectedMs(pred.GaveUp), MeasuredMs: results.Ms(gaveUp), ExpectedCalls: 1, Calls: 1,
			Server: fmt.Sprintf("status %d", res.Status)},
		{Name: name + ": order works on after the gateway gave up",
			ExpectedMs: expectedMs(pred.Hops[0].After), MeasuredMs: results.Ms(after(orderEnd)), ExpectedCalls: 1, Calls: 1,
			Server: "order's handler ended at " + fmtMs(orderEnd)},
		{Name: name + ": inventory works on after the gateway gave up",
			ExpectedMs: expectedMs(pred.Hops[1].After), MeasuredMs: results.Ms(after(invEnd)), ExpectedCalls: 1, Calls: 1,
			ExpectedExecutions: results.Count(btoi(pred.Executed)), ServerExecutions: results.Count(inv.TotalReservations()),
			Server: inventoryNote(log)},
	}, ctx.Err()
}

// inventoryNote says what inventory did with the chain's call.
func inventoryNote(log []fakesrv.Request) string {
	if len(log) == 0 {
		return "never reached"
	}
	if log[0].Rejected {
		return "refused at once: budget " + log[0].Budget.String()
	}
	return serverNote(log[0])
}

// hedgeSpacing is the time between the starts of the hedging rows' calls.
const hedgeSpacing = 5 * time.Millisecond

// errNotOK is a labrun call that did not end ok, for the hedge.
var errNotOK = errors.New("call did not end ok")

// hedging runs the hedging rows: the calls without a hedge, with labrun's own hedge
// (upstream.Hedge over the profile's client) and with github.com/cristalhq/hedgedhttp over
// net/http's Transport, against a downstream whose slow first requests a copy overtakes.
func (c *Cascade) hedging(ctx context.Context, opt Options, d *upstream.Downstream) ([]results.Row, error) {
	tail := model.Tail{Fast: c.HedgeFast, Slow: c.HedgeSlow, SlowFraction: 1 / float64(c.HedgeEvery)}
	hedged := tail.Hedge(c.HedgeAfter)
	beh := fakesrv.Behaviour{Delay: c.HedgeFast}
	b, err := build(opt.profile(), spec{Pool: 20})
	if err != nil {
		return nil, err
	}
	defer b.c.Close()
	labrun := func(ctx context.Context, tag string) error {
		res, err := callURL(ctx, b.c, d.URL, beh, tag)
		if err == nil && res.Outcome != vocab.OK {
			err = errNotOK
		}
		return err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 20}
	defer tr.CloseIdleConnections()
	rt, err := hedgedhttp.NewRoundTripper(c.HedgeAfter, 2, tr)
	if err != nil {
		return nil, fmt.Errorf("hedgedhttp: %w", err)
	}
	hc := &http.Client{Transport: rt}
	lib := func(ctx context.Context, tag string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+beh.Path()+sep(beh.Path())+"call="+tag, nil)
		if err != nil {
			return fmt.Errorf("build request: %w", err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	variants := []struct {
		name  string
		do    func(ctx context.Context, tag string) error
		p99   time.Duration
		extra float64
	}{
		{"hedging: no hedge", labrun, tail.Quantile(0.99), 0},
		{fmt.Sprintf("hedging: labrun's hedge after %v", c.HedgeAfter), func(ctx context.Context, tag string) error {
			_, _, err := upstream.Hedge(ctx, c.HedgeAfter, func(ctx context.Context, _ int) (struct{}, error) { return struct{}{}, labrun(ctx, tag) })
			return err
		}, hedged.P99, hedged.Extra},
		{fmt.Sprintf("hedging: hedgedhttp after %v", c.HedgeAfter), lib, hedged.P99, hedged.Extra},
	}
	var rows []results.Row
	for i, v := range variants {
		opt.progress(time.Duration(c.HedgeCalls)*hedgeSpacing+c.HedgeSlow, "%s · hedging %d/%d", c.Info().Name, i+1, len(variants))
		d.SetTail(upstream.Tail{Every: c.HedgeEvery, Slow: c.HedgeSlow - c.HedgeFast})
		d.ResetCounts()
		took := make([]time.Duration, c.HedgeCalls)
		failed := make([]bool, c.HedgeCalls)
		t0 := time.Now()
		var g errgroup.Group
		for k := range took {
			g.Go(func() error {
				if !clock.SleepUntil(ctx, t0.Add(time.Duration(k)*hedgeSpacing)) {
					return ctx.Err()
				}
				start := time.Now()
				err := v.do(ctx, strconv.Itoa(k))
				took[k], failed[k] = time.Since(start), err != nil
				return nil
			})
		}
		_ = g.Wait()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ok := 0
		for _, f := range failed {
			if !f {
				ok++
			}
		}
		outcome := vocab.OK
		if ok < c.HedgeCalls {
			outcome = vocab.Failed
		}
		sorted := slices.Clone(took)
		slices.Sort(sorted)
		rank := int(math.Ceil(0.99*float64(len(sorted)))) - 1
		rows = append(rows,
			results.Row{Name: fmt.Sprintf("%s: p99 of %d calls", v.name, c.HedgeCalls), ExpectedOutcome: vocab.OK, Outcome: outcome,
				ExpectedMs: expectedMs(v.p99), MeasuredMs: results.Ms(sorted[rank]), ExpectedCalls: c.HedgeCalls, Calls: ok,
				Server: fmt.Sprintf("p50 %s, max %s", fmtMs(sorted[(len(sorted)-1)/2]), fmtMs(sorted[len(sorted)-1]))},
			results.Row{Name: fmt.Sprintf("%s: requests the downstream received (+%.0f%%)", v.name, v.extra*100),
				ExpectedExecutions: results.Count(c.HedgeCalls + int(math.Round(v.extra*float64(c.HedgeCalls)))),
				ServerExecutions:   results.Count(d.Arrived())},
		)
	}
	d.SetTail(upstream.Tail{})
	return rows, nil
}

// stormSpacing is the time between the starts of the timeout storm's calls.
const stormSpacing = 40 * time.Millisecond

// timeWaitNote says where the TIME_WAIT count comes from and why it is exact.
const timeWaitNote = "the caller's sockets to the downstream in TIME_WAIT, from /proc/net/tcp: exact, as the kernel " +
	"keeps each 60 s and reuses none younger than 1 s (tcp_tw_reuse), and the row lasts under a second on a port of its own"

// storm runs the timeout storm: calls at a steady rate while the downstream's latency stays
// past the read timeout, then recovers; without a breaker and through
// github.com/sony/gobreaker/v2. Every timed-out call closes its connection, so the next one
// dials: the timeout storm is a handshake storm, and the caller, which closes first, holds
// each socket in TIME_WAIT. The breaker sheds the calls while it is open.
func (c *Cascade) storm(ctx context.Context, opt Options) ([]results.Row, error) {
	calls := make([]model.BreakerCall, c.StormCalls)
	for i := range calls {
		at := time.Duration(i) * stormSpacing
		calls[i] = model.BreakerCall{At: at, Took: c.StormFast, Fails: at < c.Storm}
		if calls[i].Fails {
			calls[i].Took = c.StormRead
		}
	}
	breaker := model.Breaker{Trip: c.Trip, Open: c.BreakerOpen, HalfOpenMax: 1}
	variants := []struct {
		name    string
		breaker bool
		shed    []bool
	}{
		{"storm, no breaker", false, nil},
		{fmt.Sprintf("storm, gobreaker (%d failures, open %v)", c.Trip, c.BreakerOpen), true, breaker.Predict(calls).Shed},
	}
	var rows []results.Row
	for i, v := range variants {
		opt.progress(time.Duration(c.StormCalls)*stormSpacing+c.StormRead, "%s · timeout storm %d/%d", c.Info().Name, i+1, len(variants))
		r, err := c.stormVariant(ctx, opt, v.name, v.breaker, calls, v.shed, breaker)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// stormVariant runs the storm's calls once, through a breaker or not.
//
// Each variant has a downstream of its own, on a new port: Linux reuses for a new connection
// to the same address a local port whose TIME_WAIT socket is over a second old
// (tcp_tw_reuse, on for loopback), which would hide a socket of this row behind one of an
// earlier row. Within the row, which lasts under a second, no TIME_WAIT socket is reused.
func (c *Cascade) stormVariant(ctx context.Context, opt Options, name string, useBreaker bool,
	calls []model.BreakerCall, shed []bool, br model.Breaker) ([]results.Row, error) {
	d, err := upstream.NewDownstream(0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	_, portText, err := net.SplitHostPort(strings.TrimPrefix(d.URL, "http://"))
	if err != nil {
		return nil, fmt.Errorf("downstream address: %w", err)
	}
	port, _ := strconv.Atoi(portText)
	b, err := build(opt.profile(), spec{Pool: 20, ReadTimeout: c.StormRead})
	if err != nil {
		return nil, err
	}
	defer b.c.Close()
	if res, err := callURL(ctx, b.c, d.URL, fakesrv.Behaviour{}, "warm"); err != nil || res.Outcome != vocab.OK {
		return nil, fmt.Errorf("%s: the warm-up call failed", name)
	}
	before, sockErr := upstream.TimeWaitSet(port)
	opened0, _ := d.Conns()
	cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name: "inventory", MaxRequests: uint32(br.HalfOpenMax), Timeout: br.Open,
		ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= uint32(br.Trip) },
	})
	beh := fakesrv.Behaviour{Delay: c.StormFast}
	outcomes := make([]vocab.Outcome, len(calls))
	wasShed := make([]bool, len(calls))
	slow := 0
	for _, cl := range calls {
		if cl.Fails {
			slow++
		}
	}
	t0 := time.Now()
	d.SetTail(upstream.Tail{Every: 1, Slow: c.StormSlow - c.StormFast, Calls: slow})
	var g errgroup.Group
	for i := range calls {
		g.Go(func() error {
			if !clock.SleepUntil(ctx, t0.Add(calls[i].At)) {
				return ctx.Err()
			}
			do := func() (struct{}, error) {
				res, err := callURL(ctx, b.c, d.URL, beh, strconv.Itoa(i))
				if err != nil {
					return struct{}{}, err
				}
				outcomes[i] = res.Outcome
				if res.Outcome != vocab.OK {
					return struct{}{}, errNotOK
				}
				return struct{}{}, nil
			}
			if !useBreaker {
				_, err := do()
				if errors.Is(err, errNotOK) {
					err = nil
				}
				return err
			}
			_, err := cb.Execute(do)
			wasShed[i] = errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	opened1, _ := d.Conns()
	wantDials, wantCloses := model.StormConns(calls, shed, 1)
	wantTimeouts, wantOK, wantShed := 0, 0, 0
	for i, cl := range calls {
		switch {
		case shed != nil && shed[i]:
			wantShed++
		case cl.Fails:
			wantTimeouts++
		default:
			wantOK++
		}
	}
	gotTimeouts, gotOK, gotShed := 0, 0, 0
	for i, o := range outcomes {
		switch {
		case wasShed[i]:
			gotShed++
		case o == vocab.ReadTimeout:
			gotTimeouts++
		case o == vocab.OK:
			gotOK++
		}
	}
	rows := []results.Row{
		{Name: name + ": calls that timed out", ExpectedCalls: wantTimeouts, Calls: gotTimeouts},
		{Name: name + ": calls answered", ExpectedCalls: wantOK, Calls: gotOK},
		{Name: name + ": new connections (handshakes)", ExpectedNewConnections: results.Count(wantDials),
			NewConnections: results.Count(opened1 - opened0), Server: fmt.Sprintf("%d accepted", opened1-opened0)},
	}
	tw := results.Row{Name: name + ": caller's sockets in TIME_WAIT", ExpectedCalls: wantCloses, Server: timeWaitNote}
	if sockErr != nil {
		tw.Skipped = sockErr.Error()
	} else {
		n, err := upstream.NewTimeWaits(ctx, port, before)
		if err != nil {
			tw.Skipped = err.Error()
		}
		tw.Calls = n
	}
	rows = append(rows, tw)
	if useBreaker {
		rows = append(rows, results.Row{Name: name + ": calls shed", ExpectedCalls: wantShed, Calls: gotShed})
	}
	return rows, ctx.Err()
}
