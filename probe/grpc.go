package probe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/fakesrv/grpcsrv"
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
