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

// Experiment H's calibration: what a burst of pushes costs the okhttp client on this machine
// (connection set-up under load, HEADERS flushed one by one; docs/http2.md, "Precision"), which
// the model does not know. It is measured before the okhttp rows, and the model's ConnectTime
// and StreamCost are fitted to it and stated in the run's config, so those rows check how the
// cost spreads and adds to their nodes' latencies. The calibration node answers in the healthy
// latency, as in the rows: at zero latency reading answers competes with sending the burst.

// calBursts is how many calibration bursts are measured (after one that warms up).
const calBursts = 9

// h2Calibration is the okhttp client's measured cost of a burst, fitted to the model.
type h2Calibration struct {
	// n is the calls of a burst; latency the node's answer time, taken off their times.
	n       int
	latency time.Duration
	// setUp and perStream are the model's ConnectTime and StreamCost (lab.FitBurst).
	setUp, perStream time.Duration
	// overhead is the streams' time beyond the node's latency, as the APNs interceptor times it:
	// the jitter of the ejection rows' model (model.H2Client.Overhead).
	overhead model.H2Overhead
}

// calibrate measures calBursts bursts of Pushes calls, each through a new pool to a new node on
// one connection, and fits the model to the median burst.
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
	bursts = bursts[1:] // the first warms the process up
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

// calBurst makes one burst and returns its calls' and streams' times less the latency, sorted.
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

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(max(len(ds), 1))
}

// Bounds beyond which the calibrated rows warn that the client looks unhealthy (about four
// times this machine's cost, docs/http2.md): the rows take the cost as measured, so a pool
// regression would otherwise pass unseen. A loaded machine exceeds them too, so they warn, not
// fail.
const (
	calMaxSetUp     = 10 * time.Millisecond
	calMaxPerStream = 100 * time.Microsecond
)

// note says in the calibrated rows' server column that they take the calibration, and whether it
// is beyond the bounds.
func (c h2Calibration) note() string {
	n := "model: set-up and cost per stream of a burst as calibrated (config)"
	if c.setUp > calMaxSetUp || c.perStream > calMaxPerStream {
		n += fmt.Sprintf("; beyond what a healthy client shows here (set-up up to %v, %v per stream): look at the client, or the machine's load, before trusting these rows",
			calMaxSetUp, calMaxPerStream)
	}
	return n
}

func (c h2Calibration) apply(cl model.H2Client) model.H2Client {
	cl.ConnectTime, cl.StreamCost, cl.Overhead = max(c.setUp, time.Nanosecond), c.perStream, c.overhead
	return cl
}

// String is the calibration in the run's config.
func (c h2Calibration) String() string {
	return fmt.Sprintf("set-up %.1fms + %.0fµs per stream, fitted to the median of %d bursts of %d at once to a node answering in %v, less that; "+
		"their streams took %.2f to %.2fms more than that, %.2fms at most on average over a burst (the ejection rows' jitter)",
		float64(c.setUp)/float64(time.Millisecond), float64(c.perStream)/float64(time.Microsecond), calBursts, c.n, c.latency,
		lab.MsOf(c.overhead.Min), lab.MsOf(c.overhead.Max), lab.MsOf(c.overhead.MeanMax))
}
