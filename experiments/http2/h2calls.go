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

// This file holds experiment H's measured calls, through OkHttp's pool or net/http, what the
// rows make of them, and their timelines.

// h2Call is one measured call of experiment H.
type h2Call struct {
	// start and end count from the scenario's start.
	start, end time.Duration
	outcome    vocab.Outcome
	status     int
	// node is the node's index (-1: none); conn the client's number for its connection (0:
	// none); newConn says the call opened it.
	node, conn int
	newConn    bool
	// setUp is how long the call waited for a connection being set up before its stream.
	setUp time.Duration
}

func (c h2Call) took() time.Duration { return c.end - c.start }

// poolCall makes one call through an OkHttp-style pool at path of push.test.
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

// goCall makes one call with net/http's own HTTP/2 client to url (node 0). A call that runs
// into Client.Timeout ends with vocab.Deadline; any other failure with vocab.Failed.
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

// h2Together makes n calls at once, call(i) each, and returns them in call order.
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

// outcomeOf is the outcome all of calls share, or the first that differs from want (ranked,
// for a stable row); none for no calls.
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

// tookOf lists the calls' durations.
func tookOf(calls []h2Call) []time.Duration {
	var d []time.Duration
	for _, c := range calls {
		d = append(d, c.took())
	}
	return d
}

// predTook lists the predicted calls' durations.
func predTook(calls []model.H2Call) []time.Duration {
	var d []time.Duration
	for _, c := range calls {
		d = append(d, c.Took())
	}
	return d
}

// pick returns the calls at the indexes idx.
func pick[T any](all []T, idx []int) []T {
	var out []T
	for _, i := range idx {
		out = append(out, all[i])
	}
	return out
}

// indexes lists the indexes of the predicted calls for which keep holds.
func indexes(calls []model.H2Call, keep func(i int, c model.H2Call) bool) []int {
	var idx []int
	for i, c := range calls {
		if keep(i, c) {
			idx = append(idx, i)
		}
	}
	return idx
}

// lastEnd is the latest end among the predicted calls (0 for none, Forever for a hang).
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

// h2Lanes turns a scenario's calls into timeline entries: the label "scenario › node N ›
// conn C" makes the SVG timeline draw the calls as streams in one lane per connection,
// grouped by node (report.WriteSVG: the part after the last " › " names the lane). Calls are
// ordered by node, connection and start.
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

// joinSemi joins parts with "; ".
func joinSemi(parts []string) string { return strings.Join(parts, "; ") }
