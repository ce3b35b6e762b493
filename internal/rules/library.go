package rules

import (
	"cmp"
	"slices"
	"time"
)

// Preset is a library's entry under a name --defaults, --expect and, with a Profile, --client
// take: registered once by the library's file, it is what every other package derives from.
type Preset struct {
	Name   string
	Client string
	// Rank orders the listings, FitRank the fit's candidates (a tie goes to the lower).
	Rank, FitRank int
	Rules         func(s Settings) Rules
	Settings      Settings // the library's own, which --defaults starts from
	Flags         []Flag   // the setting flags it reads
	Limits
	Card Card
	// FollowUps says what follows a response; "" when not read (predict --status refuses).
	FollowUps      string
	PreFirstUnread bool
	// HandshakeBy says what bounds the handshake when it has no setting ("": it has one).
	HandshakeBy string
	Profile     *Profile // nil: labrun cannot run it
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
	AutomaticRetries           bool // HttpClient 5's, --hc5-retries
	AllMethodRetry             bool // -Djdk.httpclient.enableAllMethodRetry
	NoRetryPost                bool // -Dsun.net.http.retryPost=false
	NoRetryOnConnectionFailure bool // OkHttp's retryOnConnectionFailure(false)
}

// Limits are a library's default limits; zero is none.
type Limits struct {
	Lease, Connect, Read, Write, Deadline, TLSHandshake, AttemptTimeout time.Duration
	PerRoute, Total                                                     int
	KeepAlive, Validate                                                 time.Duration
	Retries                                                             int // a retry layer's
	Backoff, BackoffMax                                                 time.Duration
}

// Card is the library's defaults as labrun defaults prints them.
type Card struct {
	Lease, Connect, Read, Pool, Call, Reuse, Resend, Source string
}

// Profile is how labrun's experiments run a library (--client).
type Profile struct {
	Description string
	Rank        int
	NetHTTP     bool // runs net/http itself, not labrun's client
	// Bare starts from labrun's settings: no stale check, retries only when asked.
	Bare               bool
	PropagatesDeadline bool
}

var registry []Preset

// Register adds a library's presets; its file calls it once, from init.
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
