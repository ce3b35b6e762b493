package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/probe"
	"github.com/labrun/labrun/report"
)

// probeTolerance is probe's default --tolerance: the server sees a client leave within a
// few milliseconds of its timeout (a JVM's included), and the rows are about timeouts a
// second apart, not about scheduling noise.
const probeTolerance = 50 * time.Millisecond

// expectLimits are predict's limit flags that --expect takes: the client's limits and
// rules, not the downstream's (which the scenarios fix).
var expectLimits = append([]string{"lease-timeout", "connect-timeout", "read-timeout", "deadline", "retries", "backoff",
	"hc5-retries", "validate-after-inactivity", "no-stale-check", "evict-idle", "evict-interval"}, predict.LayerFlags...)

// probeParams are the predictor's parameters that --expect uses, with "defaults" as
// "expect".
func probeParams(pred *predict.Predictor) []param.Param {
	var out []param.Param
	for _, p := range pred.Params() {
		switch {
		case p.Name == "defaults":
			p.Name = "expect"
			p.Usage = "judge the rows against this client of labrun defaults, its limits set by the flags after this one " +
				"(without it: against the closest client found)"
			out = append(out, p)
		case slices.Contains(expectLimits, p.Name):
			out = append(out, p)
		}
	}
	return out
}

func probeCommand(tty terminals) *cli.Command {
	pr := probe.New(probe.Command{})
	pred := &predict.Predictor{}
	var pool int
	flags := []cli.Flag{
		&cli.DurationFlag{Name: "tolerance", Value: probeTolerance, Usage: "largest allowed |measured - expected| for a timed row"},
		&cli.IntFlag{Name: "repeat", Value: 1, Usage: "run every scenario this many times; rows show the median, the verdict uses it"},
		&cli.IntFlag{Name: "warmup", Value: 0, Usage: "runs to discard before the measured ones"},
		&cli.StringFlag{Name: "format", Value: string(report.FormatTable), Usage: "output format: " + formatList()},
		&cli.StringFlag{Name: "out", Usage: "also write run.json, REPORT.md and junit.xml into this directory (checked before the run)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no live status line on stderr"},
		&cli.BoolFlag{Name: "no-color", Usage: "no colour, even on a terminal (so does NO_COLOR)"},
		wideFlag(),
	}
	for _, p := range probeParams(pred) {
		flags = append(flags, paramFlag(p))
	}
	flags = append(flags, &cli.BoolFlag{Name: "grpc", Usage: "a gRPC client against the gRPC scenarios instead; --deadline and --retries say its config, --expect its library's rules (" + strings.Join(rules.GRPCNames(), ", ") + ")"})
	flags = append(flags, &cli.IntFlag{Name: "pool", Destination: &pool,
		Usage: "the client's connection limit per route, 0 for none (default: the library's, " + presetPools() + ", none for the others)"})
	for _, p := range pr.Experiment().Params() {
		f := paramFlag(p)
		if d, ok := f.(*cli.DurationFlag); ok && strings.HasSuffix(p.Name, "-cap") {
			d.Hidden = true // one per scenario: the description says it once
		}
		flags = append(flags, f)
	}
	return &cli.Command{
		Name:      "probe",
		Usage:     "run any HTTP client, in any language, against the fake server's faults and see what it really does",
		ArgsUsage: "-- COMMAND ARGS...",
		Description: "Runs COMMAND once per scenario against a fake server on 127.0.0.1: " + Placeholders +
			" Measured from the server's side (when each request arrived, when the client left with a FIN or " +
			"an RST, how often the server executed it, how many connections), so a JVM's start-up never " +
			"counts. Prints the fingerprint and the closest client the model knows; with --expect, every row " +
			"is judged against that client and the exit code is 1 when one disagrees. docs/probe.md has the " +
			"protocol, examples/probes/ ready probes.\n\nScenarios (what each does and its cap: docs/probe.md; " +
			"--NAME-cap DURATION sets one, --cap-scale N multiplies all):\n" +
			scenarioHelp() + "\n" +
			"Examples:\n" +
			"   labrun probe -- curl -s -o /dev/null --max-time 1.5 {url}\n" +
			"   labrun probe --expect go --deadline 1.5s -- curl -so /dev/null -m 1.5 {url}\n" +
			"   labrun probe --only silent,trickle -- python3 examples/probes/python/urllib_probe.py",
		Flags:        flags,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			pr.Command = probe.Command{Args: c.Args().Slice()}
			s, err := runSettings(c, tty, "")
			if err != nil {
				return err
			}
			if c.IsSet("only") && strings.TrimSpace(c.String("only")) == "" {
				return usagef("--only needs a scenario's name (without --only every scenario runs)")
			}
			if c.Bool("grpc") {
				return probeGRPC(c, s, pr)
			}
			if err := probeExpect(c, pr, pred, pool); err != nil {
				return err
			}
			if err := experiments.Check(pr.Experiment(), ""); err != nil {
				var ce *probe.CommandError
				if errors.As(err, &ce) || pr.Command.Check() != nil {
					return usagef("probe: %v", err)
				}
				return usageError{err}
			}
			err = runExperiments(c, s, []experiments.Experiment{pr.Experiment()}, true)
			if (errors.Is(err, errChecksFailed) || errors.Is(err, errInconclusive)) && pr.Expect == nil {
				return nil // nothing was expected: the rows only show where the closest client differs
			}
			return err
		},
	}
}

// Placeholders describes the protocol in the help, in one sentence.
const Placeholders = "the URL is in its arguments as {url} and in LABRUN_URL, with LABRUN_METHOD, LABRUN_CALLS " +
	"(calls in sequence), LABRUN_CONCURRENCY (calls at once) and LABRUN_PAUSE (seconds between calls in " +
	"sequence), and for the TLS scenarios LABRUN_CA (a PEM file of the CA to trust); it makes its calls and exits 0 " +
	"when all of them got a 2xx answer. The lookup scenarios run it in namespaces of its own, where its system " +
	"resolver asks labrun's DNS server."

// scenarioHelp lists the scenarios' names by what they are about, one line a group: what each
// does and its cap are in docs/probe.md, which a help screen has no room for.
func scenarioHelp() string {
	var groups []string
	names := map[string][]string{}
	for _, s := range probe.Scenarios() {
		g := s.Group()
		if names[g] == nil {
			groups = append(groups, g)
		}
		names[g] = append(names[g], s.Name)
	}
	var b strings.Builder
	for _, g := range groups {
		fmt.Fprintf(&b, "   %s: %s\n", g, strings.Join(names[g], ", "))
	}
	return b.String()
}

// probeGRPC is labrun probe --grpc: the gRPC scenarios, judged against the model for the
// client's deadline (--deadline) and retry policy (--retries: maxAttempts - 1).
func probeGRPC(c *cli.Context, s settings, pr *probe.Probe) error {
	for _, name := range append([]string{"expect", "pool"}, expectLimits...) {
		if c.IsSet(name) && name != "deadline" && name != "retries" && name != "expect" {
			return usagef("--%s does not apply to --grpc: only --deadline, --retries and --expect describe a gRPC client", name)
		}
	}
	if c.IsSet("cap-scale") {
		return usagef("--cap-scale does not apply to --grpc: its scenarios have caps of their own")
	}
	for _, name := range probe.ScenarioNames() {
		if c.IsSet(name + "-cap") {
			return usagef("--%s-cap does not apply to --grpc: its scenarios have caps of their own", name)
		}
	}
	g := probe.NewGRPC(pr.Command)
	g.Only, g.Deadline, g.Expect = pr.Only, c.Duration("deadline"), c.String("expect")
	if c.IsSet("retries") {
		g.MaxAttempts = c.Int("retries") + 1
		if err := grpcRetries(c.Int("retries"), g); err != nil {
			return err
		}
	}
	if err := experiments.Check(g.Experiment(), ""); err != nil {
		var ce *probe.CommandError
		if errors.As(err, &ce) || g.Command.Check() != nil {
			return usagef("probe: %v", err)
		}
		return usageError{err}
	}
	return runExperiments(c, s, []experiments.Experiment{g.Experiment()}, true)
}

// grpcRetries checks --retries n (maxAttempts n + 1) against the retry policy's bounds, in
// the terms of --retries: --max-attempts is the experiment's parameter, no flag of probe.
func grpcRetries(n int, g *probe.GRPC) error {
	if n < 0 {
		return usagef("--retries must be at least 0, got %d", n)
	}
	for _, p := range g.Experiment().Params() {
		if p.Name == "max-attempts" && n+1 > p.Max {
			return usagef("--retries must be at most %d with --grpc (maxAttempts %d), got %d", p.Max-1, p.Max, n)
		}
	}
	return nil
}

// probeExpect reads --expect and its limit flags into pr.Expect.
func probeExpect(c *cli.Context, pr *probe.Probe, pred *predict.Predictor, pool int) error {
	if c.IsSet("expect") && strings.TrimSpace(pred.Defaults) == "" {
		for _, p := range probeParams(pred) {
			if p.Name == "expect" {
				return usagef("--expect needs a client (want %s)", strings.Join(p.Choices, ", "))
			}
		}
	}
	if pred.Defaults == "" {
		for _, name := range append([]string{"pool"}, expectLimits...) {
			if c.IsSet(name) {
				return usagef("--%s needs --expect: it is a limit of the client the rows are expected to behave like", name)
			}
		}
		return nil
	}
	if err := param.CheckAll(probeParams(pred)); err != nil {
		return usageError{err}
	}
	if pool < 0 {
		return usagef("--pool must not be negative, got %d", pool)
	}
	if !c.IsSet("pool") {
		pool = probe.PresetPool(pred.Defaults)
	}
	var given []string
	for _, name := range expectLimits {
		if c.IsSet(name) {
			given = append(given, name)
		}
	}
	e, err := probe.NewExpect(pred.Defaults, probe.ExpectLimits{LeaseTimeout: pred.LeaseTimeout, ConnectTimeout: pred.ConnectTimeout,
		ReadTimeout: pred.ReadTimeout, Deadline: pred.Deadline, Backoff: pred.Backoff, Retries: pred.Retries,
		HC5Retries: pred.HC5Retries, ValidateAfterInactivity: pred.ValidateAfterInactivity, NoStaleCheck: pred.NoStaleCheck,
		EvictIdle: pred.EvictIdle, EvictInterval: pred.EvictInterval, NoResendPost: pred.NoResendPost, ResendAnyMethod: pred.ResendAnyMethod,
		AttemptTimeout: pred.Layer.AttemptTimeout, BackoffMax: pred.Layer.BackoffMax, BackoffMult: pred.Layer.BackoffMult,
		Jitter: pred.Layer.Jitter, Noise: pred.Layer.Noise, RetryStatuses: pred.Layer.RetryStatuses,
		RetryAfterAs: pred.Layer.RetryAfterPolicy, RetryMethods: pred.Layer.RetryMethods, Given: given}, pool)
	if err != nil {
		return usageError{fmt.Errorf("--expect: %w", err)}
	}
	pr.Expect = &e
	return nil
}

// namespaceJobs are the jobs of every command that runs work in a namespace child: exp-i's
// vanishing peers and probe's lookup scenarios. Main dispatches them first thing.
func namespaceJobs() netns.Jobs {
	jobs := netns.Jobs{}
	for name, job := range experiments.NamespaceJobs() {
		jobs[name] = job
	}
	for name, job := range probe.NamespaceJobs() {
		jobs[name] = job
	}
	return jobs
}

// presetPools lists the presets with a pool limit per route and their limits: "hc4 2, hc5 5".
func presetPools() string {
	var out []string
	for _, name := range predict.PresetNames() {
		if n := probe.PresetPool(name); n > 0 {
			out = append(out, fmt.Sprintf("%s %d", name, n))
		}
	}
	return strings.Join(out, ", ")
}
