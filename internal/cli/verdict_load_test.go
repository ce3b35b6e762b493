package cli

import (
	"context"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/results"
)

// stallRow is exp-a's stall in small: a reservation the server answers after 600 ms, a client
// with a 300 ms read timeout and no re-sends, whose library (HttpClient 5) ends the call with a
// read timeout at 300 ms having reserved once. broken breaks the client the way a regression
// would: "ignore-read" drops the read timeout, "resend" sends the request once more after it
// failed. The row is judged as every experiment's is: the model's expectation, the runner's
// noise attribution, the exit code.
type stallRow struct {
	name, broken string
}

func (s *stallRow) Info() experiments.Info {
	return experiments.Info{Name: s.name, Title: "a stall, " + or(s.broken, "the library's rules"), Description: "A test experiment."}
}
func (s *stallRow) Params() []param.Param { return nil }
func (s *stallRow) Run(ctx context.Context, opt experiments.Options) (results.Run, error) {
	srv, err := fakesrv.New()
	if err != nil {
		return results.Run{}, err
	}
	defer srv.Close()
	const read = 300 * time.Millisecond
	beh := fakesrv.Behaviour{Delay: 600 * time.Millisecond, Order: "order-1"}
	hc5 := rules.HC5(rules.HC5Settings{})
	p := model.Predict(model.Downstream{Delay: beh.Delay}, model.Limits{Rules: hc5, ReadTimeout: read}, true, 0)
	cfg := client.Config{MaxPerRoute: 5, MaxTotal: 5, ReadTimeout: read, Rules: hc5}
	if s.broken == "ignore-read" {
		cfg.ReadTimeout = 0
	}
	c, err := client.New(cfg)
	if err != nil {
		return results.Run{}, err
	}
	defer c.Close()
	do := func() *client.Result {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+beh.Path(), nil)
		res, _ := c.Do(ctx, req)
		return res
	}
	start := time.Now()
	res := do()
	if s.broken == "resend" && res.Outcome != "ok" {
		res = do()
	}
	elapsed := time.Since(start)
	time.Sleep(50 * time.Millisecond) // the server notices the client left
	run := results.Run{Experiment: s.name, Title: s.Info().Title, Rows: []results.Row{{
		Name: "reservation answered after 600 ms, read timeout 300 ms", ExpectedMs: results.Ms(p.Total), MeasuredMs: results.Ms(elapsed),
		ExpectedOutcome: p.Outcome, Outcome: res.Outcome, ExpectedCalls: 1, Calls: 1,
		ExpectedExecutions: results.Count(p.Executions), ServerExecutions: results.Count(len(srv.Requests())),
	}}}
	run.Finish(opt.Tolerance)
	return run, ctx.Err()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// busy starts a spinning process per CPU, stopped when the test ends: a loaded machine.
func busy(t *testing.T) {
	t.Helper()
	for range runtime.NumCPU() {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a busy loop: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// TestBrokenClientFailsUnderLoad: on a machine every CPU of which a spinning process shares, a
// client that ignores its read timeout, or re-sends once more than its library, still FAILs
// with exit 1: the noise explains a late time, never a wrong outcome or count. The client
// that keeps its library's rules passes, or is at worst inconclusive (exit 3), under the same
// load.
func TestBrokenClientFailsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("spins every CPU for seconds: the conformance tier (make conformance)")
	}
	busy(t)
	for _, tt := range []struct {
		broken string
		codes  []int
		reason string
	}{
		{"", []int{exitPass, exitInconclusive}, ""},
		{"ignore-read", []int{exitFail}, `"outcome": "ok"`},
		{"resend", []int{exitFail}, `"server_executions": 2`},
	} {
		t.Run(or(tt.broken, "keeps-the-rules"), func(t *testing.T) {
			exp := &stallRow{name: "exp-x", broken: tt.broken}
			out := runArgs(t, t.Context(), []experiments.Experiment{exp}, false, "exp-x", "--format", "json")
			ok := false
			for _, c := range tt.codes {
				ok = ok || out.code == c
			}
			if !ok {
				t.Fatalf("exit %d, want one of %v\n%s%s", out.code, tt.codes, out.stdout, out.stderr)
			}
			if tt.reason != "" && !strings.Contains(out.stdout, tt.reason) {
				t.Errorf("the report does not say %q:\n%s", tt.reason, out.stdout)
			}
			if !strings.Contains(out.stdout, `"noise"`) {
				t.Errorf("the run carries no noise measurement:\n%s", out.stdout)
			}
		})
	}
}
