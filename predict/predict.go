// Package predict is labrun predict and labrun defaults: it asks the timing model which limit
// of a client fires first against a downstream, when, and how often the server executes the
// request, with no network, and lists the client libraries' defaults the model knows.
package predict

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/model"
	"github.com/labrun/labrun/param"
	"github.com/labrun/labrun/results"
)

// Predictor holds the inputs of labrun predict: a client's limits, optionally starting from a
// library's defaults, and what the downstream does. It runs only the model: no network.
type Predictor struct {
	// Defaults names the preset the limits start from ("" = every limit unset), with the
	// library's rules.
	Defaults string
	profile  model.Profile // the preset's rules, set by Apply
	rocf     bool          // the preset's retryOnConnectionFailure, set by Apply

	LeaseTimeout   time.Duration
	ConnectTimeout time.Duration
	ReadTimeout    time.Duration
	Deadline       time.Duration
	Retries        int
	Backoff        time.Duration

	Delay    time.Duration
	Bytes    int
	Every    time.Duration
	Stall    bool
	HostDown bool
	Dropped  bool
	Queue    time.Duration
	Cold     bool

	// SYNRetries and TCPRetries2 scale the kernel down, as exp-i does: with HostDown a connect
	// gives up after SYNRetries SYN retransmissions, with Dropped a request after the
	// retransmissions tcp_retries2 = TCPRetries2 allows, both by model.Kernel's rules on a
	// veth at HZ = 250 (model.LoopbackKernel). Zero keeps the documented give-up times.
	SYNRetries  int
	TCPRetries2 int
}

// Params lists the predictor's parameters, bound to its fields.
func (p *Predictor) Params() []param.Param {
	max := model.DataGiveUp + time.Hour // long enough for the kernel's own give-up times
	return []param.Param{
		{Name: "defaults", Usage: "start from a client's defaults: " + strings.Join(PresetNames(), ", "), String: &p.Defaults, Choices: PresetNames()},
		{Name: "lease-timeout", Usage: "wait for a pooled connection at most this long (0 = no limit)", Duration: &p.LeaseTimeout, MaxDuration: max},
		{Name: "connect-timeout", Usage: "connect timeout (0 = none: the kernel gives up after 127 s)", Duration: &p.ConnectTimeout, MaxDuration: max},
		{Name: "read-timeout", Usage: "read timeout, idle per read (0 = none)", Duration: &p.ReadTimeout, MaxDuration: max},
		{Name: "deadline", Usage: "total deadline of the call, retries included (0 = none)", Duration: &p.Deadline, MaxDuration: max},
		{Name: "retries", Usage: "retries after a failed attempt", Int: &p.Retries, Min: 0, Max: 100},
		{Name: "backoff", Usage: "pause before each retry", Duration: &p.Backoff, MaxDuration: max},
		{Name: "delay", Usage: "server time until the response head", Duration: &p.Delay, MaxDuration: max},
		{Name: "bytes", Usage: "body bytes; with --every they trickle", Int: &p.Bytes, Min: 0, Max: 1 << 30},
		{Name: "every", Usage: "pause before each trickled body byte", Duration: &p.Every, MaxDuration: max},
		{Name: "stall", Usage: "the server never answers", Bool: &p.Stall},
		{Name: "host-down", Usage: "SYNs go unanswered: every connect hangs (implies --cold)", Bool: &p.HostDown},
		{Name: "dropped", Usage: "a middlebox silently dropped the pooled connection", Bool: &p.Dropped},
		{Name: "queue", Usage: "the pool is full; a connection frees after this long", Duration: &p.Queue, MaxDuration: max},
		{Name: "cold", Usage: "the first attempt must connect (default: it finds a pooled connection)", Bool: &p.Cold},
		{Name: "syn-retries", Usage: fmt.Sprintf("with --host-down: the kernel's SYN retries, as exp-i measures them (0 = the documented %d: 127 s)", model.SYNRetries),
			Int: &p.SYNRetries, Min: 0, Max: maxSYNRetries},
		{Name: "tcp-retries2", Usage: fmt.Sprintf("with --dropped: the kernel's tcp_retries2, as exp-i measures it (0 = the documented %d: 924.6 s)", model.DataRetries),
			Int: &p.TCPRetries2, Min: 0, Max: maxRetries2},
	}
}

// Check reports a parameter or a combination of them that makes no sense, naming the flags.
func (p *Predictor) Check() error {
	if err := param.CheckAll(p.Params()); err != nil {
		return err
	}
	switch {
	case p.HostDown && p.Dropped:
		return fmt.Errorf("--host-down and --dropped exclude each other: a connection to a host that is down was never made")
	case p.Dropped && p.Cold:
		return fmt.Errorf("--dropped and --cold exclude each other: --dropped is about the pooled connection that --cold says is missing")
	case p.Stall && (p.Bytes > 0 || p.Every > 0 || p.Delay > 0):
		return fmt.Errorf("--stall excludes --delay, --bytes and --every: a stalled server sends nothing")
	case p.SYNRetries > 0 && !p.HostDown:
		return fmt.Errorf("--syn-retries needs --host-down: it counts the SYNs sent to a host that does not answer")
	case p.TCPRetries2 > 0 && !p.Dropped:
		return fmt.Errorf("--tcp-retries2 needs --dropped: it counts the retransmissions of a request nobody acknowledges")
	case p.Every > 0 && p.Bytes == 0:
		return fmt.Errorf("--every needs --bytes: there is no body to trickle")
	case p.Every > 0 && time.Duration(p.Bytes) > (MaxScenario-p.Delay)/p.Every:
		return fmt.Errorf("--bytes %d with --every %v trickles for longer than the model's range of %v: make one of them smaller",
			p.Bytes, p.Every, MaxScenario)
	}
	return nil
}

// The largest counts --syn-retries and --tcp-retries2 take: Linux's own bound on a socket's
// SYN retries (MAX_TCP_SYNCNT), and a tcp_retries2 whose give-up, past three hours, is
// beyond any question a client asks.
const (
	maxSYNRetries = 127
	maxRetries2   = 100
)

// MaxScenario bounds how long a scenario's server may take (delay plus trickle): the model
// adds durations in time.Duration, which holds 292 years, and a year keeps every sum it makes
// (retries and backoffs included) exact and every time a report can draw.
const MaxScenario = 365 * 24 * time.Hour

// Apply sets every limit the preset named by p.Defaults defines, except those the user gave
// explicitly (isSet reports which flags were given), and takes the preset's rules.
func (p *Predictor) Apply(isSet func(name string) bool) error {
	if p.Defaults == "" {
		return nil
	}
	pre, ok := model.PresetNamed(p.Defaults)
	if !ok {
		return fmt.Errorf("--defaults: unknown client %q (want %s)", p.Defaults, strings.Join(PresetNames(), ", "))
	}
	// The limits a preset sets, by flag name; the order does not matter.
	set := map[string]func(){
		"lease-timeout":   func() { p.LeaseTimeout = pre.Limits.LeaseTimeout },
		"connect-timeout": func() { p.ConnectTimeout = pre.Limits.ConnectTimeout },
		"read-timeout":    func() { p.ReadTimeout = pre.Limits.ReadTimeout },
		"deadline":        func() { p.Deadline = pre.Limits.Deadline },
		"retries":         func() { p.Retries = pre.Limits.Retries },
		"backoff":         func() { p.Backoff = pre.Limits.Backoff },
	}
	for name, apply := range set {
		if !isSet(name) {
			apply()
		}
	}
	p.profile, p.rocf = pre.Limits.Profile, pre.Limits.RetryOnConnectionFailure
	return nil
}

// Predict runs the model.
func (p *Predictor) Predict() results.Prediction {
	l := model.Limits{
		Profile: p.profile, RetryOnConnectionFailure: p.rocf,
		LeaseTimeout: p.LeaseTimeout, ConnectTimeout: p.ConnectTimeout, ReadTimeout: p.ReadTimeout,
		Deadline: p.Deadline, Retries: p.Retries, Backoff: p.Backoff,
	}
	d := model.Downstream{Delay: p.Delay, Bytes: p.Bytes, Every: p.Every, Stall: p.Stall, HostDown: p.HostDown, Dropped: p.Dropped}
	pred := model.Predict(d, l, p.Cold || p.HostDown, p.Queue)
	if p.SYNRetries > 0 || p.TCPRetries2 > 0 {
		// The question exp-i's kernel rows measure: the scaled kernel gives up, not the book.
		syn, r2 := cmp.Or(p.SYNRetries, model.SYNRetries), cmp.Or(p.TCPRetries2, model.DataRetries)
		pred = model.LoopbackKernel().Predict(d, l, p.Cold || p.HostDown, p.Queue, syn, r2)
	}
	out := results.Prediction{
		Scenario:         scenario(p.Params()),
		Outcome:          pred.Outcome,
		TotalMs:          modelMs(pred.Total),
		ServerExecutions: pred.Executions,
		Attempts:         []results.Attempt{},
	}
	for _, a := range pred.Attempts {
		ra := results.Attempt{
			StartMs: *results.Ms(a.Start), EndMs: modelMs(a.End), Outcome: a.Outcome,
			NewConnection: a.NewConnection, Executed: a.Executed(), Phases: []results.PhaseSpan{},
		}
		for _, s := range a.Phases {
			span := results.PhaseSpan{Phase: s.Phase}
			if s.End != model.Forever {
				span.Ms = results.Ms(s.End - s.Start)
			}
			ra.Phases = append(ra.Phases, span)
		}
		out.Attempts = append(out.Attempts, ra)
	}
	return out
}

// modelMs converts a model time to a document's value: none for a call that hangs.
func modelMs(d time.Duration) *float64 {
	if d == model.Forever {
		return nil
	}
	return results.Ms(d)
}

// scenario lists the parameters that differ from their zero value, for the report's heading.
func scenario(ps []param.Param) []results.Param {
	out := []results.Param{}
	for _, p := range ps {
		switch v := p.Value(); v {
		case "", "0", "0s", "false":
		default:
			out = append(out, results.Param{Name: p.Name, Value: v})
		}
	}
	return out
}
