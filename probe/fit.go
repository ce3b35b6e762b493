package probe

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/internal/rules"
)

// fitted is the closest client the model knows, how many judged rows agree, and the presets
// that tie with it (fitKey.ties).
type fitted struct {
	Expect
	agree, judged int
	tied          []string
}

// PresetPool is the connection limit per route of the preset called name, 0 for none.
func PresetPool(name string) int {
	p, _ := rules.Lookup(name)
	return p.PerRoute
}

// presetLimits returns the preset's limits and rules as predict --defaults sets them.
func presetLimits(name string) (model.Limits, error) {
	p := &predict.Predictor{Defaults: name}
	if err := p.Apply(func(string) bool { return false }); err != nil {
		return model.Limits{}, err
	}
	return p.Limits(), nil
}

// ExpectLimits are the limits of an expected client that differ from its defaults, by
// predict's flags; a field Given does not name takes the default.
type ExpectLimits struct {
	LeaseTimeout, ConnectTimeout, ReadTimeout, Deadline, Backoff time.Duration
	Retries                                                      int
	// HC5Retries is HttpClient 5's retry strategy: "none" or "default".
	HC5Retries string
	// ValidateAfterInactivity is HttpClient's stale check; NoStaleCheck turns it off.
	ValidateAfterInactivity time.Duration
	NoStaleCheck            bool
	// EvictIdle and EvictInterval are an evictor of idle connections.
	EvictIdle, EvictInterval time.Duration
	// NoResendPost and ResendAnyMethod are predict's flags of those names.
	NoResendPost, ResendAnyMethod bool
	// A retry layer's settings (predict.LayerFlags); zero keeps the client's.
	AttemptTimeout, BackoffMax, Noise         time.Duration
	BackoffMult, Jitter                       int
	RetryStatuses, RetryAfterAs, RetryMethods string
	// Given names the flags set: a given zero is a zero.
	Given []string
}

// NewExpect returns the Expect of preset client with l and a pool of pool per route (0: none);
// an unknown client or a limit it does not have is an error.
func NewExpect(client string, l ExpectLimits, pool int) (Expect, error) {
	p := &predict.Predictor{Defaults: client, PresetFlag: "expect", LeaseTimeout: l.LeaseTimeout, ConnectTimeout: l.ConnectTimeout,
		ReadTimeout: l.ReadTimeout, Deadline: l.Deadline, Backoff: l.Backoff, Retries: l.Retries,
		HC5Retries: l.HC5Retries, ValidateAfterInactivity: l.ValidateAfterInactivity, NoStaleCheck: l.NoStaleCheck,
		EvictIdle: l.EvictIdle, EvictInterval: l.EvictInterval, NoResendPost: l.NoResendPost, ResendAnyMethod: l.ResendAnyMethod,
		Layer: predict.Layer{AttemptTimeout: l.AttemptTimeout, BackoffMax: l.BackoffMax, BackoffMult: l.BackoffMult, Jitter: l.Jitter,
			Noise: l.Noise, RetryStatuses: l.RetryStatuses, RetryAfterPolicy: l.RetryAfterAs, RetryMethods: l.RetryMethods}}
	if err := p.Check(); err != nil {
		return Expect{}, err
	}
	if err := p.Apply(func(name string) bool { return slices.Contains(l.Given, name) }); err != nil {
		return Expect{}, err
	}
	def, err := presetLimits(client)
	if err != nil {
		return Expect{}, err
	}
	lim := p.Limits()
	return Expect{Label: describe(client, lim, def, pool, PresetPool(client)), limits: lim, Pool: pool}, nil
}

// fitClosest finds the preset, at its defaults or with the limits the measurements suggest
// (fitInputs), whose predictions agree best (fitKey.better). The trickle ranks first, so that
// the label never contradicts the summary's "a timeout per read, not a deadline".
func fitClosest(obs []observation, ms []measures, tol time.Duration) fitted {
	c := fitInputs(obs, ms)
	best, bestKey := fitted{agree: -1}, fitKey{}
	type top struct {
		label string
		key   fitKey
	}
	var tops []top // each preset's best
	for pi, name := range fitProfiles {
		def, err := presetLimits(name)
		if err != nil {
			continue // every name of fitProfiles is a preset
		}
		var mine top
		for _, l := range c.variants(def) {
			for _, pl := range values(PresetPool(name), 0, c.pool) {
				e := Expect{Label: describe(name, l, def, pl, PresetPool(name)), limits: l, Pool: pl}
				k := rank(obs, ms, e, tol)
				k.profile = -pi
				if best.agree < 0 || k.better(bestKey) {
					best, bestKey = fitted{Expect: e, agree: k.agree, judged: k.judged}, k
				}
				if mine.label == "" || k.better(mine.key) {
					mine = top{e.Label, k}
				}
			}
		}
		tops = append(tops, mine)
	}
	for _, t := range tops {
		if t.label != best.Label && t.key.ties(bestKey) {
			best.tied = append(best.tied, t.label)
		}
	}
	return best
}

// fitProfiles are the presets a fit tries, ties going to the earlier (rules.Preset.FitRank).
var fitProfiles = rules.Names(rules.FitOrder())

// fitCandidates are the values the measurements suggest.
type fitCandidates struct {
	times, connects []time.Duration
	retries, pool   []int
}

// fitInputs reads the candidates from the measurements.
func fitInputs(obs []observation, ms []measures) fitCandidates {
	c := fitCandidates{retries: []int{0}, pool: []int{0}}
	addRetries := func(sent int) {
		if sent > 1 && !slices.Contains(c.retries, sent-1) {
			c.retries = append(c.retries, sent-1)
		}
	}
	for i, o := range obs {
		m := ms[i]
		switch {
		case (o.sc.kind == kindCall || o.sc.kind == kindTLS) && m.left != nil:
			// The limit that ended the first request or the stalled handshake.
			c.times = append(c.times, roundTo(*m.left, connectGrain), roundTo(*m.left, fitGrain))
		case o.sc.kind == kindUnreachable && m.span != nil:
			c.connects = append(c.connects, roundTo(*m.span, connectGrain))
		}
		// Retries show wherever a call was sent more than once.
		switch o.sc.kind {
		case kindCall, kindStatus:
			addRetries(m.executions)
		case kindTLS:
			addRetries(m.conns)
		}
		if o.sc.kind == kindBurst && m.peakConns > 0 && m.peakConns < o.sc.Concurrency {
			c.pool = append(c.pool, m.peakConns)
		}
	}
	return c
}

// variants lists the limits a fit tries from def: every combination of the candidates, or
// with a retry layer one timeout at a time (its client sets one) and the methods it retries.
func (c fitCandidates) variants(def model.Limits) []model.Limits {
	var out []model.Limits
	if !def.Rules.Retry.On {
		for _, rt := range values(def.ReadTimeout, 0, onTick(c.times, def.Rules.Read.Tick)) {
			for _, dl := range values(def.Deadline, 0, c.times) {
				for _, ct := range values(def.ConnectTimeout, 0, c.connects) {
					for _, r := range values(def.Retries, 0, c.retries) {
						l := def
						l.ReadTimeout, l.Deadline, l.ConnectTimeout, l.Retries = rt, dl, ct, r
						out = append(out, l)
					}
				}
			}
		}
		return out
	}
	var timeouts []model.Limits
	for _, v := range values(0, 0, onTick(c.times, def.Rules.Read.Tick)) {
		for _, set := range []func(*model.Limits){
			func(l *model.Limits) { l.ReadTimeout = v },
			func(l *model.Limits) { l.Deadline = v },
			func(l *model.Limits) { l.AttemptTimeout = v },
		} {
			l := def
			if v != 0 {
				set(&l)
			}
			if !slices.ContainsFunc(timeouts, func(o model.Limits) bool { return o == l }) {
				timeouts = append(timeouts, l)
			}
		}
	}
	methods := values(def.Rules.Retry.Methods, def.Rules.Retry.Methods, []rules.Methods{rules.MethodsAll, rules.MethodsSafeOrPut})
	for _, t := range timeouts {
		for _, ct := range values(def.ConnectTimeout, 0, c.connects) {
			for _, r := range values(def.Retries, 0, c.retries) {
				for _, m := range methods {
					l := t
					l.ConnectTimeout, l.Retries = ct, r
					l.Rules.Retry.Methods = m
					out = append(out, l)
				}
			}
		}
	}
	return out
}

// onTick adds to times the roundest limit a timer wheel (rules.Tick) fires at each of them.
func onTick(times []time.Duration, tick rules.Tick) []time.Duration {
	if tick.Every <= 0 {
		return times
	}
	out := slices.Clone(times)
	for _, t := range times {
		n := (t + tick.Every/2) / tick.Every
		for _, grain := range []time.Duration{time.Second, 500 * time.Millisecond, 100 * time.Millisecond, fitGrain} {
			v := ((n-1)*tick.Every/grain + 1) * grain
			if v <= n*tick.Every {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// fitKey is how a candidate ranks (fitClosest).
type fitKey struct {
	trickle        int // 1 when the trickle row agrees or is not judged
	agree, judged  int
	telling        int
	timeErr        float64 // the expected times' distance from the measured, ms
	parts, profile int     // fewer limits changed; the earlier profile (negated)
}

// better reports whether k ranks above o.
func (k fitKey) better(o fitKey) bool {
	switch {
	case k.trickle != o.trickle:
		return k.trickle > o.trickle
	case k.agree != o.agree:
		return k.agree > o.agree
	case k.telling != o.telling:
		return k.telling > o.telling
	case math.Abs(k.timeErr-o.timeErr) > 1:
		return k.timeErr < o.timeErr
	case k.parts != o.parts:
		return k.parts < o.parts
	}
	return k.profile > o.profile
}

// ties reports whether k and o rank alike but for the limits changed and the profiles' order.
func (k fitKey) ties(o fitKey) bool {
	return k.trickle == o.trickle && k.agree == o.agree && k.telling == o.telling && math.Abs(k.timeErr-o.timeErr) <= 1
}

// tellingRows are the rows that tell limits and retry rules apart.
var tellingRows = []string{"silent", "reserve", "pooled-close", "pooled-close-post", "pooled-reset", "pooled-reset-post",
	"status-503-0", "status-408", "tls-old-version", "nxdomain"}

// rank judges the rows under e and ranks it.
func rank(obs []observation, ms []measures, e Expect, tol time.Duration) fitKey {
	k := fitKey{trickle: 1, parts: strings.Count(e.Label, ",")}
	if !strings.HasSuffix(e.Label, "at its defaults") {
		k.parts++
	}
	for i, r := range rows(obs, ms, e) {
		if r.Skipped != "" {
			continue
		}
		r.Judge(tol)
		k.judged++
		name := obs[i].sc.Name
		if r.Pass {
			k.agree++
			if slices.Contains(tellingRows, name) {
				k.telling++
			}
		} else if name == "trickle" {
			k.trickle = 0
		}
		if r.ExpectedMs != nil && r.MeasuredMs != nil {
			k.timeErr += math.Abs(*r.ExpectedMs - *r.MeasuredMs)
		}
	}
	return k
}

// values lists def, zero and the candidates, each once.
func values[T comparable](def, zero T, candidates []T) []T {
	out := []T{def}
	for _, v := range append([]T{zero}, candidates...) {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// fitGrain and connectGrain round a measured time taken for a limit (clients are configured
// in round figures); the coarser wins a tie.
const fitGrain = 50 * time.Millisecond

// A connect timeout, which the server cannot see, takes only the coarser.
const connectGrain = 100 * time.Millisecond

func roundTo(d, grain time.Duration) time.Duration {
	return time.Duration(math.Round(float64(d)/float64(grain))) * grain
}
