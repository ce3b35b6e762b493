package probe

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
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
	ps := []param.Param{{Name: "only", Usage: "run only these scenarios, comma-separated (names as listed above)", String: &p.Only},
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

// Run runs the command once per scenario, one scenario after another (each with a server of
// its own, so that counts and timings do not mix), and returns the fingerprint. A cancelled
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
		Title: fmt.Sprintf("%s: %s; behaves most like %s (%d of %d rows agree)", strings.Join(p.Command.Args, " "), summary(obs, ms),
			fit.Expect.Label, fit.agree, fit.judged),
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

// maxNameEcho bounds how much of an unknown name an error echoes.
const maxNameEcho = 64

// cutName is name cut to maxNameEcho bytes at a character boundary, with how long it was:
// an error line stays one readable line whatever was typed.
func cutName(name string) string {
	if len(name) <= maxNameEcho {
		return name
	}
	cut := maxNameEcho
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", name[:cut], len(name))
}

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
		case o.sc.kind == kindPooled || o.sc.kind == kindFresh:
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
	noCA := untrusted(obs, meas)
	for i, o := range obs {
		x := e.predict(o.sc)
		m := x.clock(meas[i])
		if noCA != "" && o.sc.pre.Fault == model.BadCertificate {
			x.skip = noCA
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
			r.ExpectedMs, r.MeasuredMs = msPtr(x.span), msPtr(m.span)
			tol := burstTolerance
			if m.approx {
				tol = approxTolerance
			}
			r.ToleranceMs = results.Ms(tol)
		case kindLookup:
			r.ExpectedMs, r.MeasuredMs, r.ToleranceMs = msPtr(x.left), msPtr(m.left), results.Ms(lookupTolerance)
		case kindStatus, kindFresh:
			r.ExpectedMs, r.MeasuredMs, r.ToleranceMs = statusTimes(x, m)
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

func msPtr(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	return results.Ms(*d)
}

// meaning says what a measurement means, in a sentence of the fingerprint, with times
// written by ms; notes adds the command's exit code and the last line of its stderr.
func meaning(o observation, m measures, ms func(time.Duration) string, notes bool) string {
	sc := o.sc
	if o.skipped != "" {
		return o.skipped
	}
	if m.arrivals == 0 && sc.kind != kindUnreachable && sc.kind != kindTLS && sc.kind != kindLookup {
		s := "no request arrived: the command did not call " + Placeholder + " or $" + EnvURL
		if o.exec.Killed {
			return s + "; still running at the " + sc.Cap.String() + " cap, killed with all it started"
		}
		if notes {
			s += fmt.Sprintf("; it exited %d", o.exec.ExitCode) + stderrNote(o, m)
		}
		return s
	}
	var s string
	switch asked := sc.Calls * sc.Concurrency; {
	case m.arrivals < asked && len(o.exec.Reports) < asked && (sc.kind == kindPooled || sc.kind == kindBurst) && m.conns == m.arrivals:
		s = fmt.Sprintf("%s for %d calls asked: the command ignores %s and %s", plural(m.arrivals, "request"), asked, EnvCalls, EnvConcurrency)
	case sc.kind == kindTLS || sc.kind == kindLookup:
		s = preFirstMeaning(o, m, ms, notes)
	case sc.kind == kindCall:
		s = callMeaning(sc, m, ms) + took(m, !notes)
	case sc.kind == kindPooled:
		s = pooledMeaning(sc, m) + took(m, !notes)
	case sc.kind == kindFresh:
		s = fmt.Sprintf("the server executed it %s on %s", times(m.executions), plural(m.conns, "connection")) + spacing(m.sends)
		if m.executions > 1 {
			s += ": it re-sends a " + sc.Method + " on a fresh connection the server killed"
		} else {
			s += ": no re-send"
		}
		s += took(m, !notes)
	case sc.kind == kindStatus:
		switch m.arrivals {
		case 1:
			s = "did not follow it"
		case 2:
			s = "followed it once"
		default:
			s = fmt.Sprintf("gave up after %d requests", m.arrivals)
		}
		s += spacing(m.sends) + took(m, !notes)
	case sc.kind == kindBurst:
		s = fmt.Sprintf("at most %s at once, %d in all", plural(m.peakConns, "connection"), m.conns)
		if m.span != nil {
			waves := int(math.Round(float64(*m.span) / float64(burstDelay)))
			s += fmt.Sprintf(": %d calls finish in %s (%s)", sc.Concurrency, plural(waves, "wave"), ms(*m.span))
		}
	case sc.kind == kindUnreachable:
		switch {
		case o.exec.Killed:
			s = "still connecting at the " + sc.Cap.String() + " cap: no connect timeout up to it"
		case m.span != nil && m.approx:
			s = "gave up after about " + ms(*m.span) + " (its wall time less the instant answer's: approximate)"
		case m.span != nil:
			s = "gave up after " + ms(*m.span) + " (its own report)"
		default:
			s = "gave up"
		}
	}
	if o.exec.Killed && sc.kind != kindUnreachable && !strings.Contains(s, "cap") {
		s += "; still running at the " + sc.Cap.String() + " cap, killed with all it started"
	} else if notes && !o.exec.Killed && o.exec.ExitCode != 0 {
		s += fmt.Sprintf("; exit %d", o.exec.ExitCode) + stderrNote(o, m)
	}
	return s
}

func stderrNote(o observation, m measures) string {
	if o.exec.Stderr == "" || m.outcome == vocab.OK {
		return ""
	}
	return " (" + o.exec.Stderr + ")"
}

func callMeaning(sc Scenario, m measures, ms func(time.Duration) string) string {
	var s string
	switch {
	case m.left != nil && sc.down.Every > 0:
		s = "left the trickle at " + ms(*m.left) + " while bytes kept coming: a deadline, not a timeout per read"
	case m.left != nil:
		s = "left at " + ms(*m.left)
	case m.outcome == vocab.Hang:
		s = "still waiting at the " + sc.Cap.String() + " cap: no timeout of its own up to it"
	case sc.down.Every > 0:
		s = "survived the " + (trickleBytes * trickleEvery).String() + " trickle: its timeout, if any, is per read, not a deadline"
	case sc.down.Delay > 0:
		s = "waited " + sc.down.Delay.String() + " for the head"
	default:
		s = "answered"
	}
	if m.how != "" {
		s += " (" + strings.ToUpper(string(m.how)) + ")"
	}
	if sc.reservation {
		s += "; the server executed it " + times(m.executions)
		if len(m.sends) > 1 {
			s += spacing(m.sends)
		}
	} else if m.arrivals > sc.Calls {
		s += "; " + resent(m.sends)
	}
	return s
}

func pooledMeaning(sc Scenario, m measures) string {
	if m.conns >= sc.Calls && m.executions <= 1 && m.outcome == vocab.OK && sc.down.KillAfterRead != "" {
		if m.stillOpen {
			return fmt.Sprintf("opened a new connection for the second call while the first's was still open, not yet back in its pool "+
				"%v after the first call: %s for %d calls, the dead pooled connection never tried", sc.Pause, plural(m.conns, "connection"), sc.Calls)
		}
		return fmt.Sprintf("pools nothing: %s for %d calls, no pooled connection to lose", plural(m.conns, "connection"), sc.Calls)
	}
	second := "the second call"
	if m.outcome == vocab.OK {
		second += " succeeded"
	} else {
		second += " failed"
	}
	if sc.down.ServerIdleTimeout > 0 {
		if m.executions == 0 {
			return "sent the " + sc.Method + " on the connection the server had closed, and " + second + " without a request arriving"
		}
		return fmt.Sprintf("%s (%s executed, %s in all)", second, times(m.executions), plural(m.conns, "connection"))
	}
	if m.executions > 1 {
		return fmt.Sprintf("re-sent the %s on a dead pooled connection (%d executions%s); %s", sc.Method, m.executions, spacing(m.sends), second)
	}
	return fmt.Sprintf("did not re-send the %s on a dead pooled connection (%s); %s", sc.Method, times(m.executions), second)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// didYouMean is " (did you mean NAME?)" for the scenario whose name is one or two edits
// from name, or "".
func didYouMean(name string) string {
	for _, n := range ScenarioNames() {
		if d := editDistance(name, n); d > 0 && d <= 2 {
			return " (did you mean " + n + "?)"
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in bytes (scenario names are
// ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
