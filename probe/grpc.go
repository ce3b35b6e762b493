package probe

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/runner"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The gRPC probe (labrun probe --grpc): a gRPC client's command against the gRPC fault server
// (grpcsrv), every row judged against the model's gRPC rules for the deadline and the retry
// policy the command says it has.

// The environment of a gRPC scenario, besides the HTTP scenarios' LABRUN_URL (here the
// target, "127.0.0.1:PORT"), LABRUN_CALLS and LABRUN_CONCURRENCY.
const (
	// EnvGRPCMethod is the method's path: /labrun.Fault/Call (unary) or /labrun.Fault/Stream
	// (server streaming, read to its end).
	EnvGRPCMethod = "LABRUN_GRPC_METHOD"
	// EnvGRPCFault is the labrun-fault metadata every call sends, EnvGRPCCall its labrun-call.
	EnvGRPCFault = "LABRUN_GRPC_FAULT"
	EnvGRPCCall  = "LABRUN_GRPC_CALL"
	// EnvGRPCHop, when set, makes the command a chain's middle hop (the chain scenario): it
	// serves its own call with its library's server (B), works that many seconds there, then
	// makes the call described above to the target (C) from the handler, passing its deadline
	// on as its library does, and answers with C's answer. A, the command's own call, is
	// made to B with the command's deadline.
	EnvGRPCHop = "LABRUN_GRPC_HOP"
)

// grpcScenario is one thing the gRPC server does to the client.
type grpcScenario struct {
	Name, Title string
	method      string
	fault       string
	hop         time.Duration // the middle hop's work, for the chain scenario (0: no chain)
	calls       int           // at once, on one channel
	streams     uint32
	cap         time.Duration
	rows        func(g *GRPC, x grpcRun) []results.Row
}

// grpcRun is what one run of the command against a scenario did.
type grpcRun struct {
	sc   grpcScenario
	exec Exec
	st   grpcsrv.Stats
}

// The gRPC scenarios' shapes.
const (
	grpcChargedWork = 2 * time.Second
	grpcRetryWork   = 100 * time.Millisecond
	grpcEvery       = 400 * time.Millisecond
	grpcMessages    = 5
	grpcLimitCalls  = 6
	grpcLimit       = 2
	grpcLimitWork   = 300 * time.Millisecond
	grpcHopWork     = 100 * time.Millisecond
	grpcLeafWork    = 2 * time.Second
	// grpcConnectAllowance is how much of its deadline a client may spend on its channel's
	// first connect before the call's headers go out.
	grpcConnectAllowance = 500 * time.Millisecond
)

// grpcScenarios returns the gRPC scenarios in the order a probe runs them.
func grpcScenarios() []grpcScenario {
	call := func(name, title, fault string, cap time.Duration, rows func(*GRPC, grpcRun) []results.Row) grpcScenario {
		return grpcScenario{Name: name, Title: title, method: grpcsrv.MethodCall, fault: fault, calls: 1, cap: cap, rows: rows}
	}
	stream := call("grpc-stream", fmt.Sprintf("a server stream of %d messages, one every %v", grpcMessages, grpcEvery),
		fmt.Sprintf("every=%v,messages=%d", grpcEvery, grpcMessages), 7*time.Second, (*GRPC).streamRows)
	stream.method = grpcsrv.MethodStream
	limit := call("grpc-stream-limit", fmt.Sprintf("%d calls at once, %v each, through a stream limit of %d", grpcLimitCalls, grpcLimitWork, grpcLimit),
		fmt.Sprintf("work=%v", grpcLimitWork), 7*time.Second, (*GRPC).limitRows)
	limit.calls, limit.streams = grpcLimitCalls, grpcLimit
	chain := call("grpc-chain", fmt.Sprintf("the command's own server (B) works %v, then calls the server (C), which works %v", grpcHopWork, grpcLeafWork),
		fmt.Sprintf("work=%v", grpcLeafWork), 7*time.Second, (*GRPC).chainRows)
	chain.hop = grpcHopWork
	return []grpcScenario{
		call("grpc-hang", "a handler that never answers", "hang", 6*time.Second, (*GRPC).hangRows),
		call("grpc-charged", fmt.Sprintf("a handler that works %v whatever the caller does", grpcChargedWork),
			fmt.Sprintf("work=%v,ignore-ctx", grpcChargedWork), 7*time.Second, (*GRPC).chargedRows),
		call("grpc-unavailable", fmt.Sprintf("UNAVAILABLE after %v of work, every attempt", grpcRetryWork),
			fmt.Sprintf("work=%v,unavailable", grpcRetryWork), 8*time.Second, (*GRPC).unavailableRows),
		stream,
		call("grpc-refused", "the call's first stream refused (REFUSED_STREAM)", "refuse=1", 6*time.Second, (*GRPC).refusedRows),
		call("grpc-refused-unavailable", fmt.Sprintf("the first stream refused, then UNAVAILABLE after %v of work, every attempt", grpcRetryWork),
			fmt.Sprintf("refuse=1,work=%v,unavailable", grpcRetryWork), 8*time.Second, (*GRPC).refusedUnavailableRows),
		limit,
		chain,
	}
}

// GRPCScenarioNames lists the gRPC scenarios' names.
func GRPCScenarioNames() []string {
	var out []string
	for _, s := range grpcScenarios() {
		out = append(out, s.Name)
	}
	return out
}

// GRPC is labrun probe --grpc: it runs a gRPC client's command against every gRPC scenario
// and judges its rows against the model for the client's deadline and retry policy, which
// the command's own configuration fixes and the flags state (gRPC's defaults: no deadline, no
// retry policy). It is an experiments.Experiment, so that --repeat and the reports are the
// experiments' own.
type GRPC struct {
	Command Command
	// Only lists the scenarios to run, comma-separated; empty runs all.
	Only string
	// Deadline is the client's deadline per call (0: none); MaxAttempts its retry policy's
	// maxAttempts (0 or 1: no retry policy).
	Deadline    time.Duration
	MaxAttempts int
	// Expect names the library's gRPC rules (rules.LookupGRPC; empty: grpc-go's).
	Expect string

	gate *runner.Gate // admits the scenarios; nil: one of the probe's own
}

// NewGRPC returns a gRPC probe of cmd at gRPC's defaults.
func NewGRPC(cmd Command) *GRPC { return &GRPC{Command: cmd} }

// Info implements experiments.Experiment.
func (g *GRPC) Info() experiments.Info {
	return experiments.Info{Name: Name, Title: "what a gRPC client really does, seen from the server"}
}

// Experiment returns the gRPC probe as an experiment, whose parameters are --only,
// --deadline and --max-attempts, so that --repeat, --warmup and the reports are the
// experiments' own.
func (g *GRPC) Experiment() experiments.Experiment { return grpcExperiment{g} }

// grpcExperiment is a GRPC with its parameters.
type grpcExperiment struct{ *GRPC }

// Params implements experiments.Experiment.
func (e grpcExperiment) Params() []param.Param { return e.params() }

// params are --only, the client's deadline and its retry policy's maxAttempts.
func (g *GRPC) params() []param.Param {
	return []param.Param{
		{Name: "only", Usage: "run only these scenarios", String: &g.Only},
		{Name: "deadline", Usage: "the client's deadline", Duration: &g.Deadline},
		{Name: "max-attempts", Usage: "the client's retry policy's maxAttempts", Int: &g.MaxAttempts, Min: 0, Max: 100},
		{Name: "expect", Usage: "the library whose gRPC rules the rows expect", String: &g.Expect, Choices: rules.GRPCNames()},
	}
}

// Check reports an unknown scenario and a command that cannot be started.
func (g *GRPC) Check() error {
	if _, err := g.scenarios(); err != nil {
		return err
	}
	if err := param.CheckAll(g.params()); err != nil {
		return err
	}
	return g.Command.Check()
}

func (g *GRPC) scenarios() ([]grpcScenario, error) {
	all := grpcScenarios()
	if strings.TrimSpace(g.Only) == "" {
		return all, nil
	}
	var out []grpcScenario
	for _, name := range strings.Split(g.Only, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(s grpcScenario) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("--only: unknown gRPC scenario %q (want %s)", name, strings.Join(GRPCScenarioNames(), ", "))
		}
		if !slices.ContainsFunc(out, func(s grpcScenario) bool { return s.Name == name }) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// rules are the gRPC rules the rows expect.
func (g *GRPC) rules() rules.GRPC {
	r, _ := rules.LookupGRPC(g.Expect)
	return r
}

// Run implements experiments.Experiment: the scenarios side by side as the machine allows
// (runner.Gate), the longest first, each with a server of its own.
func (g *GRPC) Run(ctx context.Context, opt experiments.Options) (results.Run, error) {
	if err := g.Check(); err != nil {
		return results.Run{}, err
	}
	scs, _ := g.scenarios()
	run := results.Run{Experiment: Name, Title: g.Info().Title, Client: "grpc",
		Config: []results.Param{{Name: "command", Value: strings.Join(g.Command.Args, " ")},
			{Name: "deadline", Value: g.Deadline.String()}, {Name: "max-attempts", Value: fmt.Sprint(g.MaxAttempts)}}}
	if g.Expect != "" {
		run.Config = append(run.Config, results.Param{Name: "expect", Value: g.Expect})
	}
	room, done := admission(g.gate)
	defer done()
	order := make([]int, len(scs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scs[b].cap, scs[a].cap) })
	rows := make([][]results.Row, len(scs))
	eg, gctx := errgroup.WithContext(ctx)
	for _, i := range order {
		if !room.Enter(gctx) {
			break
		}
		sc := scs[i]
		if opt.Progress != nil {
			opt.Progress(sc.Name+": "+sc.Title, 0)
		}
		eg.Go(func() error {
			defer room.Leave()
			x, err := g.observe(gctx, sc)
			if err != nil {
				return fmt.Errorf("%s: %w", sc.Name, err)
			}
			for _, r := range sc.rows(g, x) {
				r.Name = sc.Name + ": " + r.Name
				if len(x.exec.Unsupported) > 0 {
					r.Skipped = "the command says it cannot do this: " + strings.Join(x.exec.Unsupported, ", ")
				}
				rows[i] = append(rows[i], r)
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return results.Run{}, err
	}
	if err := ctx.Err(); err != nil {
		return results.Run{}, err
	}
	run.Rows = slices.Concat(rows...)
	run.Finish(opt.Tolerance)
	return run, nil
}

// observe runs the command against a fresh server playing sc, and waits for the server's
// handlers to end.
func (g *GRPC) observe(ctx context.Context, sc grpcScenario) (grpcRun, error) {
	srv, err := grpcsrv.New(grpcsrv.WithMaxConcurrentStreams(sc.streams), grpcsrv.WithMaxDuration(time.Minute))
	if err != nil {
		return grpcRun{}, err
	}
	defer srv.Close()
	cmd := g.Command
	cmd.Env = append(slices.Clone(cmd.Env), EnvGRPCMethod+"="+sc.method, EnvGRPCFault+"="+sc.fault, EnvGRPCCall+"="+sc.Name)
	if sc.hop > 0 {
		cmd.Env = append(cmd.Env, EnvGRPCHop+"="+strconv.FormatFloat(sc.hop.Seconds(), 'f', -1, 64))
	}
	x, err := cmd.run(ctx, Call{URL: srv.Addr, Method: "GET", Calls: 1, Concurrency: sc.calls}, sc.cap)
	if err != nil {
		return grpcRun{}, err
	}
	// A killed client's streams end when its connection does; give the handlers a moment.
	end := time.Now().Add(2 * time.Second)
	st := srv.Stats()
	for time.Now().Before(end) && slices.ContainsFunc(st.Calls, func(c grpcsrv.Call) bool { return c.Front == "" && c.Code == "" }) {
		time.Sleep(10 * time.Millisecond)
		st = srv.Stats()
	}
	return grpcRun{sc: sc, exec: x, st: st}, nil
}

// first is the scenario's first stream that reached a handler.
func (x grpcRun) first() (grpcsrv.Call, bool) {
	for _, c := range x.st.Calls {
		if c.Front == "" {
			return c, true
		}
	}
	return grpcsrv.Call{}, false
}

// outcome is how the command's calls ended: ok when it exited 0, hang when the cap killed
// it, a deadline when the server saw the client leave, an error otherwise.
func (x grpcRun) outcome() vocab.Outcome {
	c, _ := x.first()
	switch {
	case x.exec.Killed:
		return vocab.Hang
	case x.exec.ExitCode == 0:
		return vocab.OK
	case c.CtxErr != "":
		return vocab.Deadline
	}
	return vocab.Failed
}

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
