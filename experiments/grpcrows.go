package experiments

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The measurements of exp-m's cases (grpcCases), one function per case: the deadline's own
// rows here, the connections' and attempts' in grpcconns.go.

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
		ExpectedCalls: 1, Calls: 1, Server: fmt.Sprintf("grpc-timeout %q (%q for %v)", c.Timeout, model.GRPCTimeoutText(p.Timeout), p.Timeout),
	})
	text, ms = g.doc("300.4 ms, Canceled 4/5, DeadlineExceeded 1/5", 300.4)
	rows = append(rows, results.Row{
		Name:       "the server's context ends at the deadline: Canceled or DeadlineExceeded, either expected",
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(p.ServerDone), MeasuredMs: since(start, c.CtxEnd),
		ExpectedOutcome: vocab.Deadline, Outcome: ctxOutcome, ExpectedCalls: 1, Calls: 1,
		Server: fmt.Sprintf("%s; RST: client %s, server %s", orDash(c.CtxErr), orDash(c.RSTFromClient), orDash(c.RSTFromServer)),
		// Why either code is expected is the row's range reason: it would take a screen's
		// width of the server column.
		RangeReason: model.GRPCServerEndsReason,
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
		Server: fmt.Sprintf("A: %s at %s; C: %s", status.Code(err), fmtMs(took), orDash(c.CtxErr)),
	})
	po := model.PredictGRPC(model.GRPCCall{Deadline: g.HopOwn, Work: g.LeafWork, WatchesContext: true})
	c, start, took, err = measure("own", g.HopOwn.String())
	text, ms = g.doc("1602 ms, 600 ms after A gave up", 1602)
	rows = append(rows, results.Row{
		Name:       fmt.Sprintf("B uses its own %v instead: C reserves after A gave up", g.HopOwn),
		Documented: text, DocumentedMs: ms, ExpectedMs: results.Ms(g.HopWork + po.HandlerEnd), MeasuredMs: since(start, c.ExecutedAt),
		ExpectedOutcome: pa.Outcome, Outcome: grpcOutcome(err), ExpectedCalls: 1, Calls: 1,
		ExpectedExecutions: results.Count(btoi(po.Executed)), ServerExecutions: results.Count(srv.Stats().Executions["own/next"]),
		Server: fmt.Sprintf("A: %s at %s; C: %q, %s", status.Code(err), fmtMs(took), c.Timeout, orDash(c.Code)),
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
