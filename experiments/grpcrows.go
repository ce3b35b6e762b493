package experiments

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/fakesrv"
	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The measurements of exp-m's cases (grpcCases), one function per case.

// atDefaults reports whether the documented figures apply.
func (g *GRPC) atDefaults() bool { return param.Same(g.Params(), NewGRPC().Params()) }

// doc is the documented figure of a row at the documented parameters.
func (g *GRPC) doc(text string, ms float64) (string, *float64) {
	return documented(g.atDefaults(), figure{text, ms})
}

// noDeadline: no deadline, a handler that never answers: the call is still waiting at the cap,
// and no grpc-timeout went out.
func (g *GRPC) noDeadline(ctx context.Context, srv *grpcsrv.Server, _ Options) ([]results.Row, error) {
	cc, err := dial(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	p := model.PredictGRPC(model.GRPCCall{Hang: true, Cap: g.Cap})
	cctx, cancel := context.WithCancel(ctx) // a cancel, not a deadline: nothing goes on the wire
	defer cancel()
	capTimer := time.AfterFunc(g.Cap, cancel)
	defer capTimer.Stop()
	start := time.Now()
	err = invoke(cctx, cc, "hang", "hang")
	took := time.Since(start)
	outcome := grpcOutcome(err)
	if status.Code(err) == codes.Canceled && ctx.Err() == nil {
		outcome = vocab.Hang // the cap ended it
	}
	c, _ := callOf(ctx, srv, "hang", time.Second, func(c grpcsrv.Call) bool { return c.Code != "" })
	note := "no grpc-timeout; the handler hung until the client left"
	if c.Timeout != "" {
		outcome, note = vocab.Failed, "grpc-timeout "+c.Timeout+" came, though the call had no deadline"
	}
	text, ms := g.doc("still waiting at a 5 s cap; no grpc-timeout", 0)
	return []results.Row{{
		Name:       fmt.Sprintf("no deadline, a handler that never answers: still waiting at the %v cap", g.Cap),
		Documented: text, DocumentedMs: ms,
		ExpectedMs: results.Ms(p.Measured), MeasuredMs: results.Ms(took),
		ExpectedOutcome: p.Outcome, Outcome: outcome, ExpectedCalls: 1, Calls: 1, Server: note,
	}}, nil
}

// deadline: the deadline on the wire and at the server, a handler that ignores its context
// (charged anyway) and one that watches it.
func (g *GRPC) deadline(ctx context.Context, srv *grpcsrv.Server, _ Options) ([]results.Row, error) {
	cc, err := dial(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	measure := func(id, fault string) (grpcsrv.Call, time.Time, time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, g.Deadline)
		defer cancel()
		start := time.Now()
		err := invoke(cctx, cc, id, fault)
		took := time.Since(start)
		c, _ := callOf(ctx, srv, id, g.Work+time.Second, func(c grpcsrv.Call) bool { return c.Code != "" })
		return c, start, took, err
	}
	p := model.PredictGRPC(model.GRPCCall{Deadline: g.Deadline, Work: g.Work})
	c, start, took, err := measure("charged", fmt.Sprintf("work=%v,ignore-ctx", g.Work))
	ctxOutcome := vocab.Failed
	if slices.Contains(model.GRPCServerEnds(), c.CtxErr) {
		ctxOutcome = vocab.Deadline
	}
	var rows []results.Row
	text, ms := g.doc("DeadlineExceeded at 300.4 ms", 300.4)
	rows = append(rows, results.Row{
		Name:       fmt.Sprintf("deadline %v, a %v handler: DeadlineExceeded at the deadline", g.Deadline, g.Work),
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(p.End), MeasuredMs: results.Ms(took),
		ExpectedOutcome: p.Outcome, Outcome: grpcOutcome(err), ExpectedCalls: 1, Calls: 1,
		Server: "the call ended " + status.Code(err).String(),
	})
	text, ms = g.doc("299.9 ms", 299.9)
	rows = append(rows, results.Row{
		Name:       "grpc-timeout on the wire: the budget left when the headers went out",
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(p.Timeout), MeasuredMs: c.TimeoutMs,
		ExpectedCalls: 1, Calls: 1, Server: fmt.Sprintf("grpc-timeout %q (grpc-go writes %q for exactly %v)", c.Timeout, model.GRPCTimeoutText(p.Timeout), p.Timeout),
	})
	text, ms = g.doc("300.4 ms, Canceled 4/5, DeadlineExceeded 1/5", 300.4)
	rows = append(rows, results.Row{
		Name:       "the server's context ends at the deadline: Canceled or DeadlineExceeded, either expected",
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(p.ServerDone), MeasuredMs: since(start, c.CtxEnd),
		ExpectedOutcome: vocab.Deadline, Outcome: ctxOutcome, ExpectedCalls: 1, Calls: 1,
		Server: fmt.Sprintf("context ended %s; RST_STREAM from the client %s, from the server %s (%s)", orDash(c.CtxErr), orDash(c.RSTFromClient), orDash(c.RSTFromServer), model.GRPCServerEndsReason),
	})
	text, ms = g.doc("1000.9 ms, charged", 1000.9)
	rows = append(rows, results.Row{
		Name:       "a handler that ignores its context finishes its work: charged anyway",
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(p.HandlerEnd), MeasuredMs: since(start, c.ExecutedAt),
		ExpectedCalls: 1, Calls: 1,
		ExpectedExecutions: results.Count(btoi(p.Executed)), ServerExecutions: results.Count(srv.Stats().Executions["charged"]),
		Server: "the handler returned " + orDash(c.Code),
	})
	pw := model.PredictGRPC(model.GRPCCall{Deadline: g.Deadline, Work: g.Work, WatchesContext: true})
	c, start, _, _ = measure("watched", fmt.Sprintf("work=%v", g.Work))
	text, ms = g.doc("~300.6 ms, not charged", 0)
	rows = append(rows, results.Row{
		Name:       "a handler that watches its context returns at the deadline: not charged",
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(pw.HandlerEnd), MeasuredMs: since(start, c.Done),
		ExpectedCalls: 1, Calls: 1,
		ExpectedExecutions: results.Count(btoi(pw.Executed)), ServerExecutions: results.Count(srv.Stats().Executions["watched"]),
		Server: "the handler returned " + orDash(c.Code),
	})
	return rows, nil
}

// keptDeadline and keptWork are the timed-out calls of the connection rows: short, so that
// many fit in a second, and far apart.
const (
	keptDeadline = minGap
	keptWork     = 4 * minGap
)

// kept: timed-out calls reset their stream and keep the connection; net/http's HTTP/1.1
// closes one per timeout.
func (g *GRPC) kept(ctx context.Context, srv *grpcsrv.Server, _ Options) ([]results.Row, error) {
	cc, err := dial(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	p := model.PredictGRPC(model.GRPCCall{Deadline: keptDeadline, Work: keptWork, WatchesContext: true})
	var ends []time.Duration
	deadlines := 0
	outcome := p.Outcome
	for i := range g.Timeouts {
		cctx, cancel := context.WithTimeout(ctx, keptDeadline)
		start := time.Now()
		err := invoke(cctx, cc, fmt.Sprintf("t%d", i), fmt.Sprintf("work=%v", keptWork))
		ends = append(ends, time.Since(start))
		cancel()
		if o := grpcOutcome(err); o == p.Outcome {
			deadlines++
		} else {
			outcome = o
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Every stream has ended on the server once its handler returned.
	reset := 0
	for i := range g.Timeouts {
		c, _ := callOf(ctx, srv, fmt.Sprintf("t%d", i), time.Second, func(c grpcsrv.Call) bool { return c.Code != "" })
		if c.RSTFromClient != "" || c.RSTFromServer != "" {
			reset++
		}
	}
	st := srv.Stats()
	idx := make([]int, len(ends))
	for i := range idx {
		idx[i] = i
	}
	n := g.Timeouts + 1 // the warm-up call included
	text, _ := g.doc("1 connection after 21 timeouts", 0)
	rows := []results.Row{{
		Name:       fmt.Sprintf("%d timed-out calls (deadline %v, %v handlers) on one connection: kept", g.Timeouts, keptDeadline, keptWork),
		Documented: text, ExpectedMs: results.Ms(p.End), MeasuredMs: results.Ms(median(ends, idx)),
		ExpectedOutcome: p.Outcome, Outcome: outcome, ExpectedCalls: g.Timeouts, Calls: deadlines,
		ExpectedNewConnections: results.Count(model.GRPCChannelConns(n)), NewConnections: results.Count(st.Connections),
		Server: fmt.Sprintf("%s for %d calls", vocab.Plural(st.Connections, "connection"), n),
	}, {
		Name:          "their streams reset (RST_STREAM from either side, either expected)",
		ExpectedCalls: g.Timeouts, Calls: reset,
		Server: fmt.Sprintf("RST_STREAM from the client %s, from the server %s", codeCounts(st.RSTFromClient), codeCounts(st.RSTFromServer)),
	}}
	h1, err := g.h1Closes(ctx)
	if err != nil {
		return nil, err
	}
	return append(rows, h1), nil
}

// h1Closes makes the same timed-out calls with net/http over HTTP/1.1 and counts its
// connections: each timeout closes one.
func (g *GRPC) h1Closes(ctx context.Context) (results.Row, error) {
	srv, err := newServer()
	if err != nil {
		return results.Row{}, err
	}
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: keptDeadline, Transport: tr}
	calls := make([]model.BreakerCall, g.Timeouts)
	timedOut := 0
	for i := range calls {
		calls[i] = model.BreakerCall{Took: keptWork, Fails: true}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+fakesrv.Behaviour{Delay: keptWork}.Path(), nil)
		if err != nil {
			return results.Row{}, err
		}
		res, err := hc.Do(req)
		if err == nil {
			res.Body.Close()
		} else if vocab.ClassifyNetHTTP(err, false) == vocab.Deadline {
			timedOut++
		}
	}
	if err := ctx.Err(); err != nil {
		return results.Row{}, err
	}
	dials, closes := model.StormConns(calls, nil, 0)
	text, _ := g.doc("20 of 20 connections closed, 20 new", 0)
	return results.Row{
		Name:       fmt.Sprintf("beside it, net/http over HTTP/1.1 with Client.Timeout %v: %d timeouts close %d connections", keptDeadline, g.Timeouts, closes),
		Documented: text, ExpectedOutcome: vocab.Deadline, Outcome: outcomeIf(timedOut == g.Timeouts, vocab.Deadline),
		ExpectedCalls: g.Timeouts, Calls: timedOut,
		ExpectedNewConnections: results.Count(dials), NewConnections: results.Count(srv.ConnsAccepted()),
		Server: "accepted " + vocab.Plural(srv.ConnsAccepted(), "connection"),
	}, nil
}

// chain: A calls B with its deadline, B works then calls C; B passes its context on, or uses
// its own deadline.
func (g *GRPC) chain(ctx context.Context, srv *grpcsrv.Server, _ Options) ([]results.Row, error) {
	cc, err := dial(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	measure := func(id, next string) (grpcsrv.Call, time.Time, time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, g.Chain)
		defer cancel()
		cctx = metadata.NewOutgoingContext(cctx, metadata.Pairs(grpcsrv.FaultHeader, fmt.Sprintf("work=%v,next=%s", g.HopWork, next),
			grpcsrv.NextFaultHeader, fmt.Sprintf("work=%v", g.LeafWork), grpcsrv.CallHeader, id))
		start := time.Now()
		var resp []byte
		err := cc.Invoke(cctx, grpcsrv.MethodCall, []byte{}, &resp)
		took := time.Since(start)
		c, _ := callOf(ctx, srv, id+"/next", g.HopOwn+time.Second, func(c grpcsrv.Call) bool { return c.Code != "" })
		return c, start, took, err
	}
	pa := model.PredictGRPC(model.GRPCCall{Deadline: g.Chain, Work: g.HopWork + g.LeafWork})
	pc := model.PredictGRPC(model.GRPCCall{Deadline: g.Chain, Spent: g.HopWork, Work: g.LeafWork, WatchesContext: true})
	c, start, took, err := measure("pass", "pass")
	var rows []results.Row
	text, ms := g.doc("899.2 ms", 899.2)
	rows = append(rows, results.Row{
		Name:       fmt.Sprintf("A (%v) -> B (%v of work) -> C, the context passed on: C is given what is left", g.Chain, g.HopWork),
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(pc.Timeout), MeasuredMs: c.TimeoutMs,
		ExpectedCalls: 1, Calls: 1, Server: fmt.Sprintf("C got grpc-timeout %q", c.Timeout),
	})
	text, ms = g.doc("1000.6 ms, 0 reservations", 1000.6)
	rows = append(rows, results.Row{
		Name:       "C stops with A's deadline: nothing reserved",
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(g.HopWork + pc.HandlerEnd), MeasuredMs: since(start, c.Done),
		ExpectedOutcome: pa.Outcome, Outcome: grpcOutcome(err), ExpectedCalls: 1, Calls: 1,
		ExpectedExecutions: results.Count(btoi(pc.Executed)), ServerExecutions: results.Count(srv.Stats().Executions["pass/next"]),
		Server: fmt.Sprintf("A's call ended %s at %s; C's context ended %s", status.Code(err), fmtMs(took), orDash(c.CtxErr)),
	})
	po := model.PredictGRPC(model.GRPCCall{Deadline: g.HopOwn, Work: g.LeafWork, WatchesContext: true})
	c, start, took, err = measure("own", g.HopOwn.String())
	text, ms = g.doc("1602 ms, 600 ms after A gave up", 1602)
	rows = append(rows, results.Row{
		Name:       fmt.Sprintf("B uses its own %v instead: C reserves after A gave up", g.HopOwn),
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(g.HopWork + po.HandlerEnd), MeasuredMs: since(start, c.ExecutedAt),
		ExpectedOutcome: pa.Outcome, Outcome: grpcOutcome(err), ExpectedCalls: 1, Calls: 1,
		ExpectedExecutions: results.Count(btoi(po.Executed)), ServerExecutions: results.Count(srv.Stats().Executions["own/next"]),
		Server: fmt.Sprintf("A's call ended %s at %s; C got grpc-timeout %q and answered %s", status.Code(err), fmtMs(took), c.Timeout, orDash(c.Code)),
	})
	return rows, nil
}

// stream: a server stream with one message every g.Every and a deadline of g.Chain: the
// deadline covers the whole call.
func (g *GRPC) stream(ctx context.Context, srv *grpcsrv.Server, _ Options) ([]results.Row, error) {
	cc, err := dial(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	cctx, cancel := context.WithTimeout(ctx, g.Chain)
	defer cancel()
	cctx = metadata.NewOutgoingContext(cctx, metadata.Pairs(grpcsrv.FaultHeader, fmt.Sprintf("every=%v", g.Every), grpcsrv.CallHeader, "stream"))
	start := time.Now()
	got := 0
	cs, err := cc.NewStream(cctx, &grpc.StreamDesc{ServerStreams: true}, grpcsrv.MethodStream)
	if err == nil {
		err = cs.SendMsg([]byte{})
	}
	if err == nil {
		err = cs.CloseSend()
	}
	for err == nil {
		var m []byte
		if err = cs.RecvMsg(&m); err == nil {
			got++
		}
	}
	took := time.Since(start)
	p := model.PredictGRPC(model.GRPCCall{Deadline: g.Chain, Hang: true})
	want := model.GRPCStreamMessages(0, g.Every, g.Chain, 0)
	text, ms := g.doc("DeadlineExceeded at 1000.7 ms", 1000.7)
	text2, _ := g.doc("2 messages", 0)
	return []results.Row{{
		Name:       fmt.Sprintf("a server stream, a message every %v, deadline %v: DeadlineExceeded at the deadline", g.Every, g.Chain),
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(p.End), MeasuredMs: results.Ms(took),
		ExpectedOutcome: p.Outcome, Outcome: grpcOutcome(err), ExpectedCalls: 1, Calls: 1,
		Server: "the stream ended " + status.Code(err).String(),
	}, {
		Name:       "messages received before it: a deadline, not a limit per read (exp-a inverted)",
		Documented: text2, ExpectedCalls: want, Calls: got,
		Server: fmt.Sprintf("received %s", vocab.Plural(got, "message")),
	}}, nil
}

// grpcRetryWork is the work of each attempt of the retry rows.
const grpcRetryWork = 100 * time.Millisecond

// retries: a retry policy against UNAVAILABLE after the work: every attempt executes.
func (g *GRPC) retries(ctx context.Context, srv *grpcsrv.Server, opt Options) ([]results.Row, error) {
	backoff := model.GRPCRetryPolicy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Multiplier: 2}
	capped := backoff
	capped.MaxAttempts, capped.Pushback = 10, 50*time.Millisecond
	var rows []results.Row
	for _, c := range []struct {
		id, fault, name, doc string
		docMs                float64
		r                    model.GRPCRetry
	}{
		{"retry", "unavailable", "retry policy (maxAttempts 3, backoff 100 ms x2) vs UNAVAILABLE after 100 ms of work: every attempt charged", "3 executions, 601.7 ms", 601.7,
			model.GRPCRetry{Policy: backoff, Work: grpcRetryWork}},
		{"ok-on-2", "unavailable,ok-on=2", "the same, ok on the second attempt", "2 executions", 0,
			model.GRPCRetry{Policy: backoff, Work: grpcRetryWork, OKOn: 2}},
		{"capped", "unavailable,pushback=50ms", "maxAttempts 10 is capped at 5; a 50 ms pushback replaces the backoff exactly", "capped at 5", 0,
			model.GRPCRetry{Policy: capped, Work: grpcRetryWork}},
	} {
		cc, err := dial(ctx, srv, grpc.WithDefaultServiceConfig(retryConfig(c.r.Policy)))
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a cap far beyond the policy
		start := time.Now()
		err = invoke(cctx, cc, c.id, fmt.Sprintf("work=%v,%s", grpcRetryWork, c.fault))
		took := time.Since(start)
		cancel()
		cc.Close()
		p := c.r.Predict()
		text, ms := g.doc(c.doc, c.docMs)
		row := results.Row{
			Name: c.name, Documented: text, DocumentedMs: ms,
			ExpectedMs: results.Ms(p.Mid()), MeasuredMs: results.Ms(took),
			ExpectedOutcome: p.Outcome, Outcome: grpcOutcome(err), ExpectedCalls: 1, Calls: 1,
			ExpectedExecutions: results.Count(p.Executions), ServerExecutions: results.Count(srv.Stats().Executions[c.id]),
			Server: "the call ended " + status.Code(err).String(),
		}
		if p.Max > p.Min { // the jitter: the row's time is a range, its margin says so
			row.ToleranceMs = results.Ms((p.Max-p.Min)/2 + opt.Tolerance)
			row.Server += fmt.Sprintf("; the jitter puts it in %s-%s", fmtMs(p.Min), fmtMs(p.Max))
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// retryConfig is a service config with p as the retry policy of every labrun.Fault method.
func retryConfig(p model.GRPCRetryPolicy) string {
	return fmt.Sprintf(`{"methodConfig":[{"name":[{"service":"labrun.Fault"}],"retryPolicy":{"maxAttempts":%d,`+
		`"initialBackoff":"%gs","maxBackoff":"%gs","backoffMultiplier":%g,"retryableStatusCodes":["UNAVAILABLE"]}}]}`,
		p.MaxAttempts, p.InitialBackoff.Seconds(), p.MaxBackoff.Seconds(), p.Multiplier)
}

// transparent: a refused stream, and one beyond a GOAWAY, are sent again once, not counted as
// an attempt, even with retries disabled.
func (g *GRPC) transparent(ctx context.Context, srv *grpcsrv.Server, _ Options) ([]results.Row, error) {
	var rows []results.Row
	for _, c := range []struct {
		id, fault, name string
		goAway          bool
	}{
		{"refused", "refuse=1", "a stream refused (REFUSED_STREAM), WithDisableRetry: sent again transparently, streams", false},
		{"goaway", "goaway=1", "a stream beyond a GOAWAY, WithDisableRetry: sent again on a new connection, streams", true},
	} {
		cc, err := dial(ctx, srv, grpc.WithDisableRetry())
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = invoke(cctx, cc, c.id, c.fault)
		cancel()
		cc.Close()
		streams, conns := 0, map[int]bool{}
		for _, call := range srv.Stats().Calls {
			if call.ID == c.id {
				streams++
				conns[call.Conn] = true
			}
		}
		wantStreams, wantExec, wantOutcome := model.GRPCTransparent(1)
		text, _ := g.doc("2 streams, 1 execution", 0)
		rows = append(rows, results.Row{
			Name: c.name, Documented: text,
			ExpectedOutcome: wantOutcome, Outcome: grpcOutcome(err), ExpectedCalls: wantStreams, Calls: streams,
			ExpectedExecutions: results.Count(wantExec), ServerExecutions: results.Count(srv.Stats().Executions[c.id]),
			ExpectedNewConnections: results.Count(model.GRPCTransparentConns(c.goAway)), NewConnections: results.Count(len(conns)),
			Server: fmt.Sprintf("%s on %s", vocab.Plural(streams, "stream"), vocab.Plural(len(conns), "connection")),
		})
	}
	return rows, nil
}

// waves: calls started at once through the server's stream limit queue on one connection.
func (g *GRPC) waves(ctx context.Context, srv *grpcsrv.Server, _ Options) ([]results.Row, error) {
	cc, err := dial(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	preds := model.GRPCWaves(g.WaveCalls, g.StreamLimit, g.WaveWork, 0)
	outcomes := make([]vocab.Outcome, g.WaveCalls)
	ends := make([]time.Duration, g.WaveCalls)
	cctx, cancel := context.WithTimeout(ctx, time.Minute) // a cap far beyond the waves
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range g.WaveCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := invoke(cctx, cc, fmt.Sprintf("w%d", i), fmt.Sprintf("work=%v", g.WaveWork))
			ends[i], outcomes[i] = time.Since(start), grpcOutcome(err)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conns := srv.Stats().Connections
	var rows []results.Row
	docs := []float64{203, 406, 607, 808, 1010}
	for i, gr := range groupCalls(preds, outcomes, ends) {
		row := results.Row{
			Name:            fmt.Sprintf("%d calls of %v, MaxConcurrentStreams %d: wave %d", g.WaveCalls, g.WaveWork, g.StreamLimit, i+1),
			ExpectedOutcome: gr.outcome, ExpectedCalls: gr.want, Calls: len(gr.calls), ExpectedMs: expectedMs(gr.at),
		}
		if gr.want == 0 {
			row.Name = fmt.Sprintf("%d calls, MaxConcurrentStreams %d: unexpected %s", g.WaveCalls, g.StreamLimit, gr.outcome)
		}
		if len(gr.calls) > 0 {
			row.Outcome = outcomes[gr.calls[0]]
			row.MeasuredMs = results.Ms(median(ends, gr.calls))
		}
		if i < len(docs) {
			row.Documented, row.DocumentedMs = g.doc(fmt.Sprintf("%.0f ms", docs[i]), docs[i])
		}
		if i == 0 {
			row.ExpectedNewConnections, row.NewConnections = results.Count(model.GRPCChannelConns(g.WaveCalls+1)), results.Count(conns)
			row.Server = "every call on " + vocab.Plural(conns, "connection")
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// codeCounts writes RST_STREAM counts by code: "CANCEL x20", "none".
func codeCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s x%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// outcomeIf is o when ok, else vocab.Failed.
func outcomeIf(ok bool, o vocab.Outcome) vocab.Outcome {
	if ok {
		return o
	}
	return vocab.Failed
}
