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
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// exp-m's cases about connections and attempts: timed-out calls that keep their connection
// (beside HTTP/1.1's), the retry policy, the transparent retry, the stream limit's waves.

// keptDeadline and keptWork are the timed-out calls of the connection rows: short, so that
// many fit in a second, and far apart.
const (
	keptDeadline = minGap
	keptWork     = 4 * minGap
)

// kept: timed-out calls reset their stream and keep the connection; net/http's HTTP/1.1
// closes one per timeout.
func (g *GRPC) kept(ctx context.Context, srv *grpcsrv.Server, _ Options, run *results.Run) error {
	cc, err := dial(ctx, srv)
	if err != nil {
		return err
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
		if o := lab.GRPCOutcome(err); o == p.Outcome {
			deadlines++
		} else {
			outcome = o
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// A stream has ended alone once its handler returned and either side reset it, or the
	// server's DeadlineExceeded trailers went out. The front records a reset as it reads the
	// frame, which on a loaded machine can come after the handler's return: each stream gets a
	// second for its ending to show.
	ended := func(c grpcsrv.Call) bool {
		return c.Code != "" && (c.RSTFromClient != "" || c.RSTFromServer != "" || c.Code == codes.DeadlineExceeded.String())
	}
	alone, trailers := 0, 0
	for i := range g.Timeouts {
		c, _ := callOf(ctx, srv, fmt.Sprintf("t%d", i), time.Second, ended)
		switch {
		case c.RSTFromClient != "" || c.RSTFromServer != "":
			alone++
		case c.Code == codes.DeadlineExceeded.String():
			alone++
			trailers++
		}
	}
	st := srv.Stats()
	idx := make([]int, len(ends))
	for i := range idx {
		idx[i] = i
	}
	n := g.Timeouts + 1 // the warm-up call included
	run.Rows = append(run.Rows,
		lab.Judged(fmt.Sprintf("%d timed-out calls (deadline %v, %v handlers) on one connection: kept", g.Timeouts, keptDeadline, keptWork),
			g.doc("1 connection after 21 timeouts", 0), lab.LastedD(p.End, median(ends, idx)),
			lab.Ended(p.Outcome, outcome), lab.Calls(g.Timeouts, deadlines),
			lab.Connections(results.Count(model.GRPCChannelConns(n)), results.Count(st.Connections)),
			lab.Saw(fmt.Sprintf("%s for %d calls", vocab.Plural(st.Connections, "connection"), n))),
		lab.Judged("their streams end alone: RST_STREAM from either side, or the trailers first (any expected)",
			lab.Calls(g.Timeouts, alone),
			lab.Saw(fmt.Sprintf("client %s, server %s", codeCounts(st.RSTFromClient), codeCounts(st.RSTFromServer))+trailersNote(trailers))))
	return g.h1Closes(ctx, run)
}

// h1Closes makes the same timed-out calls with net/http over HTTP/1.1 and counts its
// connections: each timeout closes one.
func (g *GRPC) h1Closes(ctx context.Context, run *results.Run) error {
	srv, err := newServer()
	if err != nil {
		return err
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
			return err
		}
		res, err := hc.Do(req)
		if err == nil {
			res.Body.Close()
		} else if vocab.ClassifyNetHTTP(err, false) == vocab.Deadline {
			timedOut++
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dials, closes := model.StormConns(calls, nil, 0)
	run.Rows = append(run.Rows, lab.Judged(
		fmt.Sprintf("beside it, net/http over HTTP/1.1 with Client.Timeout %v: %d timeouts close %d connections", keptDeadline, g.Timeouts, closes),
		g.doc("20 of 20 connections closed, 20 new", 0),
		lab.Ended(vocab.Deadline, outcomeIf(timedOut == g.Timeouts, vocab.Deadline)), lab.Calls(g.Timeouts, timedOut),
		lab.Connections(results.Count(dials), results.Count(srv.ConnsAccepted())),
		lab.Saw("accepted "+vocab.Plural(srv.ConnsAccepted(), "connection"))))
	return nil
}

// grpcRetryWork is the work of each attempt of the retry rows.
const grpcRetryWork = 100 * time.Millisecond

// retries: a retry policy against UNAVAILABLE after the work: every attempt executes.
func (g *GRPC) retries(ctx context.Context, srv *grpcsrv.Server, opt Options, run *results.Run) error {
	backoff := model.GRPCRetryPolicy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Multiplier: 2}
	capped := backoff
	capped.MaxAttempts, capped.Pushback = 10, 50*time.Millisecond
	cc, err := dial(ctx, srv)
	if err != nil {
		return err
	}
	cost, err := measureCost(ctx, cc)
	cc.Close()
	if err != nil {
		return err
	}
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
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a cap far beyond the policy
		start := time.Now()
		err = invoke(cctx, cc, c.id, fmt.Sprintf("work=%v,%s", grpcRetryWork, c.fault))
		took := time.Since(start)
		cancel()
		cc.Close()
		c.r.CallCost, c.r.PauseCost = cost.call, cost.pause
		p := c.r.Predict()
		// The model adds the call's and the pause's costs calibrated before these rows
		// (docs/experiments.md); the column names one only when it is beyond what a healthy
		// run shows, and the cell stays two lines at 120 columns.
		note := "ended " + status.Code(err).String() + overCost("call", cost.call) + overCost("pause", cost.pause)
		var jitter lab.Judge
		if p.Max > p.Min { // the jitter: the row's time is a range, its margin says so
			jitter = lab.Within((p.Max-p.Min)/2 + opt.Tolerance)
			note += fmt.Sprintf("; jitter: %d-%s", p.Min.Milliseconds(), lab.FmtMs(p.Max))
		}
		run.Rows = append(run.Rows, lab.Judged(c.name, g.doc(c.doc, c.docMs), lab.GRPCCalled(p.Mid(), p.Outcome, took, err),
			lab.Executions(results.Count(p.Executions), results.Count(srv.Stats().Executions[c.id])), jitter, lab.Saw(note)))
	}
	return nil
}

// retryConfig is a service config with p as the retry policy of every labrun.Fault method.
func retryConfig(p model.GRPCRetryPolicy) string {
	return fmt.Sprintf(`{"methodConfig":[{"name":[{"service":"labrun.Fault"}],"retryPolicy":{"maxAttempts":%d,`+
		`"initialBackoff":"%gs","maxBackoff":"%gs","backoffMultiplier":%g,"retryableStatusCodes":["UNAVAILABLE"]}}]}`,
		p.MaxAttempts, p.InitialBackoff.Seconds(), p.MaxBackoff.Seconds(), p.Multiplier)
}

// transparent: a refused stream, and one beyond a GOAWAY, are sent again once, not counted as
// an attempt, even with retries disabled.
func (g *GRPC) transparent(ctx context.Context, srv *grpcsrv.Server, _ Options, run *results.Run) error {
	for _, c := range []struct {
		id, fault, name string
		goAway          bool
	}{
		{"refused", "refuse=1", "a stream refused (REFUSED_STREAM), WithDisableRetry: sent again transparently, streams", false},
		{"goaway", "goaway=1", "a stream beyond a GOAWAY, WithDisableRetry: sent again on a new connection, streams", true},
	} {
		cc, err := dial(ctx, srv, grpc.WithDisableRetry())
		if err != nil {
			return err
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
		wantStreams, wantExec, wantOutcome := model.GRPCTransparent(rules.GRPC{}, 1, 0)
		run.Rows = append(run.Rows, lab.Judged(c.name, g.doc("2 streams, 1 execution", 0),
			lab.GRPCEnded(wantOutcome, err), lab.Calls(wantStreams, streams),
			lab.Executions(results.Count(wantExec), results.Count(srv.Stats().Executions[c.id])),
			lab.Connections(results.Count(model.GRPCTransparentConns(c.goAway)), results.Count(len(conns))),
			lab.Saw(fmt.Sprintf("%s on %s", vocab.Plural(streams, "stream"), vocab.Plural(len(conns), "connection")))))
	}
	return nil
}

// waves: calls started at once through the server's stream limit queue on one connection.
// Each wave is a group of calls the model predicts to end alike (groupCalls), judged as one
// (batch).
func (g *GRPC) waves(ctx context.Context, srv *grpcsrv.Server, _ Options, run *results.Run) error {
	cc, err := dial(ctx, srv)
	if err != nil {
		return err
	}
	defer cc.Close()
	cost, err := measureWaveCost(ctx, cc, g.WaveCalls, g.StreamLimit)
	if err != nil {
		return err
	}
	preds := model.GRPCWaves(g.WaveCalls, g.StreamLimit, g.WaveWork+cost.perWave, 0)
	for i := range preds {
		preds[i].Total += cost.start // the burst's start, before its first wave
	}
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
			ends[i], outcomes[i] = time.Since(start), lab.GRPCOutcome(err)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	conns := srv.Stats().Connections
	docs := []float64{203, 406, 607, 808, 1010} // the first waves' documented times, in ms
	for i, gr := range groupCalls(preds, outcomes, ends) {
		name := fmt.Sprintf("%d calls of %v, MaxConcurrentStreams %d: wave %d", g.WaveCalls, g.WaveWork, g.StreamLimit, i+1)
		if gr.want == 0 {
			name = fmt.Sprintf("%d calls, MaxConcurrentStreams %d: unexpected %s", g.WaveCalls, g.StreamLimit, gr.outcome)
		}
		js := []lab.Judge{batch(gr, outcomes, ends)}
		if i < len(docs) {
			js = append(js, g.doc(fmt.Sprintf("%.0f ms", docs[i]), docs[i]))
		}
		if i == 0 { // the burst's connection, judged once
			js = append(js, lab.Connections(results.Count(model.GRPCChannelConns(g.WaveCalls+1)), results.Count(conns)),
				lab.Saw("every call on "+vocab.Plural(conns, "connection")+"; "+costNote("wave", cost.perWave)))
		}
		run.Rows = append(run.Rows, lab.Judged(name, js...))
	}
	return nil
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

// overCost is "; " and costNote's text when cost is beyond grpcCostMax, else "".
func overCost(what string, cost time.Duration) string {
	if cost <= grpcCostMax {
		return ""
	}
	return "; " + costNote(what, cost)
}

// trailersNote is ", trailers xN" for N streams that ended by the server's trailers
// before either side reset them, "" for none (the common case, which keeps the cell short).
func trailersNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", trailers x%d", n)
}
