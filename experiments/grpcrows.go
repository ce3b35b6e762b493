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

	"github.com/labrun/labrun/experiments/internal/lab"
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

// doc judges a row's documented figure: text and, when it is one number, ms (0 otherwise), at
// the documented parameters only.
func (g *GRPC) doc(text string, ms float64) lab.Judge {
	text, at := documented(g.atDefaults(), figure{text, ms})
	return lab.Documented(text, at, nil)
}

// noDeadline: no deadline, a handler that never answers: the call is still waiting at the cap,
// and no grpc-timeout went out.
func (g *GRPC) noDeadline(ctx context.Context, srv *grpcsrv.Server, _ Options, run *results.Run) error {
	cc, err := dial(ctx, srv)
	if err != nil {
		return err
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
	outcome := lab.GRPCOutcome(err)
	if status.Code(err) == codes.Canceled && ctx.Err() == nil {
		outcome = vocab.Hang // the cap ended it
	}
	c, _ := callOf(ctx, srv, "hang", time.Second, func(c grpcsrv.Call) bool { return c.Code != "" })
	note := "no grpc-timeout; the handler hung until the client left"
	if c.Timeout != "" {
		outcome, note = vocab.Failed, "grpc-timeout "+c.Timeout+" came, though the call had no deadline"
	}
	run.Rows = append(run.Rows, lab.Judged(fmt.Sprintf("no deadline, a handler that never answers: still waiting at the %v cap", g.Cap),
		g.doc("still waiting at a 5 s cap; no grpc-timeout", 0),
		lab.LastedD(p.Measured, took), lab.Ended(p.Outcome, outcome), lab.Calls(1, 1), lab.Saw(note)))
	return nil
}

// deadline: the deadline on the wire and at the server, a handler that ignores its context
// (charged anyway) and one that watches it.
func (g *GRPC) deadline(ctx context.Context, srv *grpcsrv.Server, _ Options, run *results.Run) error {
	cc, err := dial(ctx, srv)
	if err != nil {
		return err
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
	run.Rows = append(run.Rows,
		lab.Judged(fmt.Sprintf("deadline %v, a %v handler: DeadlineExceeded at the deadline", g.Deadline, g.Work),
			g.doc("DeadlineExceeded at 300.4 ms", 300.4), lab.GRPCCalled(p.End, p.Outcome, took, err),
			lab.Saw("the call ended "+status.Code(err).String())),
		lab.Judged("grpc-timeout on the wire: the budget left when the headers went out",
			g.doc("299.9 ms", 299.9), lab.Lasted(lab.ExpectedMs(p.Timeout), c.TimeoutMs), lab.Calls(1, 1),
			lab.Saw(fmt.Sprintf("grpc-timeout %q (%q for %v)", c.Timeout, model.GRPCTimeoutText(p.Timeout), p.Timeout))),
		// Why either code is expected is the row's range reason: it would take a screen's
		// width of the server column.
		lab.Judged("the server's context ends at the deadline: Canceled or DeadlineExceeded, either expected",
			g.doc("300.4 ms, Canceled 4/5, DeadlineExceeded 1/5", 300.4), lab.EventAt(p.ServerDone, start, c.CtxEnd),
			lab.Ended(vocab.Deadline, ctxOutcome), lab.Because(model.GRPCServerEndsReason),
			lab.Saw(fmt.Sprintf("%s; RST: client %s, server %s", orDash(c.CtxErr), orDash(c.RSTFromClient), orDash(c.RSTFromServer)))),
		lab.Judged("a handler that ignores its context finishes its work: charged anyway",
			g.doc("1000.9 ms, charged", 1000.9), lab.EventAt(p.HandlerEnd, start, c.ExecutedAt),
			lab.Charged(p.Executed, srv.Stats().Executions["charged"]), lab.Saw("the handler returned "+orDash(c.Code))))
	pw := model.PredictGRPC(model.GRPCCall{Deadline: g.Deadline, Work: g.Work, WatchesContext: true})
	c, start, _, _ = measure("watched", fmt.Sprintf("work=%v", g.Work))
	run.Rows = append(run.Rows, lab.Judged("a handler that watches its context returns at the deadline: not charged",
		g.doc("~300.6 ms, not charged", 0), lab.EventAt(pw.HandlerEnd, start, c.Done),
		lab.Charged(pw.Executed, srv.Stats().Executions["watched"]), lab.Saw("the handler returned "+orDash(c.Code))))
	return nil
}

// chain: A calls B with its deadline, B works then calls C; B passes its context on, or uses
// its own deadline.
func (g *GRPC) chain(ctx context.Context, srv *grpcsrv.Server, _ Options, run *results.Run) error {
	cc, err := dial(ctx, srv)
	if err != nil {
		return err
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
	run.Rows = append(run.Rows,
		lab.Judged(fmt.Sprintf("A (%v) -> B (%v of work) -> C, the context passed on: C is given what is left", g.Chain, g.HopWork),
			g.doc("899.2 ms", 899.2), lab.Lasted(lab.ExpectedMs(pc.Timeout), c.TimeoutMs), lab.Calls(1, 1),
			lab.Saw(fmt.Sprintf("C got grpc-timeout %q", c.Timeout))),
		lab.Judged("C stops with A's deadline: nothing reserved",
			g.doc("1000.6 ms, 0 reservations", 1000.6), lab.EventAt(g.HopWork+pc.HandlerEnd, start, c.Done), lab.GRPCEnded(pa.Outcome, err),
			lab.Charged(pc.Executed, srv.Stats().Executions["pass/next"]),
			lab.Saw(fmt.Sprintf("A: %s at %s; C: %s", status.Code(err), lab.FmtMs(took), orDash(c.CtxErr)))))
	po := model.PredictGRPC(model.GRPCCall{Deadline: g.HopOwn, Work: g.LeafWork, WatchesContext: true})
	c, start, took, err = measure("own", g.HopOwn.String())
	run.Rows = append(run.Rows, lab.Judged(fmt.Sprintf("B uses its own %v instead: C reserves after A gave up", g.HopOwn),
		g.doc("1602 ms, 600 ms after A gave up", 1602), lab.EventAt(g.HopWork+po.HandlerEnd, start, c.ExecutedAt), lab.GRPCEnded(pa.Outcome, err),
		lab.Charged(po.Executed, srv.Stats().Executions["own/next"]),
		lab.Saw(fmt.Sprintf("A: %s at %s; C: %q, %s", status.Code(err), lab.FmtMs(took), c.Timeout, orDash(c.Code)))))
	return nil
}

// stream: a server stream with one message every g.Every and a deadline of g.Chain: the
// deadline covers the whole call.
func (g *GRPC) stream(ctx context.Context, srv *grpcsrv.Server, _ Options, run *results.Run) error {
	cc, err := dial(ctx, srv)
	if err != nil {
		return err
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
	run.Rows = append(run.Rows,
		lab.Judged(fmt.Sprintf("a server stream, a message every %v, deadline %v: DeadlineExceeded at the deadline", g.Every, g.Chain),
			g.doc("DeadlineExceeded at 1000.7 ms", 1000.7), lab.GRPCCalled(p.End, p.Outcome, took, err),
			lab.Saw("the stream ended "+status.Code(err).String())),
		lab.Judged("messages received before it: a deadline, not a limit per read (exp-a inverted)",
			g.doc("2 messages", 0), lab.Calls(model.GRPCStreamMessages(0, g.Every, g.Chain, 0), got),
			lab.Saw(fmt.Sprintf("received %s", vocab.Plural(got, "message")))))
	return nil
}
