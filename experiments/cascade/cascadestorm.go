package cascade

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sony/gobreaker/v2"
	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// stormSpacing is the time between the starts of the timeout storm's calls.
const stormSpacing = 40 * time.Millisecond

// timeWaitNote says where the TIME_WAIT count comes from and why it is exact.
const timeWaitNote = "the caller's sockets to the downstream in TIME_WAIT, from /proc/net/tcp: exact, as the kernel " +
	"keeps each 60 s and reuses none younger than 1 s (tcp_tw_reuse), and the row lasts under a second on a port of its own"

// storm runs the timeout storm: calls at a steady rate while the downstream's latency stays
// past the read timeout, then recovers; without a breaker and through
// github.com/sony/gobreaker/v2. Every timed-out call closes its connection, so the next one
// dials: the timeout storm is a handshake storm, and the caller, which closes first, holds
// each socket in TIME_WAIT. The breaker sheds the calls while it is open.
func (c *Cascade) storm(ctx context.Context, opt lab.Options) ([]results.Row, error) {
	calls := make([]model.BreakerCall, c.StormCalls)
	for i := range calls {
		at := time.Duration(i) * stormSpacing
		calls[i] = model.BreakerCall{At: at, Took: c.StormFast, Fails: at < c.Storm}
		if calls[i].Fails {
			calls[i].Took = c.StormRead
		}
	}
	breaker := model.Breaker{Trip: c.Trip, Open: c.BreakerOpen, HalfOpenMax: 1}
	variants := []struct {
		name    string
		breaker bool
		shed    []bool
	}{
		{"storm, no breaker", false, nil},
		{fmt.Sprintf("storm, gobreaker (%d failures, open %v)", c.Trip, c.BreakerOpen), true, breaker.Predict(calls).Shed},
	}
	var rows []results.Row
	for i, v := range variants {
		opt.Step(time.Duration(c.StormCalls)*stormSpacing+c.StormRead, "%s · timeout storm %d/%d", c.Info().Name, i+1, len(variants))
		r, err := c.stormVariant(ctx, opt, v.name, v.breaker, calls, v.shed, breaker)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// stormVariant runs the storm's calls once, through a breaker or not.
//
// Each variant has a downstream of its own, on a new port: Linux reuses for a new connection
// to the same address a local port whose TIME_WAIT socket is over a second old
// (tcp_tw_reuse, on for loopback), which would hide a socket of this row behind one of an
// earlier row. Within the row, which lasts under a second, no TIME_WAIT socket is reused.
func (c *Cascade) stormVariant(ctx context.Context, opt lab.Options, name string, useBreaker bool,
	calls []model.BreakerCall, shed []bool, br model.Breaker) ([]results.Row, error) {
	d, err := upstream.NewDownstream(0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	_, portText, err := net.SplitHostPort(strings.TrimPrefix(d.URL, "http://"))
	if err != nil {
		return nil, fmt.Errorf("downstream address: %w", err)
	}
	port, _ := strconv.Atoi(portText)
	b, err := lab.Build(opt.Profile(), lab.Spec{Pool: 20, ReadTimeout: c.StormRead})
	if err != nil {
		return nil, err
	}
	defer b.C.Close()
	if res, err := lab.CallURL(ctx, b.C, d.URL, fakesrv.Behaviour{}, "warm"); err != nil || res.Outcome != vocab.OK {
		return nil, fmt.Errorf("%s: the warm-up call failed", name)
	}
	before, sockErr := upstream.TimeWaitSet(port)
	opened0, closed0 := d.Conns()
	cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name: "inventory", MaxRequests: uint32(br.HalfOpenMax), Timeout: br.Open,
		ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= uint32(br.Trip) },
	})
	beh := fakesrv.Behaviour{Delay: c.StormFast}
	outcomes := make([]vocab.Outcome, len(calls))
	wasShed := make([]bool, len(calls))
	measured := slices.Clone(calls) // the calls as they ran: when each started, how long it took
	slow := 0
	for _, cl := range calls {
		if cl.Fails {
			slow++
		}
	}
	t0 := time.Now()
	d.SetTail(upstream.Tail{Every: 1, Slow: c.StormSlow - c.StormFast, Calls: slow})
	var g errgroup.Group
	for i := range calls {
		g.Go(func() error {
			if !clock.SleepUntil(ctx, t0.Add(calls[i].At)) {
				return ctx.Err()
			}
			measured[i].At = time.Since(t0)
			do := func() (struct{}, error) {
				res, err := lab.CallURL(ctx, b.C, d.URL, beh, strconv.Itoa(i))
				if err != nil {
					return struct{}{}, err
				}
				outcomes[i] = res.Outcome
				measured[i].Took, measured[i].Fails = res.Elapsed, res.Outcome != vocab.OK
				if res.Outcome != vocab.OK {
					return struct{}{}, errNotOK
				}
				return struct{}{}, nil
			}
			if !useBreaker {
				_, err := do()
				if errors.Is(err, errNotOK) {
					err = nil
				}
				return err
			}
			_, err := cb.Execute(do)
			wasShed[i] = errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	opened1, closed1 := d.Conns()
	span := time.Since(t0)
	// The counts follow the model's rules at the calls' measured times: on a loaded machine a
	// call that starts late, or an answer that comes late, moves which connection is idle
	// when and when the breaker opens; the stated times would then expect what this run
	// should not have done.
	if useBreaker {
		shed = br.Predict(measured).Shed
	}
	dials, hiDials, wantCloses := stormDials(measured, wasShed)
	wantTimeouts, wantOK, wantShed := 0, 0, 0
	for i, cl := range measured {
		switch {
		case shed != nil && shed[i]:
			wantShed++
		case cl.Fails:
			wantTimeouts++
		default:
			wantOK++
		}
	}
	gotTimeouts, gotOK, gotShed := 0, 0, 0
	for i, o := range outcomes {
		switch {
		case wasShed[i]:
			gotShed++
		case o == vocab.ReadTimeout:
			gotTimeouts++
		case o == vocab.OK:
			gotOK++
		}
	}
	rows := []results.Row{
		lab.Judged(name+": calls that timed out", lab.Calls(wantTimeouts, gotTimeouts)),
		lab.Judged(name+": calls answered", lab.Calls(wantOK, gotOK)),
		lab.Judged(name+": new connections (handshakes)", lab.Connections(results.Count(dials), results.Count(opened1-opened0)),
			lab.ConnectionsUpTo(maxIfMore(dials, hiDials), stormRange(dials, hiDials)),
			lab.Saw(fmt.Sprintf("%d accepted, %d closed in %s: %.0f handshakes a second", opened1-opened0, closed1-closed0,
				lab.FmtMs(span), float64(opened1-opened0)/span.Seconds()))),
	}
	if at, ok := reusable(measured, wasShed); ok {
		sockErr = fmt.Errorf("not counted: on this loaded machine a call started %s after the first timed-out call closed its socket, "+
			"and Linux may give a dial the port of a TIME_WAIT socket over 1 s old", lab.FmtMs(at))
	}
	timeWaits, notCounted := 0, lab.Judge(nil)
	if sockErr != nil {
		notCounted = lab.Skipped(sockErr.Error())
	} else {
		n, err := upstream.NewTimeWaits(ctx, port, before)
		if err != nil {
			notCounted = lab.Skipped(err.Error())
		}
		timeWaits = n
	}
	rows = append(rows, lab.Judged(name+": caller's sockets in TIME_WAIT", lab.Calls(wantCloses, timeWaits), lab.Saw(timeWaitNote), notCounted))
	if useBreaker {
		rows = append(rows, lab.Judged(name+": calls shed", lab.Calls(wantShed, gotShed)))
	}
	return rows, ctx.Err()
}

// stormEdge is how close an answer may come to the next call's start and still leave open
// whether its connection was back in the pool by then.
const stormEdge = 2 * time.Millisecond

// stormDials bounds the connections the storm's measured calls dial (model.StormConns at
// their measured times, each answer moved stormEdge either way) and counts those it closes.
func stormDials(measured []model.BreakerCall, shed []bool) (lo, hi, closes int) {
	early, late := slices.Clone(measured), slices.Clone(measured)
	for i := range measured {
		early[i].Took = max(0, early[i].Took-stormEdge)
		late[i].Took += stormEdge
	}
	lo, closes = model.StormConns(early, shed, 1)
	hi, _ = model.StormConns(late, shed, 1)
	return lo, hi, closes
}

// maxIfMore is a range's upper end, nil when it is the lower one.
func maxIfMore(lo, hi int) *int {
	if hi > lo {
		return results.Count(hi)
	}
	return nil
}

// stormRange says why the storm's connections are a range, "" when they are not.
func stormRange(lo, hi int) string {
	if hi <= lo {
		return ""
	}
	return fmt.Sprintf("%d answers came within %v of the next call's start: their connection may or may not have been back in the pool", hi-lo, stormEdge)
}

// reusable reports whether a call of the storm started more than a second after the first
// timed-out call closed its connection, and how long after: Linux then may reuse that
// TIME_WAIT socket's port for the dial (tcp_tw_reuse, on for loopback), so the TIME_WAIT
// count is no longer exact. The storm's calls at their stated times never do.
func reusable(measured []model.BreakerCall, shed []bool) (time.Duration, bool) {
	first := time.Duration(-1)
	for i, c := range measured {
		if c.Fails && !shed[i] && (first < 0 || c.At+c.Took < first) {
			first = c.At + c.Took
		}
	}
	if first < 0 {
		return 0, false
	}
	var last time.Duration
	for i, c := range measured {
		if !shed[i] {
			last = max(last, c.At)
		}
	}
	return last - first, last-first > time.Second
}
