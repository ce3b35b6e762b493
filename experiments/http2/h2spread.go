package http2

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/labrun/labrun/client/h2"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// This file holds experiment H's okhttp rows: how OkHttp 3.x's rule puts a burst of pushes on
// the slow first address, how the APNs interceptor's allocation limit spreads it, and how the
// interceptor ejects an address that turns slow.

// h2Push is the path of a push, as APNs has it.
const h2Push = "/3/device/token"

// spreadNodes are the nodes of the spreading rows: the first address slow, from its first
// push on.
func (h *H2) spreadNodes() []model.H2Node {
	ns := make([]model.H2Node, len(h2Addrs))
	for i := range ns {
		ns[i] = model.H2Node{Latency: h.Latency, MaxStreams: h.PeerLimit}
	}
	ns[0].Latency = h.Slow
	return ns
}

// spread makes Pushes pushes at once through OkHttp's pool, with allocationLimit left at the
// peer's limit and capped as the interceptor does.
func (h *H2) spread(ctx context.Context, opt lab.Options, host *h2Host, run *results.Run) error {
	for _, v := range []struct {
		label, scenario string
		alloc           int
	}{
		{fmt.Sprintf("okhttp default (allocationLimit = peer's %d)", h.PeerLimit), "okhttp default", 0},
		{fmt.Sprintf("okhttp, allocationLimit %d", h.AllocationLimit), fmt.Sprintf("okhttp, allocationLimit %d", h.AllocationLimit), h.AllocationLimit},
	} {
		ns, err := host.start(h.spreadNodes())
		if err != nil {
			return err
		}
		pred := model.SimulateH2(model.H2Scenario{Nodes: ns.model, Calls: h.Pushes,
			Client: host.cal.apply(model.H2Client{Rule: rules.H2OkHttp(), AllocationLimit: v.alloc, Handshake: true})})
		opt.Step(lastEnd(pred.Calls), "%s · %s: %d pushes at once", h.Info().Name, v.label, h.Pushes)
		pool, err := h2.New(h2.Config{Routes: ns.routes(), AllocationLimit: v.alloc,
			ConnectTimeout: h2ConnectTimeout, CallTimeout: h2CallTimeout})
		if err != nil {
			ns.close()
			return err
		}
		t0 := time.Now()
		calls := h2Together(h.Pushes, func(int) h2Call { return poolCall(ctx, pool, ns, h2Push, t0) })
		conns := len(pool.Conns())
		pool.Close()
		streams := ns.streams()
		server := h.spreadServer(ns)
		ns.close()
		if err := ctx.Err(); err != nil {
			return err
		}
		name := fmt.Sprintf("%s, %d pushes", v.label, h.Pushes)
		run.Rows = append(run.Rows,
			lab.Judged(name+": streams per node", lab.Ended(results.State(share(pred.StreamsPerNode)), results.State(share(streams))),
				lab.Calls(h.Pushes, len(calls)), lab.Connections(results.Count(pred.NewConns()), results.Count(conns)), lab.Saw(server)),
			h2Percentile(name, 50, pred.Calls, calls, host.cal.note()),
			h2Percentile(name, 99, pred.Calls, calls, h.slowNote(calls)))
		run.Calls = append(run.Calls, h2Lanes(v.scenario, ns, calls)...)
	}
	return nil
}

// spreadServer says what each node saw: "node 1 (slow): 1 conn, 180 streams, 180 at once".
func (h *H2) spreadServer(ns *h2Nodes) string {
	var parts []string
	for i, n := range ns.nodes {
		st := n.Stats()
		total, peak := 0, 0
		for k, s := range st.Streams {
			total += s
			peak = max(peak, st.MaxStreamsPerConn[k])
		}
		slow := ""
		if ns.model[i].Latency > h.Latency {
			slow = " (slow)"
		}
		if st.Conns == 0 {
			parts = append(parts, fmt.Sprintf("node %d%s: none", i+1, slow))
			continue
		}
		parts = append(parts, fmt.Sprintf("node %d%s: %s, %d at once", i+1, slow, vocab.Plural(st.Conns, "conn"), peak))
	}
	return joinSemi(parts)
}

// slowNote says how many calls took the slow node's time: all of them is the point of the
// first rows.
func (h *H2) slowNote(calls []h2Call) string {
	slow := 0
	for _, c := range calls {
		if c.took() >= h.Slow {
			slow++
		}
	}
	return fmt.Sprintf("%d of %d pushes took the slow node's %v", slow, len(calls), h.Slow)
}

// h2Percentile is the row of the p-th percentile of the calls' durations against the model's.
func h2Percentile(name string, p float64, pred []model.H2Call, calls []h2Call, server string) results.Row {
	return lab.Judged(fmt.Sprintf("%s: p%g", name, p), lab.LastedD(model.Percentile(predTook(pred), p), model.Percentile(tookOf(calls), p)),
		lab.Ended(outcomeOfPred(pred), outcomeOf(calls, outcomeOfPred(pred))), lab.Calls(len(pred), len(calls)), lab.Saw(server))
}

// outcomeOfPred is the outcome every predicted call shares, or the worst one.
func outcomeOfPred(pred []model.H2Call) vocab.Outcome {
	calls := make([]h2Call, len(pred))
	for i, c := range pred {
		calls[i].outcome = c.Outcome
	}
	if len(calls) == 0 {
		return ""
	}
	return outcomeOf(calls, calls[0].outcome)
}

// h2Rounds is how many rounds of pushes the ejection rows make.
const h2Rounds = 4

// ejectNodes are the nodes of the ejection rows: the first turns slow once it has answered
// a first connection's share.
func (h *H2) ejectNodes() []model.H2Node {
	ns := make([]model.H2Node, len(h2Addrs))
	for i := range ns {
		ns[i] = model.H2Node{Latency: h.Latency, MaxStreams: h.PeerLimit}
	}
	ns[0].SlowAfter, ns[0].SlowLatency = h.AllocationLimit, h.Slow
	return ns
}

// apnsText writes the interceptor's ejection thresholds.
func apnsText(c h2.APNsConfig) string {
	return fmt.Sprintf("> %d calls & avg > %v, or > %d calls in all & avg > %v", c.BadCalls, c.BadAvg, c.MinCalls, c.SlowAvg)
}

// eject makes rounds of pushes through the pool with the APNs interceptor while the first
// address turns slow, and compares when it stops getting streams with the model.
func (h *H2) eject(ctx context.Context, opt lab.Options, host *h2Host, run *results.Run) error {
	per := h.Pushes / 2
	every := h.Slow + max(100*time.Millisecond, h.Slow/2) // a round's slow pushes end well before the next round
	cfg := h2.APNsDefaults()
	cfg.AllocationLimit = h.AllocationLimit
	rule := cfg.APNsRule
	var starts []time.Duration
	for r := range h2Rounds {
		for range per {
			starts = append(starts, time.Duration(r)*every)
		}
	}
	ns, err := host.start(h.ejectNodes())
	if err != nil {
		return err
	}
	defer ns.close()
	ends := model.SimulateH2Ends(model.H2Scenario{Nodes: ns.model, Starts: starts,
		Client: host.cal.apply(model.H2Client{Rule: rules.H2OkHttp(), AllocationLimit: h.AllocationLimit, Eject: &rule, Handshake: true})})
	pred := ends.Fewest
	opt.Step(lastEnd(pred.Calls), "%s · okhttp with the APNs interceptor: %d rounds of %d pushes, every %v", h.Info().Name, h2Rounds, per, every)
	apns, err := h2.NewAPNs(cfg)
	if err != nil {
		return err
	}
	pool, err := h2.New(h2.Config{Routes: ns.routes(), Spread: apns, ConnectTimeout: h2ConnectTimeout, CallTimeout: h2CallTimeout})
	if err != nil {
		return err
	}
	defer pool.Close()
	t0 := time.Now()
	var calls []h2Call
	for r := range h2Rounds {
		if !clock.SleepUntil(ctx, t0.Add(time.Duration(r)*every)) {
			return ctx.Err()
		}
		calls = append(calls, h2Together(per, func(int) h2Call { return poolCall(ctx, pool, ns, h2Push, t0) })...)
	}
	conns := len(pool.Conns())
	if err := ctx.Err(); err != nil {
		return err
	}

	// The round of the slow node's last stream, by the model at the corners of the calls'
	// jitter (one round where the jitter decides nothing); the rows compare what happened up
	// to the latest of them and after it.
	first, last := h2Rounds, -1
	for _, p := range ends.Corners {
		r := -1
		if p.LastCall[0] >= 0 {
			r = p.LastCall[0] / per
		}
		first, last = min(first, r), max(last, r)
	}
	measuredLast := -1
	for i, c := range calls {
		if c.node == 0 {
			measuredLast = max(measuredLast, i/per)
		}
	}
	before := func(i int, _ model.H2Call) bool { return i/per <= last }
	after := func(i int, _ model.H2Call) bool { return i/per > last }
	idxBefore, idxAfter := indexes(pred.Calls, before), indexes(pred.Calls, after)
	slowAfter := func(node func(i int) int) int {
		n := 0
		for _, i := range idxAfter {
			if node(i) == 0 {
				n++
			}
		}
		return n
	}
	roundText := func(lo, hi, after int) string {
		switch {
		case hi < 0:
			return "no stream"
		case lo != hi:
			return fmt.Sprintf("last in round %d to %d of %d (the jitter decides), then %d of %d", lo+1, hi+1, h2Rounds, after, len(idxAfter))
		}
		return fmt.Sprintf("last in round %d of %d, then %d of %d", hi+1, h2Rounds, after, len(idxAfter))
	}
	measuredFirst, measuredTo := measuredLast, measuredLast
	if measuredLast >= first && measuredLast <= last {
		measuredFirst, measuredTo = first, last // within the model's range: the row states it
	}
	name := fmt.Sprintf("okhttp + APNs ejection, %d rounds of %d pushes", h2Rounds, per)
	prod := h2.APNsProduction()
	row := lab.Judged(name+": the slow node's streams", lab.Documented("production: "+apnsText(prod), nil, nil),
		lab.Ended(results.State(roundText(first, last, slowAfter(func(i int) int { return pred.Calls[i].Node }))),
			results.State(roundText(measuredFirst, measuredTo, slowAfter(func(i int) int { return calls[i].node })))),
		lab.Calls(len(pred.Calls), len(calls)), lab.Connections(nil, results.Count(conns)),
		lab.Saw(fmt.Sprintf("node 1 slow from its push %d; scaled: %s; streams per node %s", h.AllocationLimit+1, apnsText(cfg), share(ns.streams()))))
	ejectConns(&row, ends, host.cal)
	run.Rows = append(run.Rows, row,
		h2PercentileEnds(name+": up to that round", 99, ends, idxBefore, pick(calls, idxBefore), opt.Tolerance, host.cal.note()))
	if len(idxAfter) > 0 {
		// When the slow node may stream until the last round, no push comes after it: there is
		// nothing to measure, and a row of nothing could not fail.
		run.Rows = append(run.Rows, h2PercentileEnds(name+": after it", 99, ends, idxAfter, pick(calls, idxAfter), opt.Tolerance, ""))
	}
	run.Calls = append(run.Calls, h2Lanes("okhttp + APNs interceptor", ns, calls)...)
	return nil
}

// ejectConns sets the ejection row's expected new connections: the model's count, or, where
// the calls' jitter decides an ejection, the range over the model's corners, with why.
func ejectConns(row *results.Row, ends model.H2Ends, cal h2Calibration) {
	lo, hi := math.MaxInt, 0
	for _, p := range ends.Corners {
		lo, hi = min(lo, p.NewConns()), max(hi, p.NewConns())
	}
	row.ExpectedNewConnections = results.Count(lo)
	if lo == hi || len(ends.Jitter) == 0 {
		return
	}
	row.ExpectedNewConnectionsMax = results.Count(hi)
	j := ends.Jitter[0]
	avg := fmt.Sprintf("node %d averages %.1f to %.1f ms (its latency plus the calibrated %.2f to %.2f ms)", j.Node+1,
		lab.MsOf(j.AvgLo), lab.MsOf(j.AvgHi), lab.MsOf(cal.overhead.Min), lab.MsOf(cal.overhead.MeanMax))
	why := fmt.Sprintf("%s, above the interceptor's %v, in calls that take about the same time: whether one of them is slower than "+
		"the average, and so the round its connection is ejected in, is the jitter's to decide", avg, j.Threshold)
	if j.AvgLo <= j.Threshold {
		why = fmt.Sprintf("%s, at the interceptor's %v: whether the average crosses it, and whether a call is slower than the average, "+
			"is the jitter's to decide", avg, j.Threshold)
	}
	if more := len(ends.Jitter) - 1; more > 0 {
		why += fmt.Sprintf(" (and %s more so decided)", vocab.Plural(more, "ejection"))
	}
	row.RangeReason = fmt.Sprintf("%s; the model, with each node ejected at every such chance or at none: %d to %d new connections", why, lo, hi)
}

// h2PercentileEnds is h2Percentile of the calls idx against the model at the corners of the
// calls' jitter: where they differ, the row expects the middle of their range, within the
// tolerance and half the range.
func h2PercentileEnds(name string, p float64, ends model.H2Ends, idx []int, calls []h2Call, tol time.Duration, server string) results.Row {
	r := h2Percentile(name, p, pick(ends.Fewest.Calls, idx), calls, server)
	lo, hi := model.Forever, time.Duration(0)
	for _, c := range ends.Corners {
		d := model.Percentile(predTook(pick(c.Calls, idx)), p)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo == hi || hi == model.Forever {
		return r
	}
	r.ExpectedMs = lab.ExpectedMs((lo + hi) / 2)
	r.ToleranceMs = new(lab.MsOf(tol + (hi-lo)/2))
	note := fmt.Sprintf("the model with each node ejected by the jitter or not: %.1f to %.1f ms", lab.MsOf(lo), lab.MsOf(hi))
	if server != "" {
		note = joinSemi([]string{server, note})
	}
	r.Server = note
	return r
}

// msOf is d in milliseconds.
