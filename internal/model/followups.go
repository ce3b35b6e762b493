package model

import (
	"strconv"
	"strings"

	"github.com/labrun/labrun/internal/rules"
)

// Each library's rules.FollowUps, in the model's terms.

// Location is a redirect's target.
type Location = rules.Location

const (
	NoLocation = rules.NoLocation
	SameURL    = rules.SameURL
	NewURL     = rules.NewURL
	PlainHTTP  = rules.PlainHTTP
)

// Response is a server's answer (probe's scenarios name it so).
type Response = Answer

// Answer is a server's answer to one request.
type Answer = rules.Answer

// FollowCall is a request and its answers.
type FollowCall = rules.FollowCall

// FollowRules are a client's follow-up settings.
type FollowRules = rules.FollowRules

// Sent is a request the server receives.
type Sent = rules.Sent

// FollowResult is FollowUps' prediction.
type FollowResult = rules.FollowResult

// Follow-up limits.
const (
	OkHttpMaxFollowUps        = rules.OkHttpMaxFollowUps
	GoMaxRedirects            = rules.GoMaxRedirects
	HC5MaxRedirects           = rules.HC5MaxRedirects
	URLConnectionMaxRedirects = rules.URLConnectionMaxRedirects
)

// FollowUps predicts the requests sent for c and the call's end under r.FollowUps.
func FollowUps(r rules.Rules, s FollowRules, c FollowCall) FollowResult {
	return rulesOf(Limits{Rules: r}).FollowUps.Follow(s, c)
}

// DescribeSent names the requests received, runs counted: "POST+body ×2, GET"; "nothing sent".
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

// GoReplays reports whether net/http re-sends on a new connection when a reused one fails before
// any response byte: a rewindable body and an idempotent method or Idempotency-Key
// (transport.go shouldRetryRequest).
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

// GoDialsPerWave is net/http's dials per wave: all in the first, then concurrency -
// min(maxIdle, concurrency).
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
