package http2

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/labrun/labrun/client/h2"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// This file holds experiment H's APNs throttle: a rejected push lowers the connection's
// stream limit to 1 until the next success.

// The throttle rows: a node that allows throttleLimit streams and answers in throttleLatency;
// a rejected push at 0, then throttleBurst pushes at throttleAt; Go's Client.Timeout and the
// pool's call timeout are throttleTimeout.
const (
	throttleLatency = 100 * time.Millisecond
	throttleLimit   = 10
	throttleBurst   = 5
	throttleAt      = 200 * time.Millisecond
	throttleTimeout = 800 * time.Millisecond
)

// throttleScenario is the model's scenario of the throttle rows for rule.
func throttleScenario(ns *h2Nodes, rule model.H2Rule) model.H2Scenario {
	starts, rejected := []time.Duration{0}, []bool{true}
	for range throttleBurst {
		starts, rejected = append(starts, throttleAt), append(rejected, false)
	}
	return model.H2Scenario{Nodes: ns.model, Starts: starts, Rejected: rejected,
		Client: model.H2Client{Rule: rule, Deadline: throttleTimeout, Handshake: rule == rules.H2OkHttp()}}
}

// restoredAt is when the model's connection 0 got its limit back after the throttle (0: never).
func restoredAt(p model.H2Prediction) time.Duration {
	for _, l := range p.Conns[0].Limits {
		if l.Limit > 1 {
			return l.At
		}
	}
	return 0
}

// streamsAtOnce is the most predicted streams in flight at once between from and to.
func streamsAtOnce(calls []model.H2Call, from, to time.Duration) int {
	peak := 0
	for _, c := range calls {
		t := c.Start + c.Waited
		if t < from || t >= to {
			continue
		}
		n := 0
		for _, d := range calls {
			if s := d.Start + d.Waited; s <= t && d.End > t {
				n++
			}
		}
		peak = max(peak, n)
	}
	return peak
}

// untilFirstAnswer is the most streams the node had in flight from `from` (its clock) until it
// first went back to none: the streams a burst had out before its first answer.
func untilFirstAnswer(n *h2node.Node, from time.Duration) int {
	samples, _ := n.Timeline()
	peak, seen := 0, false
	for _, s := range samples {
		if s.At < from {
			continue
		}
		if s.InFlight == 0 && seen {
			break
		}
		seen = seen || s.InFlight > 0
		peak = max(peak, s.InFlight)
	}
	return peak
}

// throttle runs the rejected push and the burst through Go's strict client and through
// OkHttp's pool.
func (h *H2) throttle(ctx context.Context, opt lab.Options, host *h2Host, run *results.Run) error {
	node := []model.H2Node{{Latency: throttleLatency, MaxStreams: throttleLimit, Throttle: true}}
	if err := h.throttleGo(ctx, opt, host, node, run); err != nil {
		return err
	}
	return h.throttleOkHttp(ctx, opt, host, node, run)
}

func (h *H2) throttleGo(ctx context.Context, opt lab.Options, host *h2Host, node []model.H2Node, run *results.Run) error {
	ns, err := host.start(node)
	if err != nil {
		return err
	}
	defer ns.close()
	pred := model.SimulateH2(throttleScenario(ns, rules.H2GoStrict()))
	opt.Step(throttleTimeout+throttleAt, "%s · go strict: a rejected push, then %d at once", h.Info().Name, throttleBurst)
	g, err := h2.NewGo(h2.GoConfig{StrictMaxConcurrentRequests: true, Timeout: throttleTimeout, DialTimeout: h2ConnectTimeout})
	if err != nil {
		return err
	}
	defer g.Close()
	n := ns.nodes[0]
	t0 := time.Now()
	calls := []h2Call{goCall(ctx, g, n.URL+h2Push+"?status=400", t0)}
	// The throttle's SETTINGS frame follows the 400 on the wire: wait until net/http has
	// processed it (the node's first SETTINGS, then this one), so that the burst meets it.
	waitFor(ctx, 2*time.Second, func() bool { return g.SettingsSeen() >= 2 })
	if !clock.SleepUntil(ctx, t0.Add(throttleAt)) {
		return ctx.Err()
	}
	from := n.Since()
	burst := make([]h2Call, throttleBurst)
	var wg sync.WaitGroup
	for i := range throttleBurst {
		wg.Go(func() { burst[i] = goCall(ctx, g, n.URL+h2Push, t0) })
		if i == 0 {
			// The others start once the first is on the node. Started with it, all five
			// reserve a slot before any opens a stream, and against a limit of 1 strict mode
			// then stalls them all (golang/go#70809: 2 x 1 + 1 calls).
			waitFor(ctx, time.Second, func() bool { return n.Stats().InFlight > 0 })
		}
	}
	wg.Wait()
	calls = append(calls, burst...)
	if err := ctx.Err(); err != nil {
		return err
	}
	restored := restoredAt(pred)
	name := fmt.Sprintf("go strict, a 400, then %d at once", throttleBurst)
	first, rest := burst[0], burst[1:]
	predRest := pred.Calls[2:]
	run.Rows = append(run.Rows,
		lab.Judged(name+": streams before the first answer",
			lab.Ended(results.State(fmt.Sprintf("%d at a time", streamsAtOnce(pred.Calls, throttleAt, restored))),
				results.State(fmt.Sprintf("%d at a time", untilFirstAnswer(n, from)))),
			lab.Calls(throttleBurst, len(burst)),
			lab.Saw(fmt.Sprintf("APNs throttle: the node's limit %d, 1 after the 400, %d after the next success", throttleLimit, throttleLimit))),
		lab.Judged(name+": the limit back at the first success", lab.LastedD(restored-throttleAt, first.end-throttleAt),
			lab.Ended(pred.Calls[1].Outcome, first.outcome), lab.Calls(1, 1),
			lab.Saw("SETTINGS_MAX_CONCURRENT_STREAMS "+fmt.Sprint(throttleLimit)+" right after the answer")),
		throttleRestRow(name, predRest, rest))
	run.Calls = append(run.Calls, h2Lanes("go strict, throttle", ns, calls)...)
	return nil
}

// throttleRestRow is the rest of Go's strict burst once the limit is back. Which way it goes
// is a race inside net/http, so the row checks only that it went one of the two ways, and says
// which in the server column: the stream ends and wakes the waiting call, which looks at the
// limit again; if the read loop has not yet processed the SETTINGS frame that follows the
// answer, the call sees the reservations of the three queued behind it (golang/go#70809)
// against a limit of 1 and waits again, and a SETTINGS frame that raises the limit wakes no
// one (processSettingsNoWrite broadcasts only for a new initial window size). With no stream
// left to end, the calls wait for their Client.Timeout.
func throttleRestRow(name string, pred []model.H2Call, calls []h2Call) results.Row {
	okAt := model.Percentile(predTook(pred), 50)
	want := fmt.Sprintf("all ok (at %s), or all deadline: a race", lab.FmtMs(okAt))
	got := want
	var server string
	switch outcomeOf(calls, vocab.OK) {
	case vocab.OK:
		server = fmt.Sprintf("all ok, %s: net/http took the new limit before the waiting call looked again", spanText(calls))
	case vocab.Deadline:
		if outcomeOf(calls, vocab.Deadline) != vocab.Deadline {
			got = "some ok, some not"
			break
		}
		server = fmt.Sprintf("all stalled to Client.Timeout, %s: the waiting call looked before the new limit was in, "+
			"and a SETTINGS frame wakes no one (%s)", spanText(calls), goStallIssue)
	default:
		got = "an outcome other than ok or deadline"
	}
	if server == "" {
		server = "ends " + spanText(calls)
	}
	return lab.Judged(name+": the other "+fmt.Sprint(len(pred)), lab.Ended(results.State(want), results.State(got)),
		lab.Calls(len(pred), len(calls)), lab.Saw(server))
}

func (h *H2) throttleOkHttp(ctx context.Context, opt lab.Options, host *h2Host, node []model.H2Node, run *results.Run) error {
	ns, err := host.start(node)
	if err != nil {
		return err
	}
	defer ns.close()
	pred := model.SimulateH2(throttleScenario(ns, rules.H2OkHttp()))
	opt.Step(lastEnd(pred.Calls), "%s · okhttp: a rejected push, then %d at once", h.Info().Name, throttleBurst)
	pool, err := h2.New(h2.Config{Routes: ns.routes(), ConnectTimeout: h2ConnectTimeout, CallTimeout: throttleTimeout})
	if err != nil {
		return err
	}
	defer pool.Close()
	n := ns.nodes[0]
	t0 := time.Now()
	calls := []h2Call{poolCall(ctx, pool, ns, h2Push+"?status=400", t0)}
	waitFor(ctx, 2*time.Second, func() bool { c := pool.Conns(); return len(c) > 0 && c[0].Limit == 1 })
	if !clock.SleepUntil(ctx, t0.Add(throttleAt)) {
		return ctx.Err()
	}
	from := n.Since()
	burst := h2Together(throttleBurst, func(int) h2Call { return poolCall(ctx, pool, ns, h2Push, t0) })
	calls = append(calls, burst...)
	samples, _ := n.Timeline()
	atOnce := h2node.MaxInFlight(samples, from, n.Since())
	conns := len(pool.Conns())
	if err := ctx.Err(); err != nil {
		return err
	}
	state := func(atOnce, conns int) vocab.Outcome {
		return results.State(fmt.Sprintf("%d at once on %s", atOnce, vocab.Plural(conns, "connection")))
	}
	got := state(atOnce, conns)
	if o := outcomeOf(burst, vocab.OK); o != vocab.OK {
		got = o
	}
	row := lab.Judged(fmt.Sprintf("okhttp, a 400, then %d at once: connections", throttleBurst),
		lab.Ended(state(streamsAtOnce(pred.Calls, throttleAt, lastEnd(pred.Calls)), pred.NewConns()), got),
		lab.LastedD(model.Percentile(predTook(pred.Calls[1:]), 99), model.Percentile(tookOf(burst), 99)),
		lab.Calls(throttleBurst, len(burst)), lab.Saw("the first takes the throttled conn's one slot, the others a new conn"))
	run.Rows = append(run.Rows, row)
	run.Calls = append(run.Calls, h2Lanes("okhttp, throttle", ns, calls)...)
	return nil
}
