package cascade

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// sizing runs the pool sizing row: calls at a steady rate through a pool of QPS x p99 x 1.5
// connections, where p99 is the downstream's time per call, as the model has it.
func (c *Cascade) sizing(ctx context.Context, opt lab.Options, d *upstream.Downstream) ([]results.Row, error) {
	pool := model.PoolSize(float64(c.QPS), c.Hold, sizingHeadroom)
	b, err := lab.Build(opt.Profile(), lab.Spec{Pool: pool, LeaseTimeout: c.LeaseTimeout})
	if err != nil {
		return nil, err
	}
	defer b.C.Close()
	n := c.sizingCalls()
	opt.Step(c.Window+c.Hold, "%s · pool sizing: %d calls at %d/s through %d connections", c.Info().Name, n, c.QPS, pool)
	d.PauseUntil(time.Time{})
	beh := fakesrv.Behaviour{Delay: c.Hold}
	type span struct {
		from, to time.Duration
		lease    time.Duration // the wait for a connection
		outcome  vocab.Outcome
		took     time.Duration
	}
	spans := make([]span, n)
	t0 := time.Now()
	var g errgroup.Group
	for i := range spans {
		g.Go(func() error {
			at := time.Duration(float64(i) / float64(c.QPS) * float64(time.Second))
			if !clock.SleepUntil(ctx, t0.Add(at)) {
				return ctx.Err()
			}
			start := time.Since(t0)
			res, err := lab.CallURL(ctx, b.C, d.URL, beh, "size"+strconv.Itoa(i))
			if err != nil {
				return err
			}
			a := res.Attempts[0]
			spans[i] = span{from: start + a.Lease, to: time.Since(t0), lease: a.Lease, outcome: res.Outcome, took: res.Elapsed}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// The leased peak: a sweep over the spans' starts and ends, ends first at a tie.
	type edge struct {
		at time.Duration
		d  int
	}
	var edges []edge
	// leasedAt counts the calls that held a connection at t.
	leasedAt := func(t time.Duration) int {
		n := 0
		for _, o := range spans {
			if o.from <= t && t < o.to {
				n++
			}
		}
		return n
	}
	var held, longest time.Duration
	waited, stalled, queued, ok, timedOut := 0, 0, 0, 0, 0
	var took []time.Duration
	for _, s := range spans {
		edges = append(edges, edge{s.from, 1}, edge{s.to, -1})
		held += s.to - s.from
		longest = max(longest, s.lease)
		if s.lease > time.Millisecond {
			queued++
		}
		if s.lease > c.Hold/2 {
			if leasedAt(s.from-s.lease) >= pool {
				waited++
			} else {
				stalled++ // a connection was free when it asked: the machine kept it waiting
			}
		}
		if s.outcome == vocab.LeaseTimeout {
			timedOut++
		}
		if s.outcome == vocab.OK {
			ok++
			took = append(took, s.took)
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return a.d - b.d
	})
	peak, cur := 0, 0
	for _, e := range edges {
		cur += e.d
		peak = max(peak, cur)
	}
	// The pool keeps up when no call waits for a connection a significant part of a call's
	// time (half of it): the row judges the longest wait against 0 within Hold/2, so that a
	// wait the machine's noise explains (late timers bunch calls and stretch what they hold)
	// is inconclusive, and a pool that runs out fails. A pool below Little's average makes the
	// waits grow without end.
	mean := float64(held) / float64(c.Window+c.Hold)
	little := model.Concurrency(float64(c.QPS), c.Hold)
	saw := fmt.Sprintf("Little's law: %.1f leased on average; measured %.1f, peak %d of %d; %d waited over 1 ms, %d over %v with every connection leased",
		little, mean, peak, pool, queued, waited, c.Hold/2)
	if stalled > 0 {
		saw += fmt.Sprintf(", %d with one free (the machine, not the pool)", stalled)
	}
	leased := vocab.OK // every call got a connection; the answers are the next row's
	if timedOut > 0 {
		leased = vocab.LeaseTimeout
	}
	sized := lab.Judged(fmt.Sprintf("sizing: %d/s x p99 %v x %.1f = pool %d, the longest wait for a connection", c.QPS, c.Hold, sizingHeadroom, pool),
		lab.Ended(vocab.OK, leased), lab.Lasted(lab.ExpectedMs(0), results.Ms(longest)), lab.Within(c.Hold/2), lab.Saw(saw))
	var got vocab.Outcome
	var med *float64
	if ok > 0 {
		slices.Sort(took)
		got, med = vocab.OK, results.Ms(took[(len(took)-1)/2])
	}
	answered := lab.Judged("sizing: calls answered (median time)", lab.Ended(vocab.OK, got), lab.Calls(n, ok), lab.Lasted(lab.ExpectedMs(c.Hold), med))
	return []results.Row{sized, answered}, ctx.Err()
}
