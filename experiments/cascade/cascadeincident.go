package cascade

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
	"golang.org/x/sync/errgroup"
)

// cascadeRecord is what one request of the cascade measured, in times from the pause's start.
type cascadeRecord struct {
	worker, leased, end time.Duration // leased -1: never
	outcome             vocab.Outcome
}

// cascade runs one variant: as many requests as workers arrive together as inventory pauses,
// and a health check arrives at a third and at two thirds of the pause.
func (c *Cascade) cascade(ctx context.Context, opt lab.Options, d *upstream.Downstream, name string, s lab.Spec, starting func(time.Duration)) ([]results.Row, []results.Call, error) {
	b, err := lab.Build(opt.Profile(), s)
	if err != nil {
		return nil, nil, err
	}
	defer b.C.Close()
	lease := leaseOf(b)
	width := b.ModelPool(c.Workers)
	if c.Capacity > 0 {
		width = min(width, c.Capacity)
	}
	measureHandoff := width <= maxHandoffWidth && width*handoffBatches <= c.Workers
	var handoff time.Duration
	var cal lab.Built
	if measureHandoff {
		// The hand-off is measured through a client of the same pool without the lease
		// timeout: a batch that waits at the pool longer than it on a loaded machine would
		// otherwise end the measurement.
		cs := s
		cs.LeaseTimeout = 0
		if cal, err = lab.Build(opt.Profile(), cs); err != nil {
			return nil, nil, err
		}
		defer cal.C.Close()
		// A backlog that drains in a few batches or less pays the hand-off too few times to
		// matter, and a wide one would take many calls to measure it.
		if handoff, err = c.handoff(ctx, cal, d, width); err != nil {
			return nil, nil, err
		}
	}
	health := []time.Duration{c.Pause / 3, 2 * c.Pause / 3}
	m := model.Cascade{Workers: c.Workers, Pool: b.ModelPool(c.Workers), LeaseTimeout: lease, Requests: c.Workers,
		Health: health, Pause: c.Pause, Service: c.Service + handoff, Capacity: c.Capacity}
	starting(m.Predict().Recovered)

	d.Fake().Reset()
	d.ResetCounts()
	w := upstream.NewWorkers(c.Workers)
	beh := fakesrv.Behaviour{Delay: c.Service}
	recs := make([]cascadeRecord, c.Workers)
	calls := make([]results.Call, c.Workers)
	waits := make([]time.Duration, len(health))
	// Every request's goroutine is started first and released at once, so that starting 200
	// goroutines does not count as queueing.
	start := make(chan struct{})
	var t0 time.Time
	var g errgroup.Group
	for i := range recs {
		g.Go(func() error {
			<-start
			var res workerResult
			got, err := w.Do(ctx, func() {
				r, err := lab.CallURL(ctx, b.C, d.URL, beh, strconv.Itoa(i))
				res = workerResult{r, err, time.Since(t0)}
			})
			if err != nil {
				return err
			}
			if res.err != nil {
				return res.err
			}
			worker := got.Sub(t0)
			rec := cascadeRecord{worker: worker, leased: -1, end: res.end, outcome: res.r.Outcome}
			if a := res.r.Attempts[0]; a.Outcome != vocab.LeaseTimeout {
				rec.leased = worker + a.Lease
			}
			recs[i] = rec
			// One lane per variant (lab.LaneSep): the requests stacked, a track each, draw the
			// workers over time, leasing and waiting.
			calls[i] = lab.Timeline(name+lab.LaneSep+"requests", res.r, worker)
			return nil
		})
	}
	for j, at := range health {
		g.Go(func() error {
			<-start
			due := t0.Add(at)
			if !clock.SleepUntil(ctx, due) {
				return ctx.Err()
			}
			// The wait counts from when the check was due: a wake-up that a loaded machine
			// makes late must not shorten it.
			got, err := w.Do(ctx, func() {})
			waits[j] = got.Sub(due)
			return err
		})
	}
	t0 = time.Now()
	d.PauseUntil(t0.Add(c.Pause))
	close(start)
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	peak := d.Peak()
	if measureHandoff {
		// The hand-off is measured again right after the rows, and the smaller of the two is
		// the one taken: a neighbour's burst during one measurement makes it larger, never
		// smaller, and a hand-off taken too large would make the rows early, which noise
		// cannot explain.
		after, err := c.handoff(ctx, cal, d, width)
		if err != nil {
			return nil, nil, err
		}
		handoff = min(handoff, after)
		m.Service = c.Service + handoff
	}
	pred := m.Predict()
	// The counts at an instant follow the model at the requests' measured starts: on a
	// loaded machine 200 goroutines released together get their workers over tens of ms,
	// and a request that started late is not yet where the stated times put it.
	at := m
	at.Arrivals = make([]time.Duration, len(recs))
	for i, r := range recs {
		at.Arrivals[i] = r.worker
	}
	started := at.Predict()
	m.Service = c.Service
	prod := m.Predict() // the production figures: scaled up, without this machine's hand-off
	rows := c.cascadeRows(name, pred, started, prod, recs, waits, health, peak)
	if s.LeaseTimeout > 0 && lease == 0 {
		// The rows say that the lease timeout they name is not applied, under the IDs of the
		// variant's rows in a profile that has one.
		for i := range rows {
			rows[i].ID = results.Slug(rows[i].Name)
			rows[i].Name = strings.Replace(rows[i].Name, name, fmt.Sprintf("%s (%s has none: not applied)", name, opt.Profile()), 1)
		}
	}
	for i := range rows {
		if rows[i].Server == "" && rows[i].ExpectedMs != nil {
			rows[i].Server = fmt.Sprintf("model: %v per call + %.1f ms measured hand-off", c.Service, float64(handoff)/float64(time.Millisecond))
		}
	}
	return rows, calls, ctx.Err()
}

// handoffBatches is how many batches measure the hand-off, and maxHandoffWidth the widest
// batch measured: at most 500 calls.
const (
	handoffBatches  = 4
	maxHandoffWidth = 100
)

// handoff measures what a call costs beyond the downstream's service time on this machine
// when a backlog drains (loopback, the server's wake-up, the pool handing the connection to
// the next waiter): handoffBatches + 1 batches of width calls started together through b,
// width being what serves the backlog at once (the pool, or the downstream's capacity when it
// is smaller), timed from the end of the first batch, which dials. Each batch pays the
// hand-off once; the model takes it as part of the service time.
func (c *Cascade) handoff(ctx context.Context, b lab.Built, d *upstream.Downstream, width int) (time.Duration, error) {
	d.PauseUntil(time.Time{})
	beh := fakesrv.Behaviour{Delay: c.Service}
	n := width * (handoffBatches + 1)
	ends := make([]time.Duration, n)
	start := make(chan struct{})
	var t0 time.Time
	var g errgroup.Group
	for i := range ends {
		g.Go(func() error {
			<-start
			res, err := lab.CallURL(ctx, b.C, d.URL, beh, "hand-off")
			if err != nil {
				return err
			}
			if res.Outcome != vocab.OK {
				return fmt.Errorf("measure the hand-off: %w", res.Attempts[len(res.Attempts)-1].Err)
			}
			ends[i] = time.Since(t0)
			return nil
		})
	}
	t0 = time.Now()
	close(start)
	if err := g.Wait(); err != nil {
		return 0, err
	}
	// The first batch dials the connections; the batches after it hand them over.
	slices.Sort(ends)
	drain := ends[n-1] - ends[width-1]
	return (max(drain-handoffBatches*c.Service, 0) / handoffBatches).Round(100 * time.Microsecond), ctx.Err()
}
