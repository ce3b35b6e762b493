package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/runner"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Name is the probe's name in results: its runs are the runs of "probe".
const Name = "probe"

// Probe runs a command against every scenario (or those of Only) and returns its
// fingerprint as a results.Run, judged against Expect, or, without one, against the closest
// client the model knows. Experiment makes it an experiments.Experiment.
type Probe struct {
	// Command is the client under test.
	Command Command
	// Only lists the scenarios to run, by name, comma-separated; empty runs all.
	Only string
	// Expect is the client the rows are expected to behave like (--expect); nil fits one.
	Expect *Expect

	caps     []time.Duration // by scenario, as Scenarios orders them
	capScale int             // every cap is multiplied by it (--cap-scale)
	gate     *runner.Gate    // admits the scenarios; nil: one of the probe's own
}

// New returns a probe of cmd over every scenario, with their default caps.
func New(cmd Command) *Probe {
	p := &Probe{Command: cmd, capScale: 1}
	for _, s := range Scenarios() {
		p.caps = append(p.caps, s.Cap)
	}
	return p
}

// Info describes the probe for the command line.
func (p *Probe) Info() experiments.Info {
	return experiments.Info{Name: Name, Title: "what an HTTP client really does, seen from the server"}
}

// maxCap bounds a scenario's cap; maxCapScale the scale of all of them.
const (
	maxCap      = 10 * time.Minute
	maxCapScale = 20
)

// Experiment returns the probe as an experiment, whose parameters are the caps of the
// scenarios (--silent-cap, ...) and --only, so that --repeat, --warmup and the reports are the
// experiments' own.
func (p *Probe) Experiment() experiments.Experiment { return experiment{p} }

// experiment is a Probe with its parameters.
type experiment struct{ *Probe }

// Params implements experiments.Experiment.
func (e experiment) Params() []param.Param { return e.params() }

// params are the caps of the scenarios (--silent-cap, ...) and --only.
func (p *Probe) params() []param.Param {
	ps := []param.Param{{Name: "only", Usage: "run only these scenarios, comma-separated (labrun probe --help lists them under Scenarios)", String: &p.Only},
		{Name: "cap-scale", Usage: "multiply every scenario's cap by this", Int: &p.capScale, Min: 1, Max: maxCapScale}}
	for i, s := range Scenarios() {
		ps = append(ps, param.Param{Name: s.Name + "-cap", Usage: "kill the command and all it started this long after it starts on " + s.Title,
			Duration: &p.caps[i], MaxDuration: maxCap})
	}
	return ps
}

// Check reports an unknown scenario in Only, a cap too short to start a command, and a
// command that cannot be started.
func (p *Probe) Check() error {
	if _, err := p.scenarios(); err != nil {
		return err
	}
	if p.capScale < 1 || p.capScale > maxCapScale {
		return fmt.Errorf("--cap-scale must be from 1 to %d, got %d", maxCapScale, p.capScale)
	}
	for i, s := range Scenarios() {
		if p.caps[i] < startup+time.Second {
			return fmt.Errorf("--%s-cap must be at least %v (the command's start-up and a second), got %v", s.Name, startup+time.Second, p.caps[i])
		}
		if c := p.cap(i); c > maxCap {
			return fmt.Errorf("--cap-scale %d makes the %s cap %v, longer than %v", p.capScale, s.Name, c, maxCap)
		}
	}
	return p.Command.Check()
}

// cap is scenario i's cap, scaled.
func (p *Probe) cap(i int) time.Duration { return p.caps[i] * time.Duration(max(1, p.capScale)) }

// scenarios returns the scenarios to run, with their caps.
func (p *Probe) scenarios() ([]Scenario, error) {
	all := Scenarios()
	for i := range all {
		all[i].Cap = p.cap(i)
	}
	if strings.TrimSpace(p.Only) == "" {
		return all, nil
	}
	var out []Scenario
	for _, name := range strings.Split(p.Only, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(s Scenario) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("--only: unknown scenario %q%s (want %s)", cutName(name), didYouMean(name), strings.Join(ScenarioNames(), ", "))
		}
		if !slices.ContainsFunc(out, func(s Scenario) bool { return s.Name == name }) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// Run runs the command once per scenario, side by side as the machine allows (each with a
// server of its own, so that counts and timings do not mix), and returns the fingerprint. A cancelled
// ctx kills the command running and returns ctx's error: nothing of a half-run probe is
// returned.
func (p *Probe) Run(ctx context.Context, opt experiments.Options) (results.Run, error) {
	obs, err := p.observeAll(ctx, opt)
	if err != nil {
		return results.Run{}, err
	}
	return p.result(obs, opt.Tolerance), nil
}

// result judges the observations against p.Expect, or the closest client, with tol.
func (p *Probe) result(obs []observation, tol time.Duration) results.Run {
	ms := measureAll(obs)
	fit := fitClosest(obs, ms, tol)
	expect, gated := fit.Expect, p.Expect != nil
	if gated {
		expect = *p.Expect
	}
	run := results.Run{
		Experiment: Name,
		Title: fmt.Sprintf("%s: %s; %s", strings.Join(p.Command.Args, " "), summary(obs, ms),
			results.Analogy(fit.Expect.Label, fit.tied, fit.agree, fit.judged)),
		Config: []results.Param{
			{Name: "command", Value: strings.Join(p.Command.Args, " ")},
			{Name: "summary", Value: summary(obs, ms)},
			{Name: "closest", Value: fit.Expect.Label},
		},
		Rows:  rows(obs, ms, expect),
		Calls: callsOf(obs, ms),
		Axis:  "from the first request's arrival at the server, per scenario",
	}
	for i := range run.Rows {
		// A time the server measured runs from the request's arrival: the command's start,
		// and its work before sending, are not in it (results.Row.StartUnseen).
		run.Rows[i].StartUnseen = i < len(ms) && (ms[i].left != nil || ms[i].leftConnect != nil)
	}
	if len(fit.tied) > 0 {
		run.Config = append(run.Config, results.Param{Name: "tied", Value: strings.Join(fit.tied, results.TiedSep)})
	}
	if gated {
		run.Config = append(run.Config, results.Param{Name: "expect", Value: expect.Label})
	}
	if p.capScale > 1 {
		run.Config = append(run.Config, results.Param{Name: "cap-scale", Value: fmt.Sprint(p.capScale)})
	}
	defaults := map[string]time.Duration{}
	for _, sc := range Scenarios() {
		defaults[sc.Name] = sc.Cap
	}
	scale := time.Duration(max(1, p.capScale))
	for _, o := range obs {
		if o.sc.Cap != defaults[o.sc.Name]*scale { // the caps at their defaults are in docs/probe.md
			run.Config = append(run.Config, results.Param{Name: o.sc.Name + "-cap", Value: (o.sc.Cap / scale).String()})
		}
	}
	run.Finish(tol)
	return run
}

// cutName is name as an error echoes it (param.Cut).
func cutName(name string) string { return param.Cut(name) }

// summary says in a few words what the client's timeout is and whether it sends a request
// again by itself: "a 1.5s deadline, no re-sends", "a 1s timeout per read; re-sends on a dead
// connection".
func summary(obs []observation, meas []measures) string {
	var silent, trickle *measures
	resends := false
	for i, o := range obs {
		m := &meas[i]
		switch {
		case o.sc.Name == "silent":
			silent = m
		case o.sc.Name == "trickle":
			trickle = m
		case o.sc.kind == kindPooled || o.sc.kind == kindFresh || o.sc.kind == kindCut:
			resends = resends || m.executions > 1
		case o.sc.kind == kindCall || o.sc.kind == kindStatus:
			resends = resends || (o.sc.reservation && m.executions > 1) || (o.sc.kind == kindCall && m.arrivals > o.sc.Calls)
		}
		if (o.sc.Name == "silent" || o.sc.Name == "trickle") && m.arrivals > o.sc.Calls {
			resends = true // a retry layer's attempts
		}
	}
	var s string
	switch {
	case silent == nil:
		s = "timeout not probed"
	case silent.left == nil && silent.outcome == vocab.Hang:
		s = "no timeout up to the cap"
	case silent.left == nil:
		s = "no request left"
	case trickle != nil && trickle.left != nil && roundTo(*trickle.left, fitGrain) == roundTo(*silent.left, fitGrain):
		s = "a " + roundTo(*silent.left, fitGrain).String() + " deadline"
	case trickle != nil && trickle.left == nil && trickle.outcome == vocab.OK:
		s = "a " + roundTo(*silent.left, fitGrain).String() + " timeout per read, not a deadline"
	default:
		s = "leaves a silent server at " + roundTo(*silent.left, fitGrain).String()
	}
	if silent != nil && silent.left != nil && len(silent.sends) > 1 { // a retry layer: the limit is each attempt's
		s += fmt.Sprintf(" per attempt (%d attempts on the silent server", len(silent.sends))
		if silent.call != nil {
			s += ", " + roundTo(*silent.call, 100*time.Millisecond).String() + " in all"
		}
		s += ")"
	}
	if resends {
		return s + "; re-sends by itself"
	}
	return s + ", no re-sends"
}

// The rows' own margins: an unreachable address's time approximated from wall times carries
// the command's start-up, which varies by a few hundred milliseconds; a burst's span carries
// the start of the command's threads.
const (
	approxTolerance = 300 * time.Millisecond
	// A lookup's time is the command's report of its first call, which carries the
	// client's first-call work besides the lookup (a JVM's class loading).
	lookupTolerance = 300 * time.Millisecond
	burstTolerance  = 200 * time.Millisecond
)

// rows turns the observations into rows judged against e.
func rows(obs []observation, meas []measures, e Expect) []results.Row {
	var out []results.Row
	noCAGood, noCA := untrusted(obs, meas)
	for i, o := range obs {
		if o.sc.kind == kindStorm {
			out = append(out, stormRow(o, e))
			continue
		}
		x := e.predict(o.sc)
		m := x.clock(meas[i])
		switch {
		case noCA != "" && o.sc.pre.Fault == model.BadCertificate:
			x.skip = noCA
		case noCA != "" && o.sc.kind == kindTLS && o.sc.pre.Fault == "":
			x.skip = noCAGood
		}
		calls := o.sc.Calls * o.sc.Concurrency
		r := results.Row{Name: o.sc.Name + ": " + o.sc.Title, Calls: calls, ExpectedCalls: calls, NoPool: true,
			Outcome: m.outcome, ExpectedOutcome: x.outcome, Server: meaning(o, m, ms, true)}
		switch {
		case o.skipped != "":
			r.Skipped, r.Outcome = o.skipped, ""
			out = append(out, r)
			continue
		case x.skip != "":
			r.Skipped = x.skip
		}
		if b := protocolBreach(o, m); b != "" {
			r.Skipped = "not judged: " + b
		}
		r.ServerExecutions, r.ExpectedExecutions = results.Count(m.executions), x.executions
		if o.sc.kind != kindUnreachable {
			r.NewConnections, r.ExpectedNewConnections = results.Count(m.conns), x.conns
		}
		switch o.sc.kind {
		case kindBurst, kindUnreachable:
			tol := burstTolerance
			if m.approx {
				tol = approxTolerance
			}
			r.ExpectedMs, r.MeasuredMs, r.ToleranceMs = spanTimes(x, m, tol)
		case kindLookup:
			r.ExpectedMs, r.MeasuredMs, r.ToleranceMs = msPtr(x.left), msPtr(m.left), results.Ms(lookupTolerance)
		case kindStatus, kindFresh, kindCut:
			r.ExpectedMs, r.MeasuredMs, r.ToleranceMs = statusTimes(x, m)
		case kindTLS:
			r.ExpectedMs, r.MeasuredMs, r.ToleranceMs = stallTimes(x, m)
		default:
			r.ExpectedMs, r.MeasuredMs = msPtr(x.left), msPtr(m.left)
		}
		out = append(out, r)
	}
	return out
}

// followTolerance is a status row's margin for each request the model expects after the
// first: the model's answers are instant, while a client reads each answer and sends the next
// request (a redirect followed, a retry after its wait) in some milliseconds of its own work,
// which a 30-request redirect chain adds up (requests, resty's); statusTolerance is the margin
// of the whole span besides.
const (
	followTolerance = 5 * time.Millisecond
	statusTolerance = 50 * time.Millisecond
)

// statusTimes are a status row's (or a fresh connection's) expected and measured times and its
// margin: the call as the server saw it, from the first request's arrival to the last one's
// answer (or kill), against the model's waits (the answers are instant), which a retry layer's
// jitter makes a band
// [total, totalMax]: the row expects its middle, within half the band plus its margin. A call
// the cap cut (Hang) has no time to judge.
func statusTimes(x expectation, m measures) (want, got, tol *float64) {
	if len(m.sends) > 0 {
		last := m.sends[len(m.sends)-1]
		span := last.at
		if last.end != nil {
			span = *last.end
		}
		got = results.Ms(span)
	}
	if x.total == nil || x.totalMax == nil || x.outcome == vocab.Hang {
		return nil, got, nil
	}
	half := (*x.totalMax - *x.total) / 2
	follows := 0
	if x.executions != nil {
		follows = max(0, *x.executions-1)
	}
	return results.Ms(*x.total + half), got, results.Ms(half + statusTolerance + time.Duration(follows)*followTolerance)
}

// spanTimes are a burst's or an unreachable address's expected and measured spans and the
// margin tol: with random waits, the band's middle within half the band plus tol.
func spanTimes(x expectation, m measures, tol time.Duration) (want, got, margin *float64) {
	if x.span == nil || x.spanMax == nil {
		return msPtr(x.span), msPtr(m.span), results.Ms(tol)
	}
	half := (*x.spanMax - *x.span) / 2
	mid := *x.span + half
	return results.Ms(mid), msPtr(m.span), results.Ms(half + tol)
}

func msPtr(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	return results.Ms(*d)
}
