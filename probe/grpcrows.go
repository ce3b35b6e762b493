package probe

import (
	"fmt"
	"math"
	"time"

	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The gRPC probe's rows, one kind of scenario each, judged against the model.

// capped is what the model says of a call that would end after the command's cap less its
// start-up: it is still running there.
func capped(p model.GRPCPrediction, cap time.Duration) model.GRPCPrediction {
	if p.End != model.Forever && p.End > cap-startup {
		p.Outcome, p.End = vocab.Hang, model.Forever
	}
	return p
}

func (g *GRPC) hangRows(x grpcRun) []results.Row {
	p := capped(model.PredictGRPC(model.GRPCCall{Deadline: g.Deadline, Hang: true, Rules: g.rules()}), x.sc.cap)
	c, _ := x.first()
	sent := 0
	if c.Timeout != "" {
		sent = 1
	}
	wire := results.Row{Name: "grpc-timeout on the wire", ExpectedCalls: btoi(p.Timeout > 0), Calls: sent,
		Server: "grpc-timeout " + orNone(c.Timeout) + g.predictedText(p.Timeout)}
	if p.Timeout > 0 {
		// The budget is what is left when the headers go out: a channel's first connect
		// comes off it (a few ms in Go, tens to a hundred and more in Node on a loaded
		// machine), which the row's own margin allows.
		wire.Name += fmt.Sprintf(" (a first connect may take up to %v of it)", grpcConnectAllowance)
		wire.ExpectedMs, wire.MeasuredMs = results.Ms(p.Timeout), c.TimeoutMs
		wire.ToleranceMs = results.Ms(grpcConnectAllowance)
	}
	left := results.Row{Name: "when the client left, from its deadline's start", ExpectedOutcome: p.Outcome, Outcome: x.outcome(),
		ExpectedCalls: 1, Calls: len(x.st.Calls), Server: "context ended " + orNone(c.CtxErr)}
	if p.End != model.Forever && c.CtxEndMs != nil {
		// The client's deadline started before the call arrived: what it spent first (a
		// channel's first connect: tens of ms in Node) is D less the budget it sent. The
		// server sees the call from its arrival; the row counts from the deadline's start,
		// that much earlier, so that its expected time is D whatever the connect took.
		spent := time.Duration(0)
		if c.TimeoutMs != nil {
			spent = max(g.Deadline-time.Duration(*c.TimeoutMs*float64(time.Millisecond)), 0)
		}
		left.ExpectedMs, left.MeasuredMs = results.Ms(p.End), results.Ms(time.Duration(*c.CtxEndMs*float64(time.Millisecond))+spent)
		left.Server += fmt.Sprintf(", %s after the call arrived (%s of the deadline spent before)", ms(time.Duration(*c.CtxEndMs*float64(time.Millisecond))), ms(spent))
	}
	return append([]results.Row{wire, left}, g.formRows(c)...)
}

// predictedText is the row's note of the grpc-timeout the rules write for budget d.
func (g *GRPC) predictedText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%s writes %s for %v on a warm channel)", g.rules().Name, model.GRPCTimeoutTextFor(g.rules(), d), g.Deadline)
}

// formRows judge how a grpc-timeout was written, under rules that round it: the text must be
// the one the rules write for its own value (grpcio's 3 significant digits).
func (g *GRPC) formRows(c grpcsrv.Call) []results.Row {
	r := g.rules()
	if r.Digits <= 0 || c.Timeout == "" || c.TimeoutMs == nil {
		return nil
	}
	d := time.Duration(math.Round(*c.TimeoutMs)) * time.Millisecond
	want := model.GRPCTimeoutTextFor(r, r.Sent(d))
	return []results.Row{{Name: fmt.Sprintf("grpc-timeout rounded up to %d significant digits", r.Digits),
		ExpectedCalls: 1, Calls: btoi(want == c.Timeout),
		Server: fmt.Sprintf("grpc-timeout %s; %s writes %s for that budget", c.Timeout, r.Name, want)}}
}

func (g *GRPC) chargedRows(x grpcRun) []results.Row {
	p := capped(model.PredictGRPC(model.GRPCCall{Deadline: g.Deadline, Work: grpcChargedWork}), x.sc.cap)
	c, _ := x.first()
	return []results.Row{{
		Name:            "charged whatever the client does",
		ExpectedOutcome: p.Outcome, Outcome: x.outcome(), ExpectedCalls: 1, Calls: len(x.st.Calls),
		ExpectedExecutions: results.Count(btoi(p.Executed)), ServerExecutions: results.Count(x.st.Executions[x.sc.Name]),
		Server: fmt.Sprintf("the handler returned %s; context ended %s", orNone(c.Code), orNone(c.CtxErr)),
	}}
}

func (g *GRPC) unavailableRows(x grpcRun) []results.Row {
	p := model.GRPCRetry{Policy: model.GRPCRetryPolicy{MaxAttempts: g.MaxAttempts}, Work: grpcRetryWork}.Predict()
	return []results.Row{{
		Name:            "the retry policy's attempts, each charged",
		ExpectedOutcome: p.Outcome, Outcome: x.outcome(), ExpectedCalls: p.Executions, Calls: len(x.st.Calls),
		ExpectedExecutions: results.Count(p.Executions), ServerExecutions: results.Count(x.st.Executions[x.sc.Name]),
		Server: "streams " + fmt.Sprint(len(x.st.Calls)),
	}}
}

func (g *GRPC) streamRows(x grpcRun) []results.Row {
	last := time.Duration(grpcMessages) * grpcEvery
	p := capped(model.PredictGRPC(model.GRPCCall{Deadline: g.Deadline, Work: last}), x.sc.cap)
	c, _ := x.first()
	// The messages that fit in the budget the client sent: what its first connect took is
	// not the server's time.
	budget := g.Deadline
	if c.TimeoutMs != nil && g.Deadline > 0 {
		budget = time.Duration(*c.TimeoutMs * float64(time.Millisecond))
	}
	want := model.GRPCStreamMessages(0, grpcEvery, budget, grpcMessages)
	return []results.Row{{
		Name:            "messages before the call ended",
		ExpectedOutcome: p.Outcome, Outcome: x.outcome(), ExpectedCalls: want, Calls: c.Messages,
		Server: fmt.Sprintf("sent %d messages; the handler returned %s", c.Messages, orNone(c.Code)),
	}}
}

func (g *GRPC) refusedRows(x grpcRun) []results.Row {
	streams, execs, outcome := model.GRPCTransparent(g.rules(), 1, g.MaxAttempts)
	name := "the refused stream sent again transparently (streams)"
	if g.rules().RefusedIsAttempt {
		name = "the refused stream an attempt of the retry policy (streams)"
	}
	return []results.Row{{
		Name:            name,
		ExpectedOutcome: outcome, Outcome: x.outcome(), ExpectedCalls: streams, Calls: len(x.st.Calls),
		ExpectedExecutions: results.Count(execs), ServerExecutions: results.Count(x.st.Executions[x.sc.Name]),
		Server: fmt.Sprintf("%d refused, %d streams", x.st.Refused, x.st.Streams),
	}}
}

func (g *GRPC) refusedUnavailableRows(x grpcRun) []results.Row {
	streams, execs := model.GRPCRefusedUnavailable(g.rules(), g.MaxAttempts)
	return []results.Row{{
		Name:            "the refused stream, then the retry policy's attempts (streams)",
		ExpectedOutcome: vocab.Failed, Outcome: x.outcome(), ExpectedCalls: streams, Calls: len(x.st.Calls),
		ExpectedExecutions: results.Count(execs), ServerExecutions: results.Count(x.st.Executions[x.sc.Name]),
		Server: fmt.Sprintf("%d refused, %d streams", x.st.Refused, x.st.Streams),
	}}
}

func (g *GRPC) limitRows(x grpcRun) []results.Row {
	preds := model.GRPCWaves(grpcLimitCalls, grpcLimit, grpcLimitWork, g.Deadline)
	outcome, end := vocab.OK, time.Duration(0)
	for _, p := range preds {
		end = max(end, p.Total)
		if p.Outcome != vocab.OK {
			outcome = p.Outcome
		}
	}
	var first, last time.Time
	for _, c := range x.st.Calls {
		if first.IsZero() || c.Arrived.Before(first) {
			first = c.Arrived
		}
		if c.Done.After(last) {
			last = c.Done
		}
	}
	row := results.Row{
		Name:            "one connection, the calls in waves: the last ends",
		ExpectedOutcome: outcome, Outcome: x.outcome(), ExpectedCalls: grpcLimitCalls, Calls: len(x.st.Calls),
		ExpectedNewConnections: results.Count(model.GRPCChannelConns(grpcLimitCalls)), NewConnections: results.Count(x.st.Connections),
		Server: fmt.Sprintf("%d streams on %d connections", x.st.Streams, x.st.Connections),
	}
	if outcome == vocab.OK && !first.IsZero() && !last.IsZero() {
		row.ExpectedMs, row.MeasuredMs = results.Ms(end), results.Ms(last.Sub(first))
	}
	return []results.Row{row}
}

// chainRows judge the chain A -> B -> C: B passes on what is left of A's deadline, as
// grpc-timeout, and C, whose handler watches its context, stops with A's deadline and is not
// charged; without a deadline C does all its work. The budget C is given allows for the
// channels' first connects (A's to B, B's to C), as the hang row's does.
func (g *GRPC) chainRows(x grpcRun) []results.Row {
	p := capped(model.PredictGRPC(model.GRPCCall{Deadline: g.Deadline, Spent: grpcHopWork, Work: grpcLeafWork, WatchesContext: true, Rules: g.rules()}), x.sc.cap)
	c, _ := x.first()
	sent := 0
	if c.Timeout != "" {
		sent = 1
	}
	wire := results.Row{Name: "grpc-timeout C got: what A's deadline left after B's work", ExpectedCalls: btoi(p.Timeout > 0), Calls: sent,
		Server: "grpc-timeout " + orNone(c.Timeout)}
	if sent > 0 && p.Timeout > 0 {
		wire.Server += fmt.Sprintf(" (%s: %s on warm channels)", g.rules().Name, model.GRPCTimeoutTextFor(g.rules(), p.Timeout))
	}
	if p.Timeout > 0 && sent > 0 {
		wire.Name += fmt.Sprintf(" (first connects may take up to %v of it)", grpcConnectAllowance)
		wire.ExpectedMs, wire.MeasuredMs = results.Ms(p.Timeout), c.TimeoutMs
		wire.ToleranceMs = results.Ms(grpcConnectAllowance)
	}
	return append([]results.Row{wire, {
		Name:            "C charged or not: it stops with A's deadline",
		ExpectedOutcome: p.Outcome, Outcome: x.outcome(), ExpectedCalls: 1, Calls: len(x.st.Calls),
		ExpectedExecutions: results.Count(btoi(p.Executed)), ServerExecutions: results.Count(x.st.Executions[x.sc.Name]),
		Server: fmt.Sprintf("C's handler returned %s; its context ended %s", orNone(c.Code), orNone(c.CtxErr)),
	}}, g.formRows(c)...)
}

// btoi is 1 for true: experiments/internal/lab.Btoi, which Go keeps from probe.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
