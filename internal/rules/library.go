package rules

import (
	"cmp"
	"slices"
	"time"
)

// Preset is one library's defaults under the name labrun predict --defaults, probe --expect
// and, with a Profile, --client take. Each library's file registers its presets once
// (Register); the model's presets, labrun's client profiles, predict's flag checks, probe's fit
// candidates, labrun defaults and completion read the registry, never a name.
type Preset struct {
	Name   string
	Client string
	// Rank orders labrun defaults and --defaults' choices; FitRank orders the fit's candidates,
	// a tie going to the lower.
	Rank, FitRank int
	// Rules returns the library's rules with the user's settings s.
	Rules func(s Settings) Rules
	// Settings are the library's own default settings, which --defaults starts from.
	Settings Settings
	// Flags are the setting flags of labrun predict this library reads.
	Flags []Flag
	Limits
	Card Card
	// FollowUps says what follows a response; empty when labrun has not read it, which refuses
	// predict --status.
	FollowUps string
	// PreFirstUnread says labrun has not read its rules before the first byte.
	PreFirstUnread bool
	// HandshakeBy names what bounds its TLS handshake when it has no setting of its own (""
	// takes --handshake-timeout).
	HandshakeBy string
	// Profile is how labrun runs the library (--client); nil when it cannot.
	Profile *Profile
}

// Flag is a setting flag of labrun predict and probe --expect.
type Flag string

// The setting flags.
const (
	FlagHC5Retries      Flag = "hc5-retries"
	FlagResendAnyMethod Flag = "resend-any-method"
	FlagNoResendPost    Flag = "no-resend-post"
)

// Settings are the user's settings that change a library's rules; a library reads its own.
type Settings struct {
	// AutomaticRetries keeps HttpClient 5's DefaultHttpRequestRetryStrategy (--hc5-retries).
	AutomaticRetries bool
	// AllMethodRetry is the JDK HttpClient's -Djdk.httpclient.enableAllMethodRetry.
	AllMethodRetry bool
	// NoRetryPost is HttpURLConnection's -Dsun.net.http.retryPost=false.
	NoRetryPost bool
	// NoRetryOnConnectionFailure is OkHttp's retryOnConnectionFailure(false).
	NoRetryOnConnectionFailure bool
}

// Limits are a library's default limits; zero is none.
type Limits struct {
	Lease, Connect, Read, Write, Deadline, TLSHandshake, AttemptTimeout time.Duration
	// PerRoute and Total bound the pool (0: no limit).
	PerRoute, Total int
	// KeepAlive closes a connection idle this long.
	KeepAlive time.Duration
	// Validate is the stale check's period.
	Validate time.Duration
	// Retries, Backoff and BackoffMax are a retry layer's defaults.
	Retries             int
	Backoff, BackoffMax time.Duration
}

// Card is the library's defaults as labrun defaults prints them, each with its source.
type Card struct {
	Lease, Connect, Read, Pool, Call, Reuse, Resend, Source string
}

// Profile is how labrun's experiments run a library (--client).
type Profile struct {
	Description string
	Rank        int
	// NetHTTP runs Go's net/http itself rather than labrun's client.
	NetHTTP bool
	// Bare starts from labrun's own settings, not the library's: no stale check, automatic
	// retries only when asked (the configured client of the lab's story).
	Bare bool
	// PropagatesDeadline sends the remaining budget to the server when asked.
	PropagatesDeadline bool
}

var registry []Preset

// Register adds presets to the registry; a library's file calls it once, from init.
func Register(ps ...Preset) { registry = append(registry, ps...) }

// Presets returns every registered preset in Rank order.
func Presets() []Preset {
	out := slices.Clone(registry)
	slices.SortStableFunc(out, func(a, b Preset) int { return cmp.Compare(a.Rank, b.Rank) })
	return out
}

// FitOrder returns the presets in FitRank order.
func FitOrder() []Preset {
	out := slices.Clone(registry)
	slices.SortStableFunc(out, func(a, b Preset) int { return cmp.Compare(a.FitRank, b.FitRank) })
	return out
}

// Profiles returns the presets labrun can run, in their profiles' order.
func Profiles() []Preset {
	var out []Preset
	for _, p := range registry {
		if p.Profile != nil {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b Preset) int { return cmp.Compare(a.Profile.Rank, b.Profile.Rank) })
	return out
}

// Lookup returns the preset called name; "" is Bare, labrun's rules with no preset.
func Lookup(name string) (Preset, bool) {
	if name == "" {
		return bare, true
	}
	for _, p := range registry {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// Reads reports whether the preset reads flag f.
func (p Preset) Reads(f Flag) bool { return slices.Contains(p.Flags, f) }

// Default returns the preset's rules at its own settings.
func (p Preset) Default() Rules { return p.Rules(p.Settings) }

// Names lists the names of ps.
func Names(ps []Preset) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}
