package experiments

import "github.com/labrun/labrun/experiments/internal/lab"

// The client profiles' names, the values --client takes.
const (
	// ProfileHC5 is labrun's client with Apache HttpClient 5's semantics (the default).
	ProfileHC5 = lab.ProfileHC5
	// ProfileOkHttp is labrun's client with OkHttp 3.13's defaults and rules.
	ProfileOkHttp = lab.ProfileOkHttp
	// ProfileOkHttp314 is the okhttp profile with OkHttp 3.14's route rule.
	ProfileOkHttp314 = lab.ProfileOkHttp314
	// ProfileJDK is labrun's client with the JDK HttpClient's (java.net.http, JDK 17) rules.
	ProfileJDK = lab.ProfileJDK
	// ProfileURLConnection is labrun's client with HttpURLConnection's (JDK 17) rules.
	ProfileURLConnection = lab.ProfileURLConnection
	// ProfileHC4 is labrun's client with Apache HttpClient 4.5's defaults and rules.
	ProfileHC4 = lab.ProfileHC4
	// ProfileGo is Go's own net/http client.
	ProfileGo = lab.ProfileGo
	// ProfileOkHttp32 is the okhttp profile with OkHttp 3.0 to 3.2's recovery of a read
	// timeout after the request was sent (fixed in 3.3.0).
	ProfileOkHttp32 = lab.ProfileOkHttp32
)

// Profile is a client profile (--client): a library's defaults and rules, and how to build
// labrun's client that follows them, with the model's limits for the same rules.
type Profile = lab.Profile

// Profiles returns the client profiles, the default (ProfileHC5) first.
func Profiles() []Profile { return lab.Profiles() }

// ProfileNames lists the names --client takes.
func ProfileNames() []string { return lab.ProfileNames() }

// LookupProfile returns the profile called name, or an error that names the flag and lists
// the profiles.
func LookupProfile(name string) (Profile, error) { return lab.LookupProfile(name) }
