package cascade

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cristalhq/hedgedhttp"
	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/dist"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The hedging rows over --delay-dist: the caller draws each request's delay from (seed, call,
// copy), so that a run repeats per seed in whatever order the requests arrive.

const (
	// distSpacing is the time between two calls' starts.
	distSpacing = time.Millisecond
	// distConfidence is the bands' confidence.
	distConfidence   = 0.999
	defaultDistCalls = 1000
	maxDistCalls     = 4000
	// maxDistDraw bounds a draw, and maxDistFlight the requests the draws hold at once.
	maxDistDraw   = 10 * time.Second
	maxDistFlight = 500
	minCostCalls  = 50
)

// distParams are the parameters only the distribution rows read.
var distParams = []string{"delay-dist", "seed", "dist-calls"}

// hedgeDraws are the delays under a seed.
type hedgeDraws struct {
	d    dist.Dist
	seed uint64
}

// at is the delay of copy (0 the original, 1 the hedge) of call k: the draw numbered 2k+copy+1.
func (h hedgeDraws) at(k, copy int) time.Duration {
	return h.d.Draw(h.seed, uint64(2*k+copy+1))
}

// answer is when call k is answered by the draws alone, with a hedge after delay (0: none).
func (h hedgeDraws) answer(k int, delay time.Duration) time.Duration {
	first := h.at(k, 0)
	if delay <= 0 || first <= delay {
		return first
	}
	return min(first, delay+h.at(k, 1))
}

// path asks the downstream for copy of call k: its drawn delay, tagged "k.copy".
func (h hedgeDraws) path(k, copy int) string {
	p := fakesrv.Behaviour{Delay: h.at(k, copy)}.Path()
	return p + lab.Sep(p) + "call=" + strconv.Itoa(k) + "." + strconv.Itoa(copy)
}

// inFlight is the most requests held at once by the draws, without a hedge or after delay.
func (h hedgeDraws) inFlight(calls int, delay time.Duration) int {
	type event struct {
		at   time.Duration
		step int
	}
	peak := 0
	for _, after := range []time.Duration{0, delay} {
		evs := make([]event, 0, 4*calls)
		for k := range calls {
			start := time.Duration(k) * distSpacing
			end := start + h.answer(k, after)
			evs = append(evs, event{start, 1}, event{end, -1})
			if after > 0 && h.at(k, 0) > after {
				evs = append(evs, event{start + after, 1}, event{end, -1})
			}
		}
		slices.SortFunc(evs, func(a, b event) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.step, b.step)) })
		n := 0
		for _, e := range evs {
			n += e.step
			peak = max(peak, n)
		}
	}
	return peak
}

// checkDist checks the distribution rows' parameters.
func (c *Cascade) checkDist() error {
	if c.DelayDist == "" {
		if c.Seed != dist.DefaultSeed || c.DistCalls != defaultDistCalls {
			return fmt.Errorf("--seed and --dist-calls need --delay-dist: they number and count its draws")
		}
		return nil
	}
	d, err := dist.Parse(c.DelayDist)
	if err != nil {
		return fmt.Errorf("--delay-dist: %w", err)
	}
	h := hedgeDraws{d, uint64(c.Seed)}
	var worst time.Duration
	for k := range c.DistCalls {
		worst = max(worst, h.at(k, 0), h.at(k, 1))
	}
	if worst > maxDistDraw {
		return fmt.Errorf("--delay-dist %s draws up to %v in --dist-calls %d of --seed %d, want at most %v: the rows must end",
			param(d), worst, c.DistCalls, c.Seed, maxDistDraw)
	}
	if n := h.inFlight(c.DistCalls, c.HedgeAfter); n > maxDistFlight {
		return fmt.Errorf("--delay-dist %s holds up to %d requests at once, one call every %v, want at most %d: a shorter distribution",
			param(d), n, distSpacing, maxDistFlight)
	}
	return nil
}

// param is d as text, cut for a row name.
func param(d dist.Dist) string {
	if s := d.String(); len(s) <= 48 {
		return s
	}
	return string(d.Kind) + ":..."
}

// distCall makes call k; an error unless it ends ok.
type distCall func(ctx context.Context, k int) error

// distVariant is a client, judged as one that hedges after hedge (0: none).
type distVariant struct {
	name  string
	call  distCall
	hedge time.Duration
}

// distSample is what a distribution row measured.
type distSample struct {
	took            []time.Duration // each call's time from its start
	late            []time.Duration // how late each call started: a Go timer's lateness meanwhile
	failed, arrived int
}

// hedgingDist runs the distribution rows.
func (c *Cascade) hedgingDist(ctx context.Context, opt lab.Options) ([]results.Row, error) {
	d, _ := dist.Parse(c.DelayDist) // checked by checkDist
	draws := hedgeDraws{d, uint64(c.Seed)}
	down, err := upstream.NewDownstream(0)
	if err != nil {
		return nil, err
	}
	defer down.Close()
	variants, done, err := distVariants(opt.Profile(), down.URL, draws, c.HedgeAfter)
	if err != nil {
		return nil, err
	}
	defer done()
	var longest time.Duration
	for k := range c.DistCalls {
		longest = max(longest, draws.at(k, 0))
	}
	var rows []results.Row
	var cost []time.Duration
	for i, v := range variants {
		opt.Step(time.Duration(c.DistCalls)*distSpacing+longest, "%s · hedging over %s %d/%d", c.Info().Name, param(d), i+1, len(variants))
		s, err := c.measureDist(ctx, down, v.call)
		if err != nil {
			return nil, err
		}
		cost = machineCost(draws, v, s, cost)
		rows = append(rows, c.distRows(draws, v, s, cost)...)
	}
	return rows, nil
}

// distVariants are the clients of base: no hedge, labrun's (upstream.Hedge over profile's
// client) and hedgedhttp's, after delay; done closes them.
func distVariants(profile, base string, draws hedgeDraws, delay time.Duration) (vs []distVariant, done func(), err error) {
	b, err := lab.Build(profile, lab.Spec{Pool: 2 * maxDistFlight})
	if err != nil {
		return nil, nil, err
	}
	labrun := copyCall(b.C, base, draws)
	tr := &http.Transport{MaxIdleConnsPerHost: 2 * maxDistFlight}
	done = func() {
		b.C.Close()
		tr.CloseIdleConnections()
	}
	rt, err := hedgedhttp.NewRoundTripper(delay, 2, keyedTransport{tr, draws})
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("hedgedhttp: %w", err)
	}
	return []distVariant{
		{"no hedge", func(ctx context.Context, k int) error { return labrun(ctx, k, 0) }, 0},
		{fmt.Sprintf("labrun's hedge after %v", delay), hedged(delay, labrun), delay},
		{fmt.Sprintf("hedgedhttp after %v", delay), libCall(&http.Client{Transport: rt}, base), delay},
	}, done, nil
}

// copyCall sends copy of call k through c to the downstream at base.
func copyCall(c lab.Caller, base string, draws hedgeDraws) func(ctx context.Context, k, copy int) error {
	return func(ctx context.Context, k, copy int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+draws.path(k, copy), nil)
		if err != nil {
			return fmt.Errorf("build request: %w", err)
		}
		if res, _ := c.Do(ctx, req); res == nil || res.Outcome != vocab.OK {
			return errNotOK
		}
		return nil
	}
}

// hedged is call k through upstream.Hedge after delay, each copy by do.
func hedged(delay time.Duration, do func(ctx context.Context, k, copy int) error) distCall {
	return func(ctx context.Context, k int) error {
		_, _, err := upstream.Hedge(ctx, delay, func(ctx context.Context, copy int) (struct{}, error) {
			return struct{}{}, do(ctx, k, copy)
		})
		return err
	}
}

// libCall is call k through hc.
func libCall(hc *http.Client, base string) distCall {
	return func(ctx context.Context, k int) error {
		return getOK(ctx, hc, base+"/delay?call="+strconv.Itoa(k))
	}
}

// keyedTransport sends call k's copies to their paths; hedgedhttp marks the hedge.
type keyedTransport struct {
	rt    http.RoundTripper
	draws hedgeDraws
}

func (t keyedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	k, err := strconv.Atoi(req.URL.Query().Get("call"))
	if err != nil {
		return nil, fmt.Errorf("keyed transport: no call number in %q", req.URL.RawQuery)
	}
	copy := 0
	if hedgedhttp.IsHedgedRequest(req) {
		copy = 1
	}
	r := req.Clone(req.Context())
	r.URL.Path, r.URL.RawQuery, _ = strings.Cut(t.draws.path(k, copy), "?")
	return t.rt.RoundTrip(r)
}

// measureDist makes the calls, one every distSpacing, each within twice maxDistDraw.
func (c *Cascade) measureDist(ctx context.Context, down *upstream.Downstream, call distCall) (distSample, error) {
	n := c.DistCalls
	s := distSample{took: make([]time.Duration, n), late: make([]time.Duration, n)}
	failed := make([]bool, n)
	down.Fake().Reset()
	down.ResetCounts()
	t0 := time.Now()
	var g errgroup.Group
	for k := range n {
		due := t0.Add(time.Duration(k) * distSpacing)
		if !goTimerUntil(ctx, due) {
			break
		}
		start := time.Now()
		s.late[k] = start.Sub(due)
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(ctx, 2*maxDistDraw)
			defer cancel()
			err := call(cctx, k)
			s.took[k], failed[k] = time.Since(start), err != nil
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return distSample{}, err
	}
	for _, f := range failed {
		if f {
			s.failed++
		}
	}
	s.arrived = down.Arrived()
	return s, nil
}

// goTimerUntil waits for t on a plain Go timer, as a hedge's delay does, so that the calls'
// start lateness samples that timer's; false when ctx ends first.
func goTimerUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

const costPoints = 100

// machineCost is what this machine added to v's calls, costPoints quantiles of measured less
// drawn time where no hedge acts (drawn within half its delay), plus, hedged, the call's start
// lateness, which the hedge's timer suffers too; prior when too few were drawn that short.
func machineCost(draws hedgeDraws, v distVariant, s distSample, prior []time.Duration) []time.Duration {
	var over []time.Duration
	for k, t := range s.took {
		if d := draws.at(k, 0); v.hedge == 0 || d <= v.hedge/2 {
			c := max(t-d, 0)
			if v.hedge > 0 {
				c += s.late[k]
			}
			over = append(over, c)
		}
	}
	if len(over) < minCostCalls {
		return prior
	}
	slices.Sort(over)
	out := make([]time.Duration, costPoints)
	for i := range out {
		out[i] = over[(2*i+1)*len(over)/(2*costPoints)]
	}
	return out
}

// sampleQuantile is the p-quantile of xs, the draw of model.SampleRank.
func sampleQuantile(xs []time.Duration, p float64) time.Duration {
	sorted := slices.Sorted(slices.Values(xs))
	return sorted[model.SampleRank(len(sorted), p)-1]
}

// distRows judges v's p50 and p99 within the model's sampling band, its top on this machine
// (each call plus a cost), and the requests the downstream received.
func (c *Cascade) distRows(draws hedgeDraws, v distVariant, s distSample, cost []time.Duration) []results.Row {
	n := len(s.took)
	q := model.TailQuestion{Dist: draws.d, Hedge: v.hedge}
	drawn := make([]time.Duration, n)
	for k := range drawn {
		drawn[k] = draws.answer(k, v.hedge)
	}
	outcome := vocab.OK
	if s.failed > 0 {
		outcome = vocab.Failed
	}
	group := fmt.Sprintf("hedging over %s (seed %d): %s", param(draws.d), draws.seed, v.name)
	var rows []results.Row
	for _, p := range []float64{0.5, 0.99} {
		lo, hi := model.QuantileBand(n, p, distConfidence)
		pct := fmt.Sprintf("p%.0f", 100*p)
		why := fmt.Sprintf("the %s of %d draws lies between the model's p%.2f and p%.2f %.1f%% of the time (order statistics); "+
			"the top is the model's on this machine, each call plus a cost drawn from those measured where no hedge acts",
			pct, n, 100*lo, 100*hi, 100*distConfidence)
		rows = append(rows, lab.Judged(fmt.Sprintf("%s: %s of %d calls", group, pct, n), lab.Ended(vocab.OK, outcome),
			lab.LastedD(q.CostQuantile(p, v.hedge > 0, nil), sampleQuantile(s.took, p)),
			lab.Band(q.CostQuantile(lo, v.hedge > 0, nil), q.CostQuantile(hi, v.hedge > 0, cost), why),
			lab.Calls(n, n-s.failed), lab.Saw(fmt.Sprintf("the seed's draws: %.1f ms; the machine's cost: p50 %.1f ms, p99 %.1f ms",
				lab.MsOf(sampleQuantile(drawn, p)), lab.MsOf(cost[costPoints/2]), lab.MsOf(cost[costPoints*99/100])))))
	}
	return append(rows, c.distCount(group, draws, v, s))
}

// distCount: a request a call, and a copy for the model's share past the delay within its
// binomial band, widened by the calls drawn within HedgeEdge after it (the copy may not arrive)
// and those drawn before it but answered after (it went).
func (c *Cascade) distCount(group string, draws hedgeDraws, v distVariant, s distSample) results.Row {
	n := len(s.took)
	share := 0.0
	if v.hedge > 0 {
		share = 1 - draws.d.CDF(v.hedge)
	}
	name := fmt.Sprintf("%s: requests the downstream received (+%.0f%%)", group, 100*share)
	if v.hedge == 0 {
		return lab.Judged(name, lab.Executions(results.Count(n), results.Count(s.arrived)))
	}
	lo, hi := model.CountBand(n, share, distConfidence)
	edge, late := 0, 0
	for k, t := range s.took {
		switch d := draws.at(k, 0); {
		case d > v.hedge && d <= v.hedge+model.HedgeEdge:
			edge++
		case d <= v.hedge && t > v.hedge-model.HedgeEdge:
			late++
		}
	}
	why := fmt.Sprintf("a copy for every call not answered by %v: the model's %.1f%% of %d, %d to %d %.1f%% of the time (binomial), "+
		"less %d drawn within %v after the delay, plus %d drawn before it but answered later",
		v.hedge, 100*share, n, lo, hi, 100*distConfidence, edge, model.HedgeEdge, late)
	return lab.Judged(name, lab.Executions(results.Count(n+max(lo-edge, 0)), results.Count(s.arrived)),
		lab.ExecutionsUpTo(results.Count(n+hi+late), why))
}
