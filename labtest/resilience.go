package labtest

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/upstream"
)

// The resilience scenarios: a series of calls at a steady pace against a downstream of their
// own, with counts and percentiles beside the model's.

// Tail is a downstream with a slow tail: Calls calls, one every Spacing, answered in Fast, but
// the first request of 1 call in Every in Slow; a hedged copy is answered in Fast.
type Tail struct {
	Calls   int
	Every   int
	Fast    time.Duration
	Slow    time.Duration
	Spacing time.Duration
}

// HedgeRow is what a hedging client made of a Tail.
type HedgeRow struct {
	// OK counts the calls that ended with a 2xx.
	Calls, OK int
	// P50 and P99 are the calls' latencies by nearest rank.
	P50, P99 time.Duration
	// Requests counts the requests the downstream received, copies included.
	Requests int
	Expected HedgeExpectation
}

type HedgeExpectation struct {
	P99      time.Duration
	Requests int
}

func (r HedgeRow) String() string {
	return fmt.Sprintf("hedge: %d/%d ok, p50 %v, p99 %v, %d requests (model: p99 %v, %d requests)", r.OK, r.Calls,
		r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Requests, r.Expected.P99.Round(time.Millisecond), r.Expected.Requests)
}

// check reports a Tail that cannot run.
func (t Tail) check() error {
	switch {
	case t.Calls < 1 || t.Calls > 1000:
		return fmt.Errorf("labtest: Tail.Calls must be 1 to 1000, got %d", t.Calls)
	case t.Every < 1:
		return fmt.Errorf("labtest: Tail.Every must be at least 1, got %d", t.Every)
	case t.Fast < 0 || t.Slow < t.Fast || t.Spacing < 0:
		return fmt.Errorf("labtest: Tail needs 0 <= Fast <= Slow and Spacing >= 0, got Fast %v, Slow %v, Spacing %v", t.Fast, t.Slow, t.Spacing)
	case time.Duration(t.Calls)*t.Spacing+t.Slow > 2*time.Minute:
		return fmt.Errorf("labtest: a Tail must end within 2 minutes, got %v", time.Duration(t.Calls)*t.Spacing+t.Slow)
	}
	return nil
}

// RunHedge makes t's GETs with c, a client that hedges after hedgeAfter (0: it does not), and
// returns the row.
func RunHedge(ctx context.Context, c Doer, t Tail, hedgeAfter time.Duration) (HedgeRow, error) {
	if err := t.check(); err != nil {
		return HedgeRow{}, err
	}
	d, err := upstream.NewDownstream(0)
	if err != nil {
		return HedgeRow{}, fmt.Errorf("labtest: %w", err)
	}
	defer d.Close()
	d.SetTail(upstream.Tail{Every: t.Every, Slow: t.Slow - t.Fast})
	path := fmt.Sprintf("/delay?delay=%s&call=", t.Fast)
	took, ok := pace(ctx, t.Calls, t.Spacing, func(i int) bool { return get(ctx, c, d.URL+path+strconv.Itoa(i)) })
	row := HedgeRow{Calls: t.Calls, OK: ok, Requests: d.Arrived()}
	row.P50, row.P99 = nearestRank(took, 0.50), nearestRank(took, 0.99)
	// The model's copy has the same tail drawn independently, the lab's is always fast: they agree
	// while at most 1 call in 10 is slow.
	slow := (t.Calls + t.Every - 1) / t.Every // calls 0, Every, 2 x Every, ...
	tail := model.Tail{Fast: t.Fast, Slow: t.Slow, SlowFraction: float64(slow) / float64(t.Calls)}
	row.Expected = HedgeExpectation{P99: tail.Quantile(0.99), Requests: t.Calls}
	if hedgeAfter > 0 {
		row.Expected.P99 = tail.Hedge(hedgeAfter).P99
		for i := range t.Calls {
			if slow := i%t.Every == 0; (slow && t.Slow > hedgeAfter) || (!slow && t.Fast > hedgeAfter) {
				row.Expected.Requests++
			}
		}
	}
	return row, ctx.Err()
}

// Storm is a timeout storm: Calls calls, one every Spacing, answered in Fast, except those
// starting in the first Storm, answered in Slow (a retry does not escape it).
type Storm struct {
	Calls   int
	Spacing time.Duration
	Storm   time.Duration
	Fast    time.Duration
	Slow    time.Duration
}

// Breaker declares a caller's timeout and circuit breaker: it opens after Trip failures in a
// row, stays open for Open, then lets HalfOpenMax calls through. Trip 0: no breaker.
type Breaker struct {
	Timeout     time.Duration
	Trip        int
	Open        time.Duration
	HalfOpenMax int
}

// StormRow is what a caller made of a Storm.
type StormRow struct {
	// Failed counts the calls that failed after reaching the downstream, Shed those the breaker
	// refused.
	Calls, OK, Failed, Shed int
	// NewConnections counts the connections accepted: a timed-out call closes its connection.
	NewConnections int
	// TimeWait counts the caller's sockets left in TIME_WAIT (/proc/net/tcp); -1 where unreadable.
	TimeWait int
	Expected StormExpectation
}

// StormExpectation is the model's answer, from a pool without idle connections.
type StormExpectation struct {
	OK, Failed, Shed, NewConnections, TimeWait int
}

func (r StormRow) String() string {
	e := r.Expected
	return fmt.Sprintf("storm: %d ok, %d failed, %d shed, %d new connections, %d in TIME_WAIT (model: %d, %d, %d, %d, %d)",
		r.OK, r.Failed, r.Shed, r.NewConnections, r.TimeWait, e.OK, e.Failed, e.Shed, e.NewConnections, e.TimeWait)
}

// check reports a Storm or a Breaker that cannot run.
func (s Storm) check(b Breaker) error {
	switch {
	case s.Calls < 1 || s.Calls > 1000:
		return fmt.Errorf("labtest: Storm.Calls must be 1 to 1000, got %d", s.Calls)
	case s.Spacing < 0 || s.Storm < 0 || s.Fast < 0 || s.Slow < s.Fast:
		return fmt.Errorf("labtest: Storm needs no negative time and Slow >= Fast, got %+v", s)
	case time.Duration(s.Calls)*s.Spacing+s.Slow > 2*time.Minute:
		return fmt.Errorf("labtest: a Storm must end within 2 minutes, got %v", time.Duration(s.Calls)*s.Spacing+s.Slow)
	case b.Timeout <= 0:
		return fmt.Errorf("labtest: Breaker.Timeout must be set, got %v", b.Timeout)
	case b.Trip < 0 || b.Open < 0 || (b.Trip > 0 && b.HalfOpenMax < 1):
		return fmt.Errorf("labtest: Breaker needs Trip >= 0, Open >= 0 and, with Trip, HalfOpenMax >= 1, got %+v", b)
	}
	return nil
}

// RunStorm makes s's calls with c, whose timeout and breaker b declares, and returns the row.
func RunStorm(ctx context.Context, c Doer, s Storm, b Breaker) (StormRow, error) {
	if err := s.check(b); err != nil {
		return StormRow{}, err
	}
	d, err := upstream.NewDownstream(0)
	if err != nil {
		return StormRow{}, fmt.Errorf("labtest: %w", err)
	}
	defer d.Close()
	_, portText, _ := net.SplitHostPort(strings.TrimPrefix(d.URL, "http://"))
	port, _ := strconv.Atoi(portText)
	before, beforeErr := upstream.TimeWaitSet(port)
	d.SetTail(upstream.Tail{Every: 1, Slow: s.Slow - s.Fast, Calls: s.slowCalls()})
	path := fmt.Sprintf("/delay?delay=%s&call=", s.Fast)
	var mu sync.Mutex // guards failed
	failed := 0
	_, ok := pace(ctx, s.Calls, s.Spacing, func(i int) bool {
		good := get(ctx, c, d.URL+path+strconv.Itoa(i))
		if !good && d.Reached(strconv.Itoa(i)) {
			mu.Lock()
			failed++
			mu.Unlock()
		}
		return good
	})
	opened, _ := d.Conns()
	row := StormRow{Calls: s.Calls, OK: ok, Failed: failed, Shed: s.Calls - ok - failed, NewConnections: opened, TimeWait: -1}
	if beforeErr == nil {
		if n, err := upstream.NewTimeWaits(ctx, port, before); err == nil {
			row.TimeWait = n
		}
	}
	row.Expected = s.expect(b)
	return row, ctx.Err()
}

func (s Storm) slowCalls() int {
	n := 0
	for n < s.Calls && time.Duration(n)*s.Spacing < s.Storm {
		n++
	}
	return n
}

func (s Storm) expect(b Breaker) StormExpectation {
	calls := make([]model.BreakerCall, s.Calls)
	for i := range calls {
		at := time.Duration(i) * s.Spacing
		slow := at < s.Storm
		calls[i] = model.BreakerCall{At: at, Took: s.Fast, Fails: slow && s.Slow > b.Timeout}
		if slow {
			calls[i].Took = min(s.Slow, b.Timeout)
		}
	}
	var shed []bool
	if b.Trip > 0 {
		shed = model.Breaker{Trip: b.Trip, Open: b.Open, HalfOpenMax: b.HalfOpenMax}.Predict(calls).Shed
	}
	var e StormExpectation
	for i, cl := range calls {
		switch {
		case shed != nil && shed[i]:
			e.Shed++
		case cl.Fails:
			e.Failed++
		default:
			e.OK++
		}
	}
	e.NewConnections, e.TimeWait = model.StormConns(calls, shed, 0)
	return e
}

// pace calls call(i) at i x spacing from the start and returns the latencies and successes.
func pace(ctx context.Context, n int, spacing time.Duration, call func(i int) bool) ([]time.Duration, int) {
	took := make([]time.Duration, n)
	good := make([]bool, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			t := time.NewTimer(time.Until(t0.Add(time.Duration(i) * spacing)))
			defer t.Stop()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			began := time.Now()
			good[i] = call(i)
			took[i] = time.Since(began)
		})
	}
	wg.Wait()
	ok := 0
	for _, g := range good {
		if g {
			ok++
		}
	}
	return took, ok
}

// get makes one GET and reports a 2xx read to its end.
func get(ctx context.Context, c Doer, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return err == nil && resp.StatusCode/100 == 2
}

// nearestRank is the q-quantile of ds by nearest rank (0 for none).
func nearestRank(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}
