package experiments

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Pool is experiment B: a pool of 5 connections per route and 20 calls started together
// against a server that takes 500 ms per call. Without a lease timeout the calls finish in
// batches, the server's time always 500 ms and the rest queueing inside the client; with a
// lease timeout the calls that find no connection fail fast.
type Pool struct {
	Pool         int
	Concurrency  int
	Delay        time.Duration
	LeaseTimeout time.Duration
}

// NewPool returns experiment B with its documented parameters.
func NewPool() *Pool {
	return &Pool{Pool: 5, Concurrency: 20, Delay: 500 * time.Millisecond, LeaseTimeout: 300 * time.Millisecond}
}

// Info implements Experiment.
func (*Pool) Info() Info {
	return Info{
		Name:  "exp-b",
		Topic: "pool",
		Title: "a small pool makes a healthy server slow",
		Description: "Concurrent calls share a small per-route pool against a server that takes the same " +
			"time for every call. Without a lease timeout the calls queue for a connection and " +
			"finish in batches; the server's time never changes, the rest is queueing in the " +
			"client. With a lease timeout the calls that find no connection fail early, before " +
			"they reach the server. Little's law sizes the pool: connections in use = arrival " +
			"rate x time each call holds one (pool = QPS x p99 latency x 1.5).",
		Examples: []string{
			"labrun exp-b",
			"labrun exp-b --pool 20          # exercise 1: a pool as large as the load",
			"labrun exp-b --pool 10",
			"labrun exp-b --lease-timeout 0  # only the variant without a lease timeout",
		},
	}
}

// Params implements Experiment.
func (p *Pool) Params() []Param {
	return []Param{
		{Name: "pool", Usage: "connections per route", Int: &p.Pool, Min: 1, Max: 1000},
		{Name: "concurrency", Usage: "calls started together", Int: &p.Concurrency, Min: 1, Max: 1000},
		{Name: "delay", Usage: "server time per call", Duration: &p.Delay},
		{Name: "lease-timeout", Usage: "lease timeout of the second variant (0 = skip it)", Duration: &p.LeaseTimeout},
	}
}

// Run implements Experiment.
func (p *Pool) Run(ctx context.Context, opt Options) (results.Run, error) {
	return serverRun(p, opt, func(run *results.Run, srv *fakesrv.Server) error {
		def := atDocumented(opt, p.Params(), NewPool().Params())
		base := lab.Spec{Pool: p.Pool, NoLeaseTimeout: true}
		type variant struct {
			name    string
			cfg     lab.Spec
			docs    map[vocab.Outcome][]figure // per outcome, per batch
			profile string                     // "" for --client
		}
		variants := []variant{{name: "no lease timeout", cfg: base, docs: map[vocab.Outcome][]figure{
			vocab.OK: {{"500 ms", 500}, {"1000 ms", 1000}, {"1600 ms", 1600}, {"2100-2200 ms", 0}}}}}
		if p.LeaseTimeout > 0 {
			cfg := lab.Spec{Pool: p.Pool, LeaseTimeout: p.LeaseTimeout}
			variants = append(variants, variant{name: "lease timeout " + p.LeaseTimeout.String(), cfg: cfg, docs: map[vocab.Outcome][]figure{
				vocab.OK: {{"500 ms, ok", 500}}, vocab.LeaseTimeout: {{"300 ms, lease-timeout", 300}}}})
		}
		// Two libraries' defaults beside it: the JDK HttpClient has no pool limit (every call gets a
		// connection at once), HttpClient 4.5 allows 2 per route (the calls go 2 at a time).
		if opt.profile() != ProfileJDK {
			variants = append(variants, variant{name: "jdk, no pool limit", profile: ProfileJDK})
		}
		if opt.profile() != ProfileHC4 {
			variants = append(variants, variant{name: fmt.Sprintf("hc4 defaults, %d per route", lab.HC4PerRoute), profile: ProfileHC4})
		}
		run.Axis = "from the moment all calls of a variant started together"
		for i, v := range variants {
			step := fmt.Sprintf("%s · variant %d/%d: %s, %d calls", p.Info().Name, i+1, len(variants), v.name, p.Concurrency)
			rows, calls, err := p.variant(ctx, cmp.Or(v.profile, opt.profile()), srv, v.name, v.cfg, func(expected time.Duration) { opt.progress(expected, "%s", step) })
			if err != nil {
				return err
			}
			run.Calls = append(run.Calls, calls...)
			for _, r := range rows {
				if docs := v.docs[vocab.Outcome(r.ExpectedOutcome)]; r.batch >= 0 && r.batch < len(docs) {
					r.Documented, r.DocumentedMs = documented(def, docs[r.batch])
				}
				run.Rows = append(run.Rows, r.Row)
			}
		}
		return nil
	})
}

// poolRow is a row with the index of its batch among the groups of the same outcome.
type poolRow struct {
	results.Row
	batch int
}

// variant runs the concurrent calls through one client configuration of a profile and returns
// its rows and its calls, in the order they ended. The client's pool is warmed with as many
// connections as it allows (--pool for a client without a limit).
func (p *Pool) variant(ctx context.Context, profile string, srv *fakesrv.Server, name string, s lab.Spec, starting func(expected time.Duration)) ([]poolRow, []results.Call, error) {
	bc, err := lab.Build(profile, s)
	if err != nil {
		return nil, nil, err
	}
	defer bc.C.Close()
	idle, err := lab.Warm(ctx, bc, srv, min(cmp.Or(bc.Pool, p.Pool), p.Pool))
	if err != nil {
		return nil, nil, err
	}
	b := fakesrv.Behaviour{Delay: p.Delay}
	preds := model.Simulate(model.Scenario{
		Calls: p.Concurrency, Pool: bc.ModelPool(p.Concurrency), Idle: idle, Downstream: downstream(b), Limits: bc.Limits,
	})
	var last time.Duration
	for _, pr := range preds {
		last = max(last, pr.Total)
	}
	starting(last)
	m, err := together(ctx, bc.C, srv, b, name, p.Concurrency)
	if err != nil {
		return nil, nil, err
	}
	log := lab.Settled(ctx, srv, 0)
	rows := groupRows(name, preds, m, serverTimes(log))
	want, conns := 0, 0
	for _, pr := range preds {
		want, conns = want+pr.Executions, conns+pr.Connects
	}
	rows = append(rows, poolRow{Row: lab.Judged(name+": requests the server executed, connections it accepted",
		lab.Calls(p.Concurrency, p.Concurrency), lab.Executions(results.Count(want), results.Count(len(log))),
		lab.Connections(results.Count(conns), results.Count(srv.ConnsAccepted()))), batch: -1})
	return rows, m.byEnd(), nil
}

// concurrent is what calls started together measured, each at its call's index.
type concurrent struct {
	ends       []time.Duration // from the common start
	outcomes   []vocab.Outcome
	leaseWaits []time.Duration // the first attempt's wait for a connection
	calls      []results.Call
}

// together makes n calls for b, started at the same moment, and waits for them all. Call i is
// tagged i in the server's log.
func together(ctx context.Context, c lab.Caller, srv *fakesrv.Server, b fakesrv.Behaviour, name string, n int) (concurrent, error) {
	m := concurrent{
		ends: make([]time.Duration, n), outcomes: make([]vocab.Outcome, n),
		leaseWaits: make([]time.Duration, n), calls: make([]results.Call, n),
	}
	start := make(chan struct{})
	var t0 time.Time
	g, gctx := errgroup.WithContext(ctx)
	for i := 0; i < n; i++ {
		g.Go(func() error {
			<-start
			began := time.Since(t0)
			res, err := lab.Call(gctx, c, srv, b, strconv.Itoa(i))
			if err != nil {
				return err
			}
			m.ends[i], m.outcomes[i], m.leaseWaits[i] = time.Since(t0), res.Outcome, res.Attempts[0].Lease
			m.calls[i] = lab.Timeline(fmt.Sprintf("%s: call %d", name, i+1), res, began)
			return nil
		})
	}
	t0 = time.Now()
	close(start)
	if err := g.Wait(); err != nil {
		return concurrent{}, err
	}
	return m, ctx.Err()
}

// byEnd returns the calls in the order they ended.
func (m concurrent) byEnd() []results.Call {
	order := make([]int, len(m.calls))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return m.ends[order[a]] < m.ends[order[b]] })
	sorted := make([]results.Call, len(order))
	for k, i := range order {
		sorted[k] = m.calls[i]
	}
	return sorted
}

// serverTimes returns the server's time to the head of each request that got one, by the
// request's call tag.
func serverTimes(log []fakesrv.Request) map[string]time.Duration {
	times := map[string]time.Duration{}
	for _, r := range log {
		if u, err := url.Parse(r.Path); err == nil && !r.HeadSent.IsZero() {
			times[u.Query().Get("call")] = r.HeadSent.Sub(r.Arrived)
		}
	}
	return times
}

// groupRows makes a row of every group of calls the model predicts to end alike (groupCalls),
// named after its batch, with how long the server and the client's queue held its calls.
func groupRows(name string, preds []model.Prediction, m concurrent, serverTime map[string]time.Duration) []poolRow {
	var rows []poolRow
	batches := map[vocab.Outcome]int{}
	for _, g := range groupCalls(preds, m.outcomes, m.ends) {
		n := -1
		if g.want > 0 {
			n = batches[g.outcome]
			batches[g.outcome]++
		}
		var label string
		switch {
		case g.want == 0:
			label = fmt.Sprintf("%s: unexpected %s", name, g.outcome)
		case g.outcome == vocab.OK:
			label = fmt.Sprintf("%s: batch %d", name, n+1)
		case g.outcome == vocab.LeaseTimeout:
			label = name + ": no connection in time"
		default:
			label = fmt.Sprintf("%s: %s", name, g.outcome)
		}
		row := poolRow{Row: lab.Judged(label, batch(g, m.outcomes, m.ends)), batch: n}
		var served, waited time.Duration
		reached := 0
		for _, i := range g.calls {
			if st, ok := serverTime[strconv.Itoa(i)]; ok {
				served, reached = max(served, st), reached+1
			}
			waited = max(waited, m.leaseWaits[i])
		}
		if reached == 0 {
			row.Server = fmt.Sprintf("never reached it; client queue %s", lab.FmtMs(waited))
		} else {
			row.Server = fmt.Sprintf("%s each; client queue up to %s", lab.FmtMs(served), lab.FmtMs(waited))
		}
		rows = append(rows, row)
	}
	return rows
}
