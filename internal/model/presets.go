package model

import (
	"github.com/labrun/labrun/internal/rules"
)

// HC4ValidateAfterInactivity is Apache HttpClient 4.5's default stale-check period.
const HC4ValidateAfterInactivity = rules.HC4ValidateAfterInactivity

// Preset is a library's entry (internal/rules) in the model's terms.
type Preset struct {
	Name, Client string
	// Limits are the defaults with the library's rules at its own settings.
	Limits Limits
	rules.Card
}

// Presets returns every registered library's defaults, in the order labrun defaults lists them.
func Presets() []Preset {
	var out []Preset
	for _, p := range rules.Presets() {
		out = append(out, PresetOf(p))
	}
	return out
}

// PresetOf is p in the model's terms.
func PresetOf(p rules.Preset) Preset {
	return Preset{Name: p.Name, Client: p.Client, Card: p.Card, Limits: LimitsOf(p.Limits, p.Default())}
}

// LimitsOf returns a library's default limits d with its rules r.
func LimitsOf(d rules.Limits, r rules.Rules) Limits {
	return Limits{Rules: r, LeaseTimeout: d.Lease, ConnectTimeout: d.Connect, ReadTimeout: d.Read, Deadline: d.Deadline,
		TLSHandshakeTimeout: d.TLSHandshake, AttemptTimeout: d.AttemptTimeout,
		Retries: d.Retries, Backoff: d.Backoff, BackoffMax: d.BackoffMax,
		ValidateAfterInactivity: d.Validate, EvictIdle: d.KeepAlive}
}

// PresetNamed returns the preset called name.
func PresetNamed(name string) (Preset, bool) {
	p, ok := rules.Lookup(name)
	if !ok || name == "" {
		return Preset{}, false
	}
	return PresetOf(p), true
}
