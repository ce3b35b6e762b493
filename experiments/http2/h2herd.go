package http2

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labrun/labrun/client/h2"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// This file holds experiment H's OkHttp 3.13 burst: 50 calls at once to one node allowing 10
// streams, on a new client, without the APNs interceptor. Synchronous calls each dial, the
// connections pooled before the peer's SETTINGS take every call that connects meanwhile (the
// herd) and the streams over the limit are refused twice; enqueued calls go 5 at a time
// (model.PredictH2Burst; docs/http2.md).

// The burst rows: herdCalls calls at once to a node allowing herdLimit streams and answering
// in herdLatency.
const (
	herdCalls   = 50
	herdLimit   = 10
	herdLatency = 100 * time.Millisecond
)

// herdRangeReason says why the sync rows' counts are ranges.
const herdRangeReason = "whether a connection's SETTINGS are read before its connect ends decides it: " +
	"a connection pooled before them is unlimited and takes every call that connects meanwhile"

// herdBurst makes herdCalls calls at once through a new pool with OkHttp 3.13's rule (rules.H2OkHttp313) to the node, each
// through do, and returns the calls, the pool's dials and the node's stats.
func herdBurst(ctx context.Context, ns *h2Nodes, do func(*h2.Pool, *http.Request) (*h2.Result, error)) ([]*h2.Result, int, h2node.Stats, time.Duration, error) {
	pool, err := h2.New(h2.Config{Routes: ns.routes(), ConnectTimeout: h2ConnectTimeout, CallTimeout: h2CallTimeout, Rule: rules.H2OkHttp313()})
	if err != nil {
		return nil, 0, h2node.Stats{}, 0, err
	}
	defer pool.Close()
	res := make([]*h2.Result, herdCalls)
	gate := make(chan struct{}) // released together, as threads waiting on a latch
	var wg sync.WaitGroup
	for i := range herdCalls {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h2HostName+h2Push, nil)
			if err != nil {
				panic("experiments: a malformed push path") // the path is the experiment's own
			}
			<-gate
			res[i], _ = do(pool, req)
		})
	}
	t0 := time.Now()
	close(gate)
	wg.Wait()
	return res, pool.Dials(), ns.nodes[0].Stats(), time.Since(t0), ctx.Err()
}

// carried counts the connections that carried a stream: the others were closed by
// deduplication right after their connect.
func carried(st h2node.Stats) int {
	k := 0
	for _, s := range st.Streams {
		if s > 0 {
			k++
		}
	}
	return k
}

// answered counts the calls that got an answer.
func answered(res []*h2.Result) int {
	n := 0
	for _, r := range res {
		if r != nil && r.Outcome == vocab.OK {
			n++
		}
	}
	return n
}

// herd runs the burst synchronously, then enqueued.
func (h *H2) herd(ctx context.Context, opt lab.Options, host *h2Host, run *results.Run) error {
	node := []model.H2Node{{Latency: herdLatency, MaxStreams: herdLimit}}
	atOnce, err := model.PredictH2Burst(model.H2Burst{Calls: herdCalls, PeerLimit: herdLimit, Latency: herdLatency})
	if err != nil {
		return err
	}
	ns, err := host.start(node)
	if err != nil {
		return err
	}
	opt.Step(atOnce.Total, "%s · okhttp 3.13: %d at once, limit %d", h.Info().Name, herdCalls, herdLimit)
	res, dials, st, _, err := herdBurst(ctx, ns, func(p *h2.Pool, r *http.Request) (*h2.Result, error) { return p.Do(r.Context(), r) })
	ns.close()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("okhttp 3.13, %d at once, peer limit %d", herdCalls, herdLimit)
	ok := answered(res)
	server := fmt.Sprintf("%d connections, streams %v, %d answered", st.Conns, nonZero(st.Streams), st.Requests)
	run.Rows = append(run.Rows,
		lab.Judged(name+": connections dialled", lab.Calls(herdCalls, len(res)),
			lab.Connections(results.Count(atOnce.Dialled.Min), results.Count(dials)),
			lab.ConnectionsUpTo(results.Count(atOnce.Dialled.Max), herdRangeReason+"; a refused call whose connection stopped taking streams dials again"),
			lab.Saw(server)),
		lab.Judged(name+": connections kept", lab.Calls(herdCalls, len(res)),
			lab.Connections(results.Count(atOnce.Kept.Min), results.Count(carried(st))),
			lab.ConnectionsUpTo(results.Count(atOnce.Kept.Max), herdRangeReason), lab.Saw(server)),
		lab.Judged(name+": calls answered, the rest refused twice", lab.Calls(herdCalls, len(res)),
			lab.Executions(results.Count(atOnce.Answered.Min), results.Count(ok)),
			lab.ExecutionsUpTo(results.Count(atOnce.Answered.Max), herdRangeReason+"; the node answers at most its limit per kept connection"),
			lab.Saw(fmt.Sprintf("%d answered, %d failed with REFUSED_STREAM", ok, refusedTwice(res)))))

	enq, err := model.PredictH2Burst(model.H2Burst{Calls: herdCalls, PeerLimit: herdLimit, Latency: herdLatency, Enqueue: true})
	if err != nil {
		return err
	}
	if ns, err = host.start(node); err != nil {
		return err
	}
	defer ns.close()
	opt.Step(enq.Total, "%s · okhttp 3.13: %d enqueued", h.Info().Name, herdCalls)
	var d *h2.Dispatcher
	var once sync.Once
	res, _, st, took, err := herdBurst(ctx, ns, func(p *h2.Pool, r *http.Request) (*h2.Result, error) {
		once.Do(func() { d, _ = h2.NewDispatcher(p, model.OkHttpMaxRequests, model.OkHttpMaxRequestsPerHost) })
		return d.Do(r.Context(), r)
	})
	if err != nil {
		return err
	}
	outcome := vocab.OK
	if answered(res) != herdCalls {
		outcome = vocab.Failed
	}
	run.Rows = append(run.Rows, lab.Judged(fmt.Sprintf("okhttp 3.13, %d enqueued: %d at a time, %d waves", herdCalls, enq.AtOnce, enq.Waves),
		lab.LastedD(enq.Total, took), lab.Ended(vocab.OK, outcome), lab.Calls(herdCalls, len(res)),
		lab.Connections(results.Count(enq.Kept.Min), results.Count(carried(st))),
		lab.Saw(fmt.Sprintf("%d at once at most; %d kept of %s", st.MaxInFlight, carried(st), vocab.Plural(st.Conns, "connection")))))
	return nil
}

// refusedTwice counts the calls that failed after two REFUSED_STREAM.
func refusedTwice(res []*h2.Result) int {
	n := 0
	for _, r := range res {
		if r != nil && r.Outcome != vocab.OK && r.Refused > 1 {
			n++
		}
	}
	return n
}

// nonZero is xs without its zeros.
func nonZero(xs []int) []int {
	var out []int
	for _, x := range xs {
		if x > 0 {
			out = append(out, x)
		}
	}
	return out
}
