package cascade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/cristalhq/hedgedhttp"
	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// hedgeSpacing is the time between the starts of the hedging rows' calls.
const hedgeSpacing = 5 * time.Millisecond

// errNotOK is a labrun call that did not end ok, for the hedge.
var errNotOK = errors.New("call did not end ok")

// hedging runs the hedging rows: the calls without a hedge, with labrun's own hedge
// (upstream.Hedge over the profile's client) and with github.com/cristalhq/hedgedhttp over
// net/http's Transport, against a downstream whose slow first requests a copy overtakes.
func (c *Cascade) hedging(ctx context.Context, opt lab.Options, d *upstream.Downstream) ([]results.Row, error) {
	// The slow calls are 0, Every, 2 x Every, ...: their share of these calls, which is 1 in
	// Every only when Every divides the count, is the tail's fraction.
	tail := model.Tail{Fast: c.HedgeFast, Slow: c.HedgeSlow, SlowFraction: float64(slowShare(c.HedgeCalls, c.HedgeEvery)) / float64(c.HedgeCalls)}
	hedged := tail.Hedge(c.HedgeAfter)
	beh := fakesrv.Behaviour{Delay: c.HedgeFast}
	b, err := lab.Build(opt.Profile(), lab.Spec{Pool: 20})
	if err != nil {
		return nil, err
	}
	defer b.C.Close()
	labrun := func(ctx context.Context, tag string) error {
		res, err := lab.CallURL(ctx, b.C, d.URL, beh, tag)
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
		return getOK(ctx, hc, d.URL+beh.Path()+lab.Sep(beh.Path())+"call="+tag)
	}
	variants := []struct {
		name  string
		do    func(ctx context.Context, tag string) error
		p99   time.Duration
		extra float64
		hedge bool
	}{
		{"hedging: no hedge", labrun, tail.Quantile(0.99), 0, false},
		{fmt.Sprintf("hedging: labrun's hedge after %v", c.HedgeAfter), func(ctx context.Context, tag string) error {
			_, _, err := upstream.Hedge(ctx, c.HedgeAfter, func(ctx context.Context, _ int) (struct{}, error) { return struct{}{}, labrun(ctx, tag) })
			return err
		}, hedged.P99, hedged.Extra, true},
		{fmt.Sprintf("hedging: hedgedhttp after %v", c.HedgeAfter), lib, hedged.P99, hedged.Extra, true},
	}
	var rows []results.Row
	for i, v := range variants {
		opt.Step(time.Duration(c.HedgeCalls)*hedgeSpacing+c.HedgeSlow, "%s · hedging %d/%d", c.Info().Name, i+1, len(variants))
		d.SetTail(upstream.Tail{Every: c.HedgeEvery, Slow: c.HedgeSlow - c.HedgeFast})
		d.ResetCounts()
		took := make([]time.Duration, c.HedgeCalls)
		late := make([]time.Duration, c.HedgeCalls) // how late each call started: the machine's lateness meanwhile
		failed := make([]bool, c.HedgeCalls)
		t0 := time.Now()
		var g errgroup.Group
		for k := range took {
			g.Go(func() error {
				due := t0.Add(time.Duration(k) * hedgeSpacing)
				if !clock.SleepUntil(ctx, due) {
					return ctx.Err()
				}
				start := time.Now()
				late[k] = start.Sub(due)
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
			lab.Judged(fmt.Sprintf("%s: p99 of %d calls", v.name, c.HedgeCalls), lab.Ended(vocab.OK, outcome),
				lab.LastedD(v.p99, sorted[rank]), lab.Calls(c.HedgeCalls, ok),
				lab.Saw(fmt.Sprintf("p50 %s, max %s", lab.FmtMs(sorted[(len(sorted)-1)/2]), lab.FmtMs(sorted[len(sorted)-1])))),
			c.hedgeCount(v.name, v.extra, v.hedge, took, slices.Max(late), d.Arrived()),
		)
	}
	d.SetTail(upstream.Tail{})
	return rows, nil
}

// slowShare is how many of calls calls numbered 0, 1, ... are every every-th: 0, every, ...
func slowShare(calls, every int) int { return (calls + every - 1) / every }

// hedgeCount is the row of the requests the downstream received. Without a hedge it is one a
// call. With one, the model's rule (a hedge for every call not answered by the delay) is
// applied to the calls' measured times (model.Hedges): on a loaded machine a fast call can
// answer after the delay and rightly send a hedge, so the count the stated times give is not
// what this run should have sent. late is the most a call started late, the machine's
// wake-up lateness during the calls, which decides how close to the delay an answer leaves
// open whether its hedge reached the server. The row names the count at the stated times.
func (c *Cascade) hedgeCount(name string, extra float64, hedge bool, took []time.Duration, late time.Duration, arrived int) results.Row {
	stated := c.HedgeCalls + int(math.Round(extra*float64(c.HedgeCalls)))
	name = fmt.Sprintf("%s: requests the downstream received (+%.0f%%)", name, extra*100)
	if !hedge {
		return lab.Judged(name, lab.Executions(results.Count(stated), results.Count(arrived)))
	}
	lo, hi := model.Hedges(took, c.HedgeAfter, late)
	want, upTo := results.Count(c.HedgeCalls+lo), (*int)(nil)
	if hi > lo {
		upTo = results.Count(c.HedgeCalls + hi)
	}
	why := ""
	if c.HedgeCalls+lo != stated || hi > lo {
		why = fmt.Sprintf("a hedge for every call not answered by %v: %d at the stated times; "+
			"the calls' measured times give %s (%d answered within %s of the delay, where the hedge may or may not have reached the server)",
			c.HedgeAfter, stated, results.RangeText(want, upTo), hi-lo, lab.FmtMs(max(late, model.HedgeEdge)))
	}
	return lab.Judged(name, lab.Executions(want, results.Count(arrived)), lab.ExecutionsUpTo(upTo, why))
}

// getOK GETs url through hc and reads the body whole (so that the connection is reused): an
// error unless the answer is a 200.
func getOK(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
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
