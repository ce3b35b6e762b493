package predict

import (
	"fmt"
	"strings"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// PresetNames lists the names --defaults takes.
func PresetNames() []string { return rules.Names(rules.Presets()) }

// Defaults returns the client libraries' defaults, for labrun defaults.
func Defaults() []results.ClientDefaults {
	var out []results.ClientDefaults
	for _, p := range model.Presets() {
		client := p.Client
		if p.Here != "" {
			client += " · here: " + p.Here
		}
		d := results.ClientDefaults{
			Name: p.Name, Client: client, Lease: p.Lease, Connect: p.Connect,
			Read: p.Read, Pool: p.Pool, Call: p.Call, Source: p.Source, Reuse: p.Reuse, Resend: p.Resend,
		}
		preFirstDefaults(p.Name, p.Limits, &d)
		out = append(out, d)
	}
	return out
}

// preset returns the entry called name ("" for none: HttpClient 5's rules, no limit).
func preset(name string) rules.Preset {
	p, _ := rules.Lookup(name) // Apply refuses an unknown name first
	return p
}

// settings are the library settings p's flags give.
func (p *Predictor) settings() rules.Settings {
	return rules.Settings{AutomaticRetries: p.HC5Retries == string(vocab.HC5RetriesDefault),
		AllMethodRetry: p.ResendAnyMethod, NoRetryPost: p.NoResendPost}
}

// rulesOfPreset returns the rules of the preset called name with the settings of p's flags.
func rulesOfPreset(name string, p *Predictor) rules.Rules { return preset(name).Rules(p.settings()) }

// readers lists the presets that read flag f.
func readers(f rules.Flag) string {
	var out []string
	for _, pre := range rules.Presets() {
		if pre.Reads(f) {
			out = append(out, pre.Name)
		}
	}
	return strings.Join(out, ", ")
}

// checkSettings refuses a setting flag the preset's library does not read.
func (p *Predictor) checkSettings(isSet func(string) bool) error {
	pre := preset(p.Defaults)
	if isSet(string(rules.FlagHC5Retries)) && !pre.Reads(rules.FlagHC5Retries) {
		return fmt.Errorf("--hc5-retries is HttpClient 5's; %s %s follows %s's own rules", p.preset(), p.Defaults, pre.Client)
	}
	for _, f := range []struct {
		flag rules.Flag
		set  bool
		what string
	}{
		{rules.FlagNoResendPost, p.NoResendPost, "HttpURLConnection's sun.net.http.retryPost"},
		{rules.FlagResendAnyMethod, p.ResendAnyMethod, "the JDK HttpClient's jdk.httpclient.enableAllMethodRetry"},
	} {
		if f.set && !pre.Reads(f.flag) {
			return fmt.Errorf("--%s is %s: it needs %s %s", f.flag, f.what, p.preset(), readers(f.flag))
		}
	}
	return nil
}
