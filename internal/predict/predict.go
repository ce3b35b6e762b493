// Package predict is labrun predict and labrun defaults: it asks the timing model which limit
// of a client fires first against a downstream, when, and how often the server executes the
// request, with no network, and lists the client libraries' defaults the model knows.
package predict

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Predictor holds the inputs of labrun predict: a client's limits, optionally starting from a
// library's defaults, and what the downstream does. It runs only the model: no network.
type Predictor struct {
	// Defaults names the preset the limits start from ("" = every limit unset), with the
	// library's rules.
	Defaults string
	// PresetFlag named Defaults, for errors ("": "defaults").
	PresetFlag string

	LeaseTimeout   time.Duration
	ConnectTimeout time.Duration
	ReadTimeout    time.Duration
	Deadline       time.Duration
	Retries        int
	Backoff        time.Duration
	// Layer are a retry layer's settings (layer.go).
	Layer Layer
	// Storm is a retry storm's question (storm.go), asked with --storm.
	Storm StormQuestion
	// Tail is the tail question (tail.go), asked with --delay-dist or --fail-rate.
	Tail TailQuestion

	// The client's rules for a pooled connection that died (model.Limits): HttpClient 5's
	// retry strategy ("none" or "default", "" for not set), its stale check (NoStaleCheck
	// turns it off), and an evictor of idle connections.
	HC5Retries              string
	ValidateAfterInactivity time.Duration
	NoStaleCheck            bool
	// validateSet says --validate-after-inactivity was given (set by Apply): a zero then is
	// the library release's rule for 0 (rules.Reuse.Validate), not "not set".
	validateSet bool
	// NoResendPost is HttpURLConnection's -Dsun.net.http.retryPost=false; ResendAnyMethod the
	// JDK HttpClient's -Djdk.httpclient.enableAllMethodRetry.
	NoResendPost, ResendAnyMethod bool
	EvictIdle                     time.Duration
	EvictInterval                 time.Duration

	Delay    time.Duration
	Bytes    int
	Every    time.Duration
	Stall    bool
	HostDown bool
	Dropped  bool
	Queue    time.Duration
	Cold     bool

	// How the pooled connection died (model.Downstream): closed by the server's keep-alive
	// timeout while it sat idle, or closed or reset ("close", "reset") after the server read
	// the request; and the request, which decides what the libraries send again.
	ServerIdleTimeout time.Duration
	IdleFor           time.Duration
	KillAfterRead     string
	Method            string
	IdempotencyKey    bool
	OneShotBody       bool
	// SYNRetries and TCPRetries2 scale the kernel down, as exp-i does: with HostDown a connect
	// gives up after SYNRetries SYN retransmissions, with Dropped a request after the
	// retransmissions tcp_retries2 = TCPRetries2 allows, both by model.Kernel's rules on a
	// veth at HZ = 250 (model.LoopbackKernel). Zero keeps the documented give-up times.
	SYNRetries  int
	TCPRetries2 int

	// A follow-up question (followup.go): the server answers Status to the first StatusTimes
	// requests (0: to every one), then 200, with Retry-After when set; a 3xx redirects to a
	// new URL. NoRedirects and Authenticate change the library's default (followRedirects,
	// an OkHttp authenticator that always answers a 401).
	Status       int
	StatusTimes  int
	RetryAfter   string
	NoRedirects  bool
	Authenticate bool

	// A question before the first byte (prefirst.go): the TLS handshake stalls, is answered
	// byte by byte or fails on the certificate or the protocol ("stall", "slow",
	// "bad-certificate", "protocol"), or the lookup is slow or fails ("slow", "nxdomain",
	// "servfail"); the library's own handshake limit; the slow handshake's pause before each
	// byte and its byte count; the host's addresses and how many of the first ones have the
	// fault (0: all).
	TLSFault, DNSFault string
	LookupDelay        time.Duration
	HandshakeTimeout   time.Duration
	HandshakeGap       time.Duration
	HandshakeBytes     int
	Routes, BadRoutes  int
}

// Params lists the predictor's parameters, bound to its fields.
func (p *Predictor) Params() []param.Param {
	max := model.DataGiveUp + time.Hour // long enough for the kernel's own give-up times
	return append([]param.Param{
		{Name: "defaults", Usage: "start from a client's defaults: " + strings.Join(PresetNames(), ", "), String: &p.Defaults, Choices: PresetNames()},
		{Name: "lease-timeout", Usage: "pool wait limit (0 = none)", Duration: &p.LeaseTimeout, MaxDuration: max},
		{Name: "connect-timeout", Usage: "connect timeout (0 = none: the kernel, 127 s)", Duration: &p.ConnectTimeout, MaxDuration: max},
		{Name: "read-timeout", Usage: "read timeout, idle per read (0 = none)", Duration: &p.ReadTimeout, MaxDuration: max},
		{Name: "deadline", Usage: "whole call, retries included (0 = none)", Duration: &p.Deadline, MaxDuration: max},
		{Name: "retries", Usage: "retries after a failed attempt", Int: &p.Retries, Min: 0, Max: 100},
		{Name: "backoff", Usage: "pause before each retry (a layer's first)", Duration: &p.Backoff, MaxDuration: max},
		{Name: "hc5-retries", Usage: "HttpClient 5's own retries: none or default",
			String: &p.HC5Retries, Choices: []string{"none", string(vocab.HC5RetriesDefault)}},
		{Name: "validate-after-inactivity", Usage: "HttpClient 5's stale check after this idle",
			Duration: &p.ValidateAfterInactivity, MaxDuration: max},
		{Name: "no-stale-check", Usage: "HttpClient 5 checks no pooled connection", Bool: &p.NoStaleCheck},
		{Name: "evict-idle", Usage: "close pooled connections idle this long", Duration: &p.EvictIdle, MaxDuration: max},
		{Name: "evict-interval", Usage: "HttpClient 5's evictor period (0 = idle/10, >= 1s)", Duration: &p.EvictInterval, MaxDuration: max},
		{Name: "delay", Usage: "server time until the response head", Duration: &p.Delay, MaxDuration: max},
		{Name: "bytes", Usage: "body bytes; with --every they trickle", Int: &p.Bytes, Min: 0, Max: 1 << 30},
		{Name: "every", Usage: "pause before each trickled body byte", Duration: &p.Every, MaxDuration: max},
		{Name: "stall", Usage: "the server never answers", Bool: &p.Stall},
		{Name: "host-down", Usage: "SYNs unanswered: connects hang (implies --cold)", Bool: &p.HostDown},
		{Name: "dropped", Usage: "a middlebox silently dropped the pooled connection", Bool: &p.Dropped},
		{Name: "queue", Usage: "the pool is full; a connection frees after this", Duration: &p.Queue, MaxDuration: max},
		{Name: "cold", Usage: "the first attempt connects (default: pooled)", Bool: &p.Cold},
		{Name: "server-idle-timeout", Usage: "the server closes connections idle this long", Duration: &p.ServerIdleTimeout, MaxDuration: max},
		{Name: "idle-for", Usage: "how long the pooled connection sat idle", Duration: &p.IdleFor, MaxDuration: max},
		{Name: "kill-after-read", Usage: "the server executes, then closes or resets it",
			String: &p.KillAfterRead, Choices: []string{string(model.KillClose), string(model.KillReset)}},
		{Name: "method", Usage: "the request method (default GET)", String: &p.Method},
		{Name: "idempotency-key", Usage: "the request has an Idempotency-Key header", Bool: &p.IdempotencyKey},
		{Name: "one-shot-body", Usage: "the request body cannot be sent again", Bool: &p.OneShotBody},
		{Name: "no-resend-post", Usage: "urlconnection: -Dsun.net.http.retryPost=false", Bool: &p.NoResendPost},
		{Name: "resend-any-method", Usage: "jdk: -Djdk.httpclient.enableAllMethodRetry", Bool: &p.ResendAnyMethod},
		{Name: "syn-retries", Usage: fmt.Sprintf("with --host-down: SYN retries (0 = %d)", model.SYNRetries),
			Int: &p.SYNRetries, Min: 0, Max: maxSYNRetries},
		{Name: "tcp-retries2", Usage: fmt.Sprintf("with --dropped: tcp_retries2 (0 = %d)", model.DataRetries),
			Int: &p.TCPRetries2, Min: 0, Max: maxRetries2},
		{Name: "status", Usage: "the server answers this status (follow-ups)",
			Int: &p.Status, Min: 0, Max: 599},
		{Name: "status-times", Usage: "only the first N requests get it (0 = all)", Int: &p.StatusTimes, Min: 0, Max: 100},
		{Name: "retry-after", Usage: "the status's Retry-After header", String: &p.RetryAfter},
		{Name: "no-redirects", Usage: "the client returns redirects", Bool: &p.NoRedirects},
		{Name: "authenticate", Usage: "with 401: an authenticator that always answers", Bool: &p.Authenticate},
		{Name: "tls-fault", Usage: "the handshake: stall, slow (byte by byte), bad-certificate or protocol", String: &p.TLSFault,
			Choices: []string{"stall", "slow", "bad-certificate", "protocol"}},
		{Name: "dns-fault", Usage: "the lookup: slow, nxdomain or servfail", String: &p.DNSFault, Choices: []string{"slow", "nxdomain", "servfail"}},
		{Name: "lookup-delay", Usage: "with --dns-fault slow: the lookup's time", Duration: &p.LookupDelay, MaxDuration: max},
		{Name: "handshake-timeout", Usage: "HttpClient 5's or 4.5's socket timeout, net/http's TLSHandshakeTimeout", Duration: &p.HandshakeTimeout, MaxDuration: max},
		{Name: "handshake-gap", Usage: "with --tls-fault slow: the pause before each byte", Duration: &p.HandshakeGap, MaxDuration: max},
		{Name: "handshake-bytes", Usage: "with --tls-fault slow: how many bytes trickle", Int: &p.HandshakeBytes, Min: 0, Max: 1 << 20},
		{Name: "routes", Usage: "with --tls-fault: the host's addresses (0 = 1)", Int: &p.Routes, Min: 0, Max: 16},
		{Name: "bad-routes", Usage: "how many first ones have the fault (0 = all)", Int: &p.BadRoutes, Min: 0, Max: 16},
	}, p.Layer.params(max)...)
}

// Check reports a parameter or a combination of them that makes no sense, naming the flags.
func (p *Predictor) Check() error {
	if err := param.CheckAll(p.Params()); err != nil {
		return err
	}
	if err := p.Layer.check(); err != nil {
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
	case p.NoStaleCheck && p.ValidateAfterInactivity > 0:
		return fmt.Errorf("--no-stale-check and --validate-after-inactivity exclude each other")
	case p.EvictInterval > 0 && p.EvictIdle == 0:
		return fmt.Errorf("--evict-interval needs --evict-idle: there is no evictor")
	case p.ServerIdleTimeout > 0 && p.IdleFor == 0:
		return fmt.Errorf("--server-idle-timeout needs --idle-for: how long the pooled connection sat idle")
	case p.IdleFor > 0 && (p.Cold || p.HostDown):
		return fmt.Errorf("--idle-for is about the pooled connection that --cold and --host-down say is missing")
	case p.KillAfterRead != "" && p.HostDown:
		return fmt.Errorf("--kill-after-read needs a server: --host-down says no server answers")
	case p.KillAfterRead != "" && p.Dropped:
		return fmt.Errorf("--kill-after-read and --dropped exclude each other: a dropped connection never reaches the server")
	case p.Method != "" && (len(p.Method) > maxMethod || !httpguts.ValidHeaderFieldName(p.Method)):
		return fmt.Errorf("--method: %q is not an HTTP token of at most %d bytes (RFC 9110 section 9.1)", param.Cut(p.Method), maxMethod)
	case p.preFirst():
		return p.checkPreFirst()
	case p.Status != 0 || p.StatusTimes != 0 || p.RetryAfter != "" || p.NoRedirects || p.Authenticate:
		return p.checkFollowUp()
	case p.Every > 0 && time.Duration(p.Bytes) > (MaxScenario-p.Delay)/p.Every:
		return fmt.Errorf("--bytes %d with --every %v trickles for longer than the model's range of %v: make one of them smaller",
			p.Bytes, p.Every, MaxScenario)
	}
	return nil
}

// maxMethod bounds --method (UPDATEREDIRECTREF, the longest registered, is 17 bytes).
const maxMethod = 32

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

// InRange refuses a prediction with a time past MaxScenario: the model's sums of waits
// saturate (model.Later), so waits of any size land here, on every question.
func InRange(pred results.Prediction) error {
	over := func(v *float64) bool { return v != nil && *v > results.MaxMs }
	far := over(pred.TotalMs) || over(pred.TotalMaxMs)
	for _, a := range pred.Attempts {
		far = far || over(&a.StartMs) || over(a.EndMs)
	}
	if far {
		return fmt.Errorf("the call lasts longer than the model's range of a year (%v): make --retries, --backoff or --retry-after smaller", MaxScenario)
	}
	return nil
}

// Apply sets every limit the preset named by p.Defaults defines, except those the user gave
// explicitly (isSet reports which flags were given), and takes the preset's rules.
func (p *Predictor) Apply(isSet func(name string) bool) error {
	p.validateSet = isSet("validate-after-inactivity")
	if p.Defaults == "" {
		return p.Layer.needsLayer(p.preset()+" (none)", rules.Rules{})
	}
	entry, ok := rules.Lookup(p.Defaults)
	if !ok {
		return fmt.Errorf("--defaults: unknown client %q (want %s)", param.Cut(p.Defaults), strings.Join(PresetNames(), ", "))
	}
	pre := model.PresetOf(entry)
	// The limits a preset sets, by flag name; the order does not matter.
	set := map[string]func(){
		"lease-timeout":   func() { p.LeaseTimeout = pre.Limits.LeaseTimeout },
		"connect-timeout": func() { p.ConnectTimeout = pre.Limits.ConnectTimeout },
		"read-timeout":    func() { p.ReadTimeout = pre.Limits.ReadTimeout },
		"deadline":        func() { p.Deadline = pre.Limits.Deadline },
		"retries":         func() { p.Retries = pre.Limits.Retries },
		"backoff":         func() { p.Backoff = pre.Limits.Backoff },
		"evict-idle":      func() { p.EvictIdle = pre.Limits.EvictIdle },
	}
	if !isSet("no-stale-check") {
		set["validate-after-inactivity"] = func() { p.ValidateAfterInactivity = pre.Limits.ValidateAfterInactivity }
	}
	if entry.Reads(rules.FlagHC5Retries) && entry.Settings.AutomaticRetries {
		set[string(rules.FlagHC5Retries)] = func() { p.HC5Retries = string(vocab.HC5RetriesDefault) }
	}
	for name, apply := range set {
		if !isSet(name) {
			apply()
		}
	}
	if rulesOfPreset(p.Defaults, p).Reuse.Check != rules.CheckAfterInactivity {
		for _, name := range []string{"hc5-retries", "validate-after-inactivity", "no-stale-check", "evict-interval"} {
			if isSet(name) {
				return fmt.Errorf("--%s is HttpClient 5's; %s %s follows %s's own rules", name, p.preset(), p.Defaults, pre.Client)
			}
		}
	}
	if err := p.checkSettings(isSet); err != nil {
		return err
	}
	if err := p.Layer.needsLayer(p.preset()+" "+p.Defaults, rulesOfPreset(p.Defaults, p)); err != nil {
		return err
	}
	return nil
}

// preset is the flag that named the preset.
func (p *Predictor) preset() string { return "--" + cmp.Or(p.PresetFlag, "defaults") }

// Limits returns the client's limits and rules in the model's terms, as Predict asks the
// model with them (after Apply).
func (p *Predictor) Limits() model.Limits {
	l := model.Limits{
		Rules:        rulesOfPreset(p.Defaults, p),
		LeaseTimeout: p.LeaseTimeout, ConnectTimeout: p.ConnectTimeout, ReadTimeout: p.ReadTimeout,
		Deadline: p.Deadline, Retries: p.Retries, Backoff: p.Backoff,
		ValidateAfterInactivity: p.ValidateAfterInactivity, EvictIdle: p.EvictIdle, EvictInterval: p.EvictInterval,
	}
	d := preset(p.Defaults).Limits
	l.AttemptTimeout, l.BackoffMax = d.AttemptTimeout, d.BackoffMax
	l.TLSHandshakeTimeout = cmp.Or(p.HandshakeTimeout, d.TLSHandshake)
	l.Rules = p.Layer.apply(l.Rules, &l)
	if p.validateSet && p.ValidateAfterInactivity == 0 {
		// HttpClient 5.2.1 (Debian's, the hc5 profile's) and 4.5 turn the check off at 0;
		// 5.2.2 and later check every lease.
		l.ValidateAfterInactivity = l.Rules.Reuse.Validate(0)
	}
	if p.NoStaleCheck {
		l.ValidateAfterInactivity = model.NoValidation
	}
	return l
}

// Predict runs the model.
func (p *Predictor) Predict() results.Prediction {
	if p.Status != 0 {
		return p.predictFollowUp()
	}
	if p.preFirst() {
		return p.predictPreFirst()
	}
	l := p.Limits()
	d := model.Downstream{Delay: p.Delay, Bytes: p.Bytes, Every: p.Every, Stall: p.Stall, HostDown: p.HostDown, Dropped: p.Dropped,
		ServerIdleTimeout: p.ServerIdleTimeout, IdleFor: p.IdleFor, KillAfterRead: model.Kill(p.KillAfterRead),
		KillNew: p.Cold, Method: p.Method, IdempotencyKey: p.IdempotencyKey, OneShotBody: p.OneShotBody}
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
		TotalMaxMs:       bandMs(pred.Total, pred.TotalMax),
		ServerExecutions: pred.Executions,
		Attempts:         attempts(pred),
	}
	for i := range out.Attempts {
		out.Attempts[i].Why = model.Why(d, l, pred, i)
	}
	out.Explanation = model.Explain(d, l, pred)
	return out
}

// attempts converts the model's attempts to a document's.
func attempts(pred model.Prediction) []results.Attempt {
	out := []results.Attempt{}
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
		out = append(out, ra)
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

// bandMs is the end of a call with a retry layer's random waits at their longest, when that
// differs from total (their shortest): none when the layer has no jitter or the call hangs.
func bandMs(total, totalMax time.Duration) *float64 {
	if totalMax <= total || total == model.Forever || totalMax == model.Forever {
		return nil
	}
	return results.Ms(totalMax)
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
