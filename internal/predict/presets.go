package predict

import (
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// PresetNames lists the names --defaults takes.
func PresetNames() []string {
	var names []string
	for _, p := range model.Presets() {
		names = append(names, p.Name)
	}
	return names
}

// PresetsHelp describes every preset in a few lines, for labrun predict --help.
func PresetsHelp() string {
	var b strings.Builder
	for _, p := range model.Presets() {
		fmt.Fprintf(&b, "   %-14s %s: lease %s; connect %s; read %s; pool %s; whole call %s\n",
			p.Name, p.Client, p.Lease, p.Connect, p.Read, p.Pool, p.Call)
	}
	return b.String()
}

// Defaults returns the client libraries' defaults, for labrun defaults.
func Defaults() []results.ClientDefaults {
	var out []results.ClientDefaults
	for _, p := range model.Presets() {
		d := results.ClientDefaults{
			Name: p.Name, Client: p.Client, Lease: p.Lease, Connect: p.Connect,
			Read: p.Read, Pool: p.Pool, Call: p.Call, Source: p.Source, Reuse: p.Reuse, Resend: p.Resend,
		}
		preFirstDefaults(p.Name, p.Limits, &d)
		out = append(out, d)
	}
	return out
}

// reuse are a library's default rules for pooled connections that die, as --defaults sets
// them. model.Preset.Limits leaves them at the model's zero values (a closed connection is
// never used, nothing is re-sent, no evictor) and describes them in Reuse and Resend; the
// rules that depend only on the library (OkHttp's health check and recover(), net/http's
// background read and replay) come with its rules (rulesOfPreset).
type reuse struct {
	validate time.Duration // HttpClient 5's validateAfterInactivity
	retries  string        // HttpClient 5's retry strategy, as --hc5-retries takes it
	evict    time.Duration // idle connections closed after this long
}

// presetReuse returns the rules of the preset called name; a preset whose library's rules
// labrun has not read keeps the zero values.
func presetReuse(name string) reuse {
	switch name {
	case "hc5":
		// PoolingHttpClientConnectionManager's 2 s; DefaultHttpRequestRetryStrategy unless
		// disableAutomaticRetries(); no evictor unless evictIdleConnections.
		return reuse{validate: model.HC5ValidateAfterInactivity, retries: string(vocab.HC5RetriesDefault)}
	case "spring-restclient":
		// Spring Boot builds HttpClient 5 with HttpClientBuilder.create(): its retry strategy
		// and its manager's 2 s stay.
		return reuse{validate: model.HC5ValidateAfterInactivity, retries: string(vocab.HC5RetriesDefault)}
	case "hc4":
		return reuse{validate: model.HC4ValidateAfterInactivity} // its retry handler comes with model.HC4
	case "okhttp", "okhttp@3.14", "okhttp@3.2":
		return reuse{evict: 5 * time.Minute} // ConnectionPool's keepAliveDuration
	case "jdk":
		return reuse{evict: 1200 * time.Second} // JDK 17 ConnectionPool.KEEP_ALIVE
	case "jdk@25":
		return reuse{evict: 30 * time.Second} // JDK 25 HttpClientImpl.DEFAULT_KEEP_ALIVE_TIMEOUT
	case "urlconnection":
		return reuse{evict: 5 * time.Second} // KeepAliveCache, without a Keep-Alive header
	case "go":
		return reuse{evict: 90 * time.Second} // DefaultTransport's IdleConnTimeout
	}
	return reuse{}
}

// hc5Preset reports whether the preset called name ("" for none) runs on HttpClient 5's rules:
// its own, Spring's RestClient's, and Reactor Netty's, whose own rules labrun has not read.
func hc5Preset(name string) bool {
	switch name {
	case "", "hc5", "spring-restclient", "netty":
		return true
	}
	return false
}

// jdkPreset reports whether the preset called name is the JDK HttpClient's.
func jdkPreset(name string) bool { return name == "jdk" || name == "jdk@25" }

// rulesOfPreset returns the rules of the preset called name ("" for none: HttpClient 5's),
// with the settings of p's flags: HttpClient 5's automatic retries (--hc5-retries), the JDK's
// enableAllMethodRetry (--resend-any-method), HttpURLConnection's retryPost
// (--no-resend-post).
func rulesOfPreset(name string, p *Predictor) rules.Rules {
	switch {
	case hc5Preset(name):
		return rules.HC5(rules.HC5Settings{AutomaticRetries: p.HC5Retries == string(vocab.HC5RetriesDefault)})
	case jdkPreset(name):
		return rules.JDK(rules.JDKSettings{EnableAllMethodRetry: p.ResendAnyMethod})
	case name == "urlconnection":
		return rules.URLConnection(rules.URLConnectionSettings{NoRetryPost: p.NoResendPost})
	}
	pre, _ := model.PresetNamed(name)
	return pre.Limits.Rules
}
