package http2

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/labrun/labrun/client/h2"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// This file holds experiment H's calibration: what a burst of pushes costs the okhttp client
// on this machine, measured before the okhttp rows and given to the model of those rows.
//
// A burst of 180 calls at once is not free. The pool sets up its connection while 180
// goroutines want the CPU (the dial and the peer's SETTINGS wait for Go's scheduler to poll
// the network, which it does when its run queues are empty); then net/http sends the streams
// one after another, each request's HEADERS written and flushed with a system call of its
// own under the connection's write lock, and reads each answer in the connection's one read
// loop; all of it on two cores shared with the nodes, with a garbage collection in most
// bursts. With labrun's own costs cut (docs/http2.md, "Precision"), a burst's median call
// still took 3 to 5 ms more than its node's latency. The model knows none of it (its
// connection takes 1 ms, its streams nothing), so the okhttp rows' expected times would be
// that much short, by an amount that depends on the machine.
//
// Instead the experiment measures it, and the model's ConnectTime and StreamCost are fitted
// to the measurement and stated in the run's config: the model then predicts, from one
// connection and one node, how the cost spreads over the rows' connections and adds to
// their nodes' latencies, which is what those rows check; the cost itself they take as
// measured. The calibration node answers in the healthy latency, not at once, so that, as
// in the rows, the burst has left before the first answer comes back: at zero latency the
// answers come back while the burst is being sent, and reading them competes with sending
// it (a cost the rows do not pay: it overstated their median by 1 to 1.5 ms).

// calBursts is how many calibration bursts are measured (after one that warms up).
const calBursts = 9

// h2Calibration is the okhttp client's cost of a burst, measured: the model's set-up and
// cost per stream, fitted.
type h2Calibration struct {
	// n is the calls in each burst; latency the node's answer time, taken off their times.
	n       int
	latency time.Duration
	// setUp and perStream are the model's ConnectTime and StreamCost (lab.FitBurst).
	setUp, perStream time.Duration
	// overhead is what the bursts' streams took beyond the node's latency, as the APNs
	// interceptor times a stream: the least and the most of any stream, and the most of a
	// burst's mean. It is the jitter the model of the ejection rows takes
	// (model.H2Client.Overhead).
	overhead model.H2Overhead
}

// calibrate measures h2Calibration: calBursts bursts of Pushes calls at once, each through a
// new pool to a new node that answers in Latency and takes every stream on one connection;
// the model is fitted to the median burst (the median of each rank's time over the bursts).
func (h *H2) calibrate(ctx context.Context, opt lab.Options, host *h2Host, run *results.Run) error {
	opt.Step(time.Duration(calBursts+1)*(h.Latency+10*time.Millisecond), "%s · calibration: %d bursts of %d pushes to a node answering in %v",
		h.Info().Name, calBursts+1, h.Pushes, h.Latency)
	bursts := make([][]time.Duration, 0, calBursts+1)
	var streams, means []time.Duration
	for k := range calBursts + 1 {
		took, stream, err := h.calBurst(ctx, host)
		if err != nil {
			return err
		}
		bursts = append(bursts, took)
		if k > 0 {
			streams = append(streams, stream...)
			means = append(means, mean(stream))
		}
	}
	bursts = bursts[1:] // the first warms the process up (its heap, its goroutine stacks)
	mid := make([]time.Duration, h.Pushes)
	for k := range mid {
		var rank []time.Duration
		for _, b := range bursts {
			rank = append(rank, b[k])
		}
		mid[k] = model.Percentile(rank, 50)
	}
	host.cal = h2Calibration{n: h.Pushes, latency: h.Latency}
	host.cal.setUp, host.cal.perStream = lab.FitBurst(mid)
	host.cal.overhead = model.H2Overhead{Min: slices.Min(streams), MeanMax: slices.Max(means), Max: slices.Max(streams)}
	run.Config = append(run.Config, results.Param{Name: "okhttp-burst-calibration", Value: host.cal.String()})
	return nil
}

// calBurst makes one calibration burst and returns its calls' times less the node's latency,
// sorted, and their streams' times (what the APNs interceptor times) less the same.
func (h *H2) calBurst(ctx context.Context, host *h2Host) (took, stream []time.Duration, err error) {
	ns, err := host.start([]model.H2Node{{Latency: h.Latency, MaxStreams: h.Pushes}})
	if err != nil {
		return nil, nil, err
	}
	defer ns.close()
	pool, err := h2.New(h2.Config{Routes: ns.routes(), ConnectTimeout: h2ConnectTimeout, CallTimeout: h2CallTimeout})
	if err != nil {
		return nil, nil, err
	}
	defer pool.Close()
	t0 := time.Now()
	calls := h2Together(h.Pushes, func(int) h2Call { return poolCall(ctx, pool, ns, h2Push, t0) })
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for _, c := range calls {
		if c.outcome != vocab.OK || c.conn != 1 {
			return nil, nil, fmt.Errorf("calibration burst: a push ended %s on connection %d, want ok on connection 1", c.outcome, c.conn)
		}
		stream = append(stream, c.took()-c.setUp-h.Latency)
	}
	took = tookOf(calls)
	for i := range took {
		took[i] -= h.Latency
	}
	slices.Sort(took)
	return took, stream, nil
}

// mean is the mean of ds (0 for none).
func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(max(len(ds), 1))
}

// Bounds beyond which the rows fed by the calibration say that the client looks unhealthy:
// about four times what this 2-core machine measures (a set-up of 1.6 to 3.5 ms, 10 to 25 µs
// per stream). Those rows take the cost as measured, so a regression that slows the pool's
// bursts would otherwise pass unseen; a loaded machine can exceed them too, so they warn in
// the rows' server column and do not fail the run.
const (
	calMaxSetUp     = 10 * time.Millisecond
	calMaxPerStream = 100 * time.Microsecond
)

// note says, in the server column of the rows whose model takes the calibration, that it does,
// and whether the calibration is beyond the bounds.
func (c h2Calibration) note() string {
	n := "model: set-up and cost per stream of a burst as calibrated (config)"
	if c.setUp > calMaxSetUp || c.perStream > calMaxPerStream {
		n += fmt.Sprintf("; beyond what a healthy client shows here (set-up up to %v, %v per stream): look at the client, or the machine's load, before trusting these rows",
			calMaxSetUp, calMaxPerStream)
	}
	return n
}

// apply gives the measured costs and jitter to a model of the okhttp client.
func (c h2Calibration) apply(cl model.H2Client) model.H2Client {
	cl.ConnectTime, cl.StreamCost, cl.Overhead = max(c.setUp, time.Nanosecond), c.perStream, c.overhead
	return cl
}

// String is the calibration as the run's config shows it.
func (c h2Calibration) String() string {
	return fmt.Sprintf("set-up %.1fms + %.0fµs per stream, fitted to the median of %d bursts of %d at once to a node answering in %v, less that; "+
		"their streams took %.2f to %.2fms more than that, %.2fms at most on average over a burst (the ejection rows' jitter)",
		float64(c.setUp)/float64(time.Millisecond), float64(c.perStream)/float64(time.Microsecond), calBursts, c.n, c.latency,
		lab.MsOf(c.overhead.Min), lab.MsOf(c.overhead.Max), lab.MsOf(c.overhead.MeanMax))
}
