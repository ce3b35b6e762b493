package experiments

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Inventory is the demo: the inventory client of docs/experiments.md, configured end to end,
// makes three calls one after another from a cold pool: a normal reservation, a stuck one
// and a trickling read. Then it checks the pool and the server's reservation count.
type Inventory struct {
	Pool           int
	MaxTotal       int
	ConnectTimeout time.Duration
	LeaseTimeout   time.Duration
	ReadTimeout    time.Duration
	Deadline       time.Duration
	// PropagateDeadline sends the remaining budget in X-Deadline-Ms (exercise 4).
	PropagateDeadline bool

	// Normal and Stuck are the server's times for the two reservations; TrickleBytes and
	// TrickleEvery the trickled read.
	Normal       time.Duration
	Stuck        time.Duration
	TrickleBytes int
	TrickleEvery time.Duration
}

// The inventory client's settings that are not parameters: validation after 2 s idle is what
// net/http's background read on idle connections does continuously, so it needs no setting.
const (
	inventoryTimeToLive = 5 * time.Minute
	inventoryEvictIdle  = 30 * time.Second
)

// NewInventory returns the demo with the documented configuration.
func NewInventory() *Inventory {
	return &Inventory{
		Pool: 30, MaxTotal: 100,
		ConnectTimeout: 100 * time.Millisecond, LeaseTimeout: 50 * time.Millisecond,
		ReadTimeout: 250 * time.Millisecond, Deadline: 300 * time.Millisecond,
		Normal: 5 * time.Millisecond, Stuck: time.Second,
		TrickleBytes: 10, TrickleEvery: 100 * time.Millisecond,
	}
}

// Info implements Experiment.
func (*Inventory) Info() Info {
	return Info{
		Name:  "demo",
		Alone: true,
		Title: "the inventory client, end to end",
		Description: "The configured inventory client (pool 30 per route / 100 in all, connect 100 ms, " +
			"lease 50 ms, read 250 ms, deadline 300 ms, time to live 5 min, idle eviction 30 s, " +
			"no automatic retries) makes three calls one after another: a reservation the server " +
			"answers in 5 ms, one it takes 1 s for, and a read it trickles one byte every 100 ms. " +
			"The stuck call ends on the read timeout, the trickle on the deadline; both close their " +
			"connections, so the pool ends with none available, and the server counts two " +
			"reservations: the stuck call's happened although the client had given up. With " +
			"--propagate-deadline the client sends its remaining budget and the server refuses the " +
			"stuck call at once with a 503, reserving nothing.",
		Examples: []string{
			"labrun demo",
			"labrun demo --deadline 200ms       # exercise 3: the stuck call ends on the deadline",
			"labrun demo --propagate-deadline   # exercise 4: the server refuses what it cannot finish",
		},
	}
}

// Params implements Experiment.
func (v *Inventory) Params() []Param {
	return []Param{
		{Name: "pool", Usage: "connections per route", Int: &v.Pool, Min: 1, Max: 1000},
		{Name: "max-total", Usage: "connections in all", Int: &v.MaxTotal, Min: 1, Max: 10000},
		{Name: "connect-timeout", Usage: "connect timeout (0 = none)", Duration: &v.ConnectTimeout},
		{Name: "lease-timeout", Usage: "lease timeout (0 = none)", Duration: &v.LeaseTimeout},
		{Name: "read-timeout", Usage: "read timeout, idle per read (0 = none)", Duration: &v.ReadTimeout},
		{Name: "deadline", Usage: "total deadline of each call (0 = none)", Duration: &v.Deadline},
		{Name: "propagate-deadline", Usage: "send the remaining budget in X-Deadline-Ms", Bool: &v.PropagateDeadline},
		{Name: "normal", Usage: "server time of the normal reservation", Duration: &v.Normal},
		{Name: "stuck", Usage: "server time of the stuck reservation", Duration: &v.Stuck},
		{Name: "bytes", Usage: "bytes of the trickled read", Int: &v.TrickleBytes, Min: 1, Max: fakesrv.MaxBytes},
		{Name: "every", Usage: "pause before each trickled byte", Duration: &v.TrickleEvery},
	}
}

// Check implements Checker.
func (v *Inventory) Check() error {
	if v.Pool > v.MaxTotal {
		return fmt.Errorf("--pool (%d) must not exceed --max-total (%d)", v.Pool, v.MaxTotal)
	}
	return nil
}

// CheckProfile implements ProfileChecker: only a client that propagates its deadline can run
// --propagate-deadline.
func (v *Inventory) CheckProfile(p Profile) error {
	if !v.PropagateDeadline || p.PropagatesDeadline {
		return nil
	}
	var can []string
	for _, q := range Profiles() {
		if q.PropagatesDeadline {
			can = append(can, q.Name)
		}
	}
	return fmt.Errorf("--propagate-deadline needs --client %s: %s sends no budget", strings.Join(can, " or "), p.Name)
}

// inventoryCall is one of the demo's calls: what the server does, and the documented figure.
type inventoryCall struct {
	name string
	b    fakesrv.Behaviour
	doc  figure
}

// calls are the demo's three calls, in order.
func (v *Inventory) calls() []inventoryCall {
	return []inventoryCall{
		{fmt.Sprintf("normal: reserve, server %v", v.Normal), fakesrv.Behaviour{Order: "normal", Delay: v.Normal},
			figure{"94 ms, ok (cold start)", 94}},
		{fmt.Sprintf("stuck: reserve, server %v", v.Stuck), fakesrv.Behaviour{Order: "stuck", Delay: v.Stuck},
			figure{"251 ms, read-timeout", 251}},
		{fmt.Sprintf("trickle: %d B x %v", v.TrickleBytes, v.TrickleEvery), fakesrv.Behaviour{Bytes: v.TrickleBytes, Every: v.TrickleEvery},
			figure{"300 ms, deadline", 300}},
	}
}

// Run implements Experiment.
func (v *Inventory) Run(ctx context.Context, opt Options) (results.Run, error) {
	return serverRun(v, opt, func(run *results.Run, srv *fakesrv.Server) error {
		b, err := lab.Build(opt.profile(), lab.Spec{
			Pool: v.Pool, MaxTotal: v.MaxTotal,
			ConnectTimeout: v.ConnectTimeout, LeaseTimeout: v.LeaseTimeout,
			ReadTimeout: v.ReadTimeout, Deadline: v.Deadline,
			TimeToLive: inventoryTimeToLive, IdleTimeout: inventoryEvictIdle,
			PropagateDeadline: v.PropagateDeadline,
		})
		if err != nil {
			return err
		}
		defer b.C.Close()

		def := atDocumented(opt, v.Params(), NewInventory().Params())
		calls := v.calls()
		seq := make([]model.Call, len(calls))
		for i, cl := range calls {
			d := downstream(cl.b)
			d.HonoursBudget = v.PropagateDeadline
			seq[i] = model.Call{Downstream: d, Limits: b.Limits}
		}
		preds, idle := model.Sequence(v.Pool, 0, seq)

		run.Axis = "from the start of the first call (the calls run one after another)"
		wantReserved := 0
		t0 := time.Now()
		for i, cl := range calls {
			began := time.Since(t0)
			opt.progress(preds[i].Total, "%s · call %d/%d: %s", v.Info().Name, i+1, len(calls), cl.name)
			row, res, err := v.makeCall(ctx, b.C, srv, i, cl, preds[i], def)
			if err != nil {
				return err
			}
			run.Calls = append(run.Calls, lab.Timeline(cl.name, res, began))
			if cl.b.Order != "" {
				wantReserved += preds[i].Executions
			}
			run.Rows = append(run.Rows, row)
		}

		pool := v.poolRow(ctx, b, srv, idle, def)
		reserved := lab.Judged("server reservations", lab.Executions(results.Count(wantReserved), results.Count(srv.TotalReservations())),
			lab.Saw(fmt.Sprintf("normal %d, stuck %d", srv.Reservations("normal"), srv.Reservations("stuck"))))
		if def {
			reserved.Documented, reserved.DocumentedExecutions = "2 reservations", results.Count(2)
		}
		run.Rows = append(run.Rows, pool, reserved)
		return nil
	})
}

// makeCall makes the demo's call i, cl, and returns its row against the model's prediction p;
// def says whether the documented figure applies.
func (v *Inventory) makeCall(ctx context.Context, c lab.Caller, srv *fakesrv.Server, i int, cl inventoryCall, p model.Prediction, def bool) (row results.Row, res *client.Result, err error) {
	res, err = lab.Call(ctx, c, srv, cl.b, "")
	if err != nil {
		return row, nil, err
	}
	if err := ctx.Err(); err != nil {
		return row, nil, err
	}
	var want, got *int
	if p.Outcome == vocab.OK {
		status := 200
		if p.Attempts[len(p.Attempts)-1].Rejected {
			status = 503
		}
		want = results.Count(status)
	}
	if res.Status != 0 {
		got = results.Count(res.Status)
	}
	text, ms := documented(def, cl.doc)
	note := ""
	if log := lab.Settled(ctx, srv, i+1); len(log) > i {
		note = lab.ServerNote(log[i]) + lab.ReservationNote(log[i]) + budgetNote(log[i])
	}
	return lab.Judged(cl.name, lab.Called(p, res), lab.Status(want, got), lab.Documented(text, ms, nil), lab.Saw(note)), res, nil
}

// budgetNote adds to serverNote a refusal for want of budget (--propagate-deadline).
func budgetNote(r fakesrv.Request) string {
	if r.Rejected {
		return fmt.Sprintf("; refused: budget %s < work %s", lab.FmtMs(r.Budget), lab.FmtMs(r.Behaviour.Delay))
	}
	return ""
}

// poolRow checks the pool after the calls: HttpClient 5's statistics where the client has them,
// else (net/http) the connections the server sees open, which are the client's idle ones.
func (v *Inventory) poolRow(ctx context.Context, b lab.Built, srv *fakesrv.Server, idle int, def bool) results.Row {
	if b.Stats == nil {
		open := lab.SteadyOpen(ctx, srv)
		return lab.Judged("idle connections after the calls (server side)",
			lab.Ended(results.State(fmt.Sprintf("%d open", idle)), results.State(fmt.Sprintf("%d open", open))),
			lab.Saw(fmt.Sprintf("%s accepted; net/http has no pool statistics", vocab.Plural(srv.ConnsAccepted(), "connection"))))
	}
	stats := b.Stats()
	state := func(leased, pending, available, max int) vocab.Outcome {
		return results.State(fmt.Sprintf("leased %d, pending %d, available %d, max %d", leased, pending, available, max))
	}
	row := lab.Judged("pool after the calls", lab.Ended(state(0, 0, idle, b.MaxTotal), state(stats.Leased, stats.Pending, stats.Available, stats.Max)),
		lab.Saw(fmt.Sprintf("%s accepted, %d open", vocab.Plural(srv.ConnsAccepted(), "connection"), srv.ConnsOpen())))
	if def {
		row.Documented = string(state(0, 0, 0, 100))
	}
	return row
}
