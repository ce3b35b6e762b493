package predict

import (
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/rules"
)

// Layer are the settings of a retry layer (rules.RetryLayer) that labrun predict and probe
// --expect take beside --retries and --backoff: the timeout per attempt, how the back-off
// grows, and what is retried. Zero values keep the preset's.
type Layer struct {
	// AttemptTimeout is the layer's timeout per attempt (model.Limits.AttemptTimeout).
	AttemptTimeout time.Duration
	// BackoffMax bounds the growing back-off; BackoffMult is its growth per retry.
	BackoffMax  time.Duration
	BackoffMult int
	// Jitter is the percentage a wait may fall below its value; Noise the most added to it.
	Jitter int
	Noise  time.Duration
	// RetryStatuses are the statuses retried ("429, 500-599, !501"; "none").
	RetryStatuses string
	// RetryAfterPolicy is how a retried status's Retry-After is taken (--retry-after-as): exact, zero-absent
	// (0 is no header: the back-off applies) or ignore.
	RetryAfterPolicy string
	// RetryMethods are the methods retried: all, idempotent (GET, HEAD, PUT, DELETE, OPTIONS,
	// TRACE) or get-head.
	RetryMethods string
}

// LayerFlags are the flags of Layer, by name: labrun probe takes them beside --expect.
var LayerFlags = []string{"attempt-timeout", "backoff-max", "backoff-mult", "jitter", "noise",
	"retry-statuses", "retry-after-as", "retry-methods"}

// The choices of --retry-after-as and --retry-methods.
var (
	retryAfterPolicies = []string{"exact", "zero-absent", "ignore"}
	retryMethods       = map[string]rules.Methods{"all": rules.MethodsAll, "idempotent": rules.MethodsSafeOrPut, "get-head": rules.MethodsGetHead}
)

// params lists Layer's parameters.
func (y *Layer) params(max time.Duration) []param.Param {
	return []param.Param{
		{Name: "attempt-timeout", Usage: "a retry layer's limit per attempt, body included", Duration: &y.AttemptTimeout, MaxDuration: max},
		{Name: "backoff-max", Usage: "a retry layer's longest back-off", Duration: &y.BackoffMax, MaxDuration: max},
		{Name: "backoff-mult", Usage: "a retry layer's back-off growth per retry", Int: &y.BackoffMult, Min: 0, Max: 10},
		{Name: "jitter", Usage: "a wait may fall this many percent below it", Int: &y.Jitter, Min: 0, Max: 100},
		{Name: "noise", Usage: "a retry layer adds up to this to each wait", Duration: &y.Noise, MaxDuration: max},
		{Name: "retry-statuses", Usage: "statuses retried: \"429,500-599,!501\" or none", String: &y.RetryStatuses},
		{Name: "retry-after-as", Usage: "Retry-After taken: exact, zero-absent or ignore", String: &y.RetryAfterPolicy,
			Choices: retryAfterPolicies},
		{Name: "retry-methods", Usage: "methods retried: all, idempotent or get-head", String: &y.RetryMethods,
			Choices: []string{"all", "idempotent", "get-head"}},
	}
}

// check reports a setting that makes no sense.
func (y *Layer) check() error {
	if _, err := rules.ParseStatuses(y.RetryStatuses); err != nil {
		return fmt.Errorf("--retry-statuses: %w", err)
	}
	return nil
}

// given lists the layer's flags set to a value other than zero.
func (y *Layer) given() []string {
	var out []string
	for _, p := range y.params(0) {
		switch p.Value() {
		case "", "0", "0s":
		default:
			out = append(out, p.Name)
		}
	}
	return out
}

// apply returns r with the layer's settings, and l with its limits.
func (y *Layer) apply(r rules.Rules, l *model.Limits) rules.Rules {
	if y.AttemptTimeout > 0 {
		l.AttemptTimeout = y.AttemptTimeout
	}
	if y.BackoffMax > 0 {
		l.BackoffMax = y.BackoffMax
	}
	b := &r.Retry.Backoff
	if y.BackoffMult > 0 {
		b.Mult = y.BackoffMult
	}
	if y.Jitter > 0 {
		b.JitterDown = y.Jitter
	}
	if y.Noise > 0 {
		b.Noise = y.Noise
	}
	if y.RetryStatuses != "" {
		r.Retry.Statuses, _ = rules.ParseStatuses(y.RetryStatuses) // checked
	}
	switch y.RetryAfterPolicy {
	case "exact":
		r.Retry.RetryAfter.Read, r.Retry.RetryAfter.ZeroAbsent = true, false
		if r.Retry.RetryAfter.Statuses == (rules.Statuses{}) {
			r.Retry.RetryAfter.Statuses = r.Retry.Statuses
		}
	case "zero-absent":
		r.Retry.RetryAfter.Read, r.Retry.RetryAfter.ZeroAbsent = true, true
		if r.Retry.RetryAfter.Statuses == (rules.Statuses{}) {
			r.Retry.RetryAfter.Statuses = r.Retry.Statuses
		}
	case "ignore":
		r.Retry.RetryAfter = rules.RetryAfter{}
	}
	if m, ok := retryMethods[y.RetryMethods]; ok {
		r.Retry.Methods = m
	}
	return r
}

// RetryMethodsWord is --retry-methods' word for a set of methods ("" for one it has none for).
func RetryMethodsWord(m rules.Methods) string {
	for w, v := range retryMethods {
		if v == m {
			return w
		}
	}
	return ""
}

// needsLayer reports a layer flag given to a client without a retry layer (preset: the flag
// and the client, "--defaults go").
func (y *Layer) needsLayer(preset string, r rules.Rules) error {
	if r.Retry.On {
		return nil
	}
	if g := y.given(); len(g) > 0 {
		return fmt.Errorf("--%s is a retry layer's: %s has none (%s)", g[0], preset, strings.Join(layerPresets(), ", ")+" have one")
	}
	return nil
}

// layerPresets lists the presets with a retry layer.
func layerPresets() []string {
	var out []string
	for _, p := range model.Presets() {
		if p.Limits.Rules.Retry.On {
			out = append(out, p.Name)
		}
	}
	return out
}
