package http2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labrun/labrun/client/h2"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// h2Call is one measured call of experiment H.
type h2Call struct {
	start, end time.Duration
	outcome    vocab.Outcome
	status     int
	// node is the node's index (-1: none), conn the client's connection number (0: none).
	node, conn int
	newConn    bool
	// setUp is the wait for a connection being set up.
	setUp time.Duration
}

func (c h2Call) took() time.Duration { return c.end - c.start }

func poolCall(ctx context.Context, p *h2.Pool, ns *h2Nodes, path string, t0 time.Time) h2Call {
	start := time.Since(t0)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h2HostName+path, nil)
	if err != nil {
		panic("experiments: a malformed push path: " + path) // the paths are the experiment's own
	}
	res, _ := p.Do(ctx, req)
	c := h2Call{start: start, end: start + res.Elapsed, outcome: res.Outcome, status: res.Status,
		node: ns.index(res.Route), conn: res.Conn, newConn: res.NewConn}
	if res.Stream > 0 {
		c.setUp = res.Elapsed - res.Stream
	}
	return c
}

// goCall makes one call with net/http's HTTP/2 client to url: Client.Timeout ends it with
// vocab.Deadline, any other failure with vocab.Failed.
func goCall(ctx context.Context, g *h2.Go, url string, t0 time.Time) h2Call {
	var conn atomic.Int64
	var reused atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		conn.Store(int64(h2.ConnID(info.Conn)))
		reused.Store(info.Reused)
	}})
	start := time.Since(t0)
	req, err := http.NewRequestWithContext(tctx, http.MethodGet, url, nil)
	if err != nil {
		panic("experiments: a malformed node URL: " + url) // the experiment's own nodes
	}
	resp, err := g.Client.Do(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}
	c := h2Call{start: start, end: time.Since(t0), outcome: vocab.OK, status: status, node: 0, conn: int(conn.Load()), newConn: !reused.Load()}
	var ne net.Error
	switch {
	case err == nil:
	case ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()):
		c.outcome = vocab.Deadline // Client.Timeout: "exceeded while awaiting headers"
	default:
		c.outcome = vocab.Failed
	}
	if c.conn == 0 {
		c.node = -1
	}
	return c
}

func h2Together(n int, call func(i int) h2Call) []h2Call {
	out := make([]h2Call, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = call(i) })
	}
	wg.Wait()
	return out
}

// waitFor polls cond every millisecond until it holds (true), limit passes or ctx is done.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) || !clock.SleepUntil(ctx, time.Now().Add(time.Millisecond)) {
			return false
		}
	}
	return true
}

// outcomeOf is the calls' shared outcome, or the first (ranked) that differs from want.
func outcomeOf(calls []h2Call, want vocab.Outcome) vocab.Outcome {
	var other []vocab.Outcome
	for _, c := range calls {
		if c.outcome != want {
			other = append(other, c.outcome)
		}
	}
	if len(calls) == 0 {
		return ""
	}
	if len(other) == 0 {
		return want
	}
	slices.SortFunc(other, func(a, b vocab.Outcome) int { return a.Rank() - b.Rank() })
	return other[0]
}

func tookOf(calls []h2Call) []time.Duration {
	var d []time.Duration
	for _, c := range calls {
		d = append(d, c.took())
	}
	return d
}

func predTook(calls []model.H2Call) []time.Duration {
	var d []time.Duration
	for _, c := range calls {
		d = append(d, c.Took())
	}
	return d
}

func pick[T any](all []T, idx []int) []T {
	var out []T
	for _, i := range idx {
		out = append(out, all[i])
	}
	return out
}

func indexes(calls []model.H2Call, keep func(i int, c model.H2Call) bool) []int {
	var idx []int
	for i, c := range calls {
		if keep(i, c) {
			idx = append(idx, i)
		}
	}
	return idx
}

// lastEnd is the predicted calls' latest end (0: none; Forever for a hang).
func lastEnd(calls []model.H2Call) time.Duration {
	var last time.Duration
	for _, c := range calls {
		last = max(last, c.End)
	}
	return last
}

// share writes streams per node: "180 · 0 · 0".
func share(perNode []int) string {
	var parts []string
	for _, n := range perNode {
		parts = append(parts, fmt.Sprint(n))
	}
	return strings.Join(parts, " · ")
}

// h2Lanes labels a scenario's calls "scenario › node N › conn C", so the timeline draws a lane
// per connection, grouped by node, calls ordered by node, connection and start.
func h2Lanes(scenario string, ns *h2Nodes, calls []h2Call) []results.Call {
	sorted := slices.Clone(calls)
	slices.SortStableFunc(sorted, func(a, b h2Call) int {
		switch {
		case a.node != b.node:
			return a.node - b.node
		case a.conn != b.conn:
			return a.conn - b.conn
		}
		return int(a.start - b.start)
	})
	var out []results.Call
	for _, c := range sorted {
		node, conn := "no node", "no connection"
		if c.node >= 0 {
			host, _, _ := net.SplitHostPort(ns.nodes[c.node].Addr)
			node = fmt.Sprintf("node %d (%s)", c.node+1, host)
		}
		if c.conn > 0 {
			conn = fmt.Sprintf("conn %d", c.conn)
		}
		a := results.Attempt{StartMs: *results.Ms(c.start), EndMs: results.Ms(c.end), Outcome: c.outcome, NewConnection: c.newConn}
		if c.setUp > 0 {
			a.Phases = append(a.Phases, results.PhaseSpan{Phase: vocab.PhaseConnect, Ms: results.Ms(c.setUp)})
		}
		a.Phases = append(a.Phases, results.PhaseSpan{Phase: vocab.PhaseWait, Ms: results.Ms(c.took() - c.setUp)})
		out = append(out, results.Call{Label: scenario + lab.LaneSep + node + lab.LaneSep + conn, Attempts: []results.Attempt{a}})
	}
	return out
}

func joinSemi(parts []string) string { return strings.Join(parts, "; ") }
