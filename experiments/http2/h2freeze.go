package http2

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/labrun/labrun/client/h2"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/results"
)

// This file holds experiment H's frozen node: a hung peer, met by net/http without and with
// its health check, and by OkHttp's read timeout.

// The frozen node: calls at freezeStarts, answered in freezeLatency until the node freezes at
// freezeAt. Go's health check is SendPingTimeout and PingTimeout of freezePing each; its
// Client.Timeout and the pool's call timeout are freezeTimeout; OkHttp's read timeout is
// freezeRead.
const (
	freezeLatency = 10 * time.Millisecond
	freezeAt      = 250 * time.Millisecond
	freezePing    = 100 * time.Millisecond
	freezeTimeout = 600 * time.Millisecond
	freezeRead    = 200 * time.Millisecond
)

// freezeStarts are chosen so that no call starts within 40 ms of a connection being dropped
// (at 410 and 701 ms with the health check), where the slightest delay would move it to
// another connection.
var freezeStarts = []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond,
	350 * time.Millisecond, 500 * time.Millisecond, 550 * time.Millisecond}

// freezeVariant is one client against the frozen node.
type freezeVariant struct {
	scenario string
	client   model.H2Client
	pred     model.H2Prediction
	calls    []h2Call
	newConns int // connections opened after the first
	ns       *h2Nodes
	err      error
}

// freeze runs the three clients against nodes that freeze, at once: each has its own node.
func (h *H2) freeze(ctx context.Context, opt lab.Options, host *h2Host, run *results.Run) error {
	vs := []*freezeVariant{
		{scenario: "go, no health check", client: model.H2Client{Rule: rules.H2Go(), Deadline: freezeTimeout}},
		{scenario: "go, health check", client: model.H2Client{Rule: rules.H2Go(), SendPingTimeout: freezePing, PingTimeout: freezePing, Deadline: freezeTimeout}},
		{scenario: "okhttp, read timeout", client: model.H2Client{Rule: rules.H2OkHttp(), Handshake: true, ReadTimeout: freezeRead, Deadline: freezeTimeout}},
	}
	var last time.Duration
	for _, v := range vs {
		ns, err := host.start([]model.H2Node{{Latency: freezeLatency, Frozen: true, FrozenAt: freezeAt}})
		if err != nil {
			for _, v := range vs {
				if v.ns != nil {
					v.ns.close()
				}
			}
			return err
		}
		v.ns = ns
		v.pred = model.SimulateH2(model.H2Scenario{Nodes: ns.model, Starts: freezeStarts, Client: v.client})
		last = max(last, lastEnd(v.pred.Calls))
	}
	opt.Step(last, "%s · a node freezes at %v: go without and with a health check, okhttp's read timeout", h.Info().Name, freezeAt)
	var wg sync.WaitGroup
	for _, v := range vs {
		wg.Go(func() { v.err = v.run(ctx) })
	}
	wg.Wait()
	for _, v := range vs {
		v.ns.close()
		if v.err != nil {
			return v.err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	after := func(_ int, c model.H2Call) bool { return c.Start >= freezeAt }
	name := fmt.Sprintf("node frozen at %v", freezeAt)
	noCheck, check, okhttp := vs[0], vs[1], vs[2]
	var before []int
	var predBefore []model.H2Call
	var callsBefore []h2Call
	for _, v := range vs {
		before = indexes(v.pred.Calls, func(_ int, c model.H2Call) bool { return c.Start < freezeAt })
		predBefore, callsBefore = append(predBefore, pick(v.pred.Calls, before)...), append(callsBefore, pick(v.calls, before)...)
	}
	onFirst := func(i int, c model.H2Call) bool { return after(i, c) && c.Conn == 0 }
	onLater := func(i int, c model.H2Call) bool { return after(i, c) && c.Conn != 0 }
	run.Rows = append(run.Rows,
		h2Percentile(name+": the calls before, 3 clients", 99, predBefore, callsBefore, "calls at "+startsText(freezeStarts)),
		noCheck.row(name+": go, no health check, the calls after", after, false, true, "each runs to Client.Timeout on the one conn, which nothing checks"),
		check.row(name+": go, SendPingTimeout + PingTimeout "+freezePing.String()+": first conn dropped at", onFirst, true, false,
			"its calls failed when the unanswered PING closed the conn"),
		check.row(name+": go, health check: a new conn dropped at", onLater, true, true,
			"the later calls: a new conn to the same node, still frozen, dropped by its own PING"),
		okhttp.row(name+": okhttp, read timeout "+freezeRead.String()+", the calls after", after, false, true,
			"each stream ends at its read timeout; the conn carries on"))
	for _, v := range vs {
		run.Calls = append(run.Calls, h2Lanes(v.scenario, v.ns, v.calls)...)
	}
	return nil
}

// run makes the variant's calls at their times and freezes its node at freezeAt.
func (v *freezeVariant) run(ctx context.Context) error {
	n := v.ns.nodes[0]
	var do func(t0 time.Time) h2Call
	var conns func() int
	if v.client.Rule == rules.H2OkHttp() {
		pool, err := h2.New(h2.Config{Routes: v.ns.routes(), ConnectTimeout: h2ConnectTimeout,
			ReadTimeout: v.client.ReadTimeout, CallTimeout: v.client.Deadline})
		if err != nil {
			return err
		}
		defer pool.Close()
		do = func(t0 time.Time) h2Call { return poolCall(ctx, pool, v.ns, h2Push, t0) }
		conns = func() int { return len(pool.Conns()) }
	} else {
		g, err := h2.NewGo(h2.GoConfig{SendPingTimeout: v.client.SendPingTimeout, PingTimeout: v.client.PingTimeout,
			Timeout: v.client.Deadline, DialTimeout: h2ConnectTimeout})
		if err != nil {
			return err
		}
		defer g.Close()
		do = func(t0 time.Time) h2Call { return goCall(ctx, g, n.URL+h2Push, t0) }
		conns = g.Dials
	}
	t0 := time.Now()
	freeze := time.AfterFunc(freezeAt, n.Freeze)
	defer freeze.Stop()
	wake := clock.Wake(t0.Add(freezeAt))
	defer wake.Stop()
	v.calls = make([]h2Call, len(freezeStarts))
	var wg sync.WaitGroup
	for i, s := range freezeStarts {
		if !clock.SleepUntil(ctx, t0.Add(s)) {
			break
		}
		wg.Go(func() { v.calls[i] = do(t0) })
	}
	wg.Wait()
	v.newConns = conns() - 1
	return ctx.Err()
}

// row compares the variant's calls that keep selects with the model: their outcome, count
// and time (their end from the start with ends, else their duration), and with conns the
// connections opened after the first.
func (v *freezeVariant) row(name string, keep func(int, model.H2Call) bool, ends, conns bool, server string) results.Row {
	idx := indexes(v.pred.Calls, keep)
	pred, calls := pick(v.pred.Calls, idx), pick(v.calls, idx)
	exp, got := predTook(pred), tookOf(calls)
	if ends {
		exp, got = nil, nil
		for _, c := range pred {
			exp = append(exp, c.End)
		}
		for _, c := range calls {
			got = append(got, c.end)
		}
	}
	row := lab.Judged(name, lab.LastedD(model.Percentile(exp, 50), model.Percentile(got, 50)),
		lab.Ended(outcomeOfPred(pred), outcomeOf(calls, outcomeOfPred(pred))), lab.Calls(len(pred), len(calls)), lab.Saw(server))
	if conns {
		row.ExpectedNewConnections, row.NewConnections = results.Count(v.pred.NewConns()-1), results.Count(v.newConns)
	}
	return row
}

// startsText writes call starts: "0, 100, 200 ms".
func startsText(ds []time.Duration) string {
	var s string
	for i, d := range ds {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond))
	}
	return s + " ms"
}
