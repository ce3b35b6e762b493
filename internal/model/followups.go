package model

import (
	"strconv"
	"strings"

	"github.com/labrun/labrun/internal/rules"
)

// The follow-ups are each library's rules.FollowUps (internal/rules); these names keep the
// model's callers in its terms.

// Location is where a redirect sends the client, for an Answer.
type Location = rules.Location

// The places an Answer's Location names.
const (
	NoLocation = rules.NoLocation
	SameURL    = rules.SameURL
	NewURL     = rules.NewURL
	PlainHTTP  = rules.PlainHTTP
)

// Response is a server's answer (probe's scenarios name it so).
type Response = Answer

// Answer is a server's answer to one request of a call, for FollowUps.
type Answer = rules.Answer

// FollowCall is one request and the server's answers, for FollowUps.
type FollowCall = rules.FollowCall

// FollowRules are a client's follow-up settings.
type FollowRules = rules.FollowRules

// Sent is one request the server receives.
type Sent = rules.Sent

// FollowResult is what FollowUps predicts for a call.
type FollowResult = rules.FollowResult

// The libraries' follow-up limits.
const (
	OkHttpMaxFollowUps        = rules.OkHttpMaxFollowUps
	GoMaxRedirects            = rules.GoMaxRedirects
	HC5MaxRedirects           = rules.HC5MaxRedirects
	URLConnectionMaxRedirects = rules.URLConnectionMaxRedirects
)

// FollowUps predicts the requests a client sends for c, and how the call ends, under the
// library's follow-up rule (r.FollowUps) with settings s.
func FollowUps(r rules.Rules, s FollowRules, c FollowCall) FollowResult {
	return rulesOf(Limits{Rules: r}).FollowUps.Follow(s, c)
}

// DescribeSent says which requests a server receives, runs of the same one counted:
// "POST+body ×2, GET"; "nothing sent" for none.
func DescribeSent(sent []Sent) string {
	var parts []string
	for i := 0; i < len(sent); {
		j := i
		for j < len(sent) && sent[j] == sent[i] {
			j++
		}
		p := sent[i].Method
		if sent[i].Body {
			p += "+body"
		}
		if j-i > 1 {
			p += " ×" + strconv.Itoa(j-i)
		}
		parts = append(parts, p)
		i = j
	}
	if parts == nil {
		return "nothing sent"
	}
	return strings.Join(parts, ", ")
}

// GoReplays reports whether net/http silently sends a request again on a new connection when
// the reused connection it was sent on fails before any response byte (the server closed it
// while it sat idle): when the request is replayable, that is its body can be rewound and it
// is GET, HEAD, OPTIONS or TRACE or carries an Idempotency-Key or X-Idempotency-Key header
// (transport.go: shouldRetryRequest, request.go: isReplayable).
func GoReplays(method string, idempotencyKey, rewindableBody, reused bool) bool {
	if !reused || !rewindableBody {
		return false
	}
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	return idempotencyKey
}

// GoDialsPerWave predicts how many new connections net/http dials for each of waves waves of
// concurrency simultaneous calls to one host, when the Transport keeps at most maxIdle idle
// connections per host (MaxIdleConnsPerHost; net/http's default is 2): the first wave dials
// them all, every later wave finds min(maxIdle, concurrency) pooled and dials the rest.
func GoDialsPerWave(concurrency, maxIdle, waves int) []int {
	out := make([]int, waves)
	for w := range out {
		if w == 0 {
			out[w] = concurrency
		} else {
			out[w] = concurrency - min(maxIdle, concurrency)
		}
	}
	return out
}
