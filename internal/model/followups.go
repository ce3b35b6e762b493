package model

import (
	"strconv"

	"github.com/labrun/labrun/internal/vocab"
)

// Response is what a server answers to every request of a call, for FollowUps.
type Response struct {
	Status int
	// RetryAfter is the Retry-After header, "" when absent.
	RetryAfter string
	// Redirect says the response redirects (to the same resource: a loop when Status is 3xx).
	Redirect bool
}

// Follow-up limits of the libraries.
const (
	// OkHttpMaxFollowUps is OkHttp's MAX_FOLLOW_UPS: the 21st follow-up throws
	// "Too many follow-up requests: 21".
	OkHttpMaxFollowUps = 20
	// GoMaxRedirects is net/http's default CheckRedirect limit: "stopped after 10 redirects".
	GoMaxRedirects = 10
)

// FollowUps predicts how often a client sends a request when the server answers every one of
// them with r, under profile p's follow-up rules (OkHttp 3.x's RetryAndFollowUpInterceptor.followUpRequest; net/http's
// Client for Go; labrun's HttpClient 5 client follows nothing). It returns the number of
// requests the server receives, the call's outcome (OK with the last status, or Failed when
// the library gives up with an error) and that last status.
func FollowUps(p Profile, retryOnConnectionFailure bool, r Response) (requests int, outcome vocab.Outcome, status int) {
	switch p {
	case OkHttp:
		return okHttpFollowUps(retryOnConnectionFailure, r)
	case Go:
		if r.Redirect && isRedirect(r.Status) {
			// The first request and 9 redirects; the 10th redirect is refused.
			return GoMaxRedirects, vocab.Failed, r.Status
		}
		return 1, vocab.OK, r.Status
	default:
		return 1, vocab.OK, r.Status
	}
}

func okHttpFollowUps(retryOnConnectionFailure bool, r Response) (int, vocab.Outcome, int) {
	requests := 1
	var prior int // the previous response's status
	for {
		follow := false
		switch r.Status {
		case 300, 301, 302, 303, 307, 308:
			follow = r.Redirect
		case 408:
			// Repeat once, even a non-idempotent request, unless recovery is off, the previous
			// response was a 408 too, or Retry-After asks for a delay.
			follow = retryOnConnectionFailure && prior != 408 && retryAfterSeconds(r.RetryAfter) <= 0
		case 503:
			// Repeat once, only when Retry-After: 0 says to.
			follow = prior != 503 && r.RetryAfter != "" && retryAfterSeconds(r.RetryAfter) == 0
		}
		if !follow {
			return requests, vocab.OK, r.Status
		}
		if requests > OkHttpMaxFollowUps {
			return requests, vocab.Failed, r.Status // "Too many follow-up requests: 21"
		}
		requests++
		prior = r.Status
	}
}

// retryAfterSeconds reads a Retry-After in seconds, as OkHttp does: no header is 0, a value
// that is not all digits (an HTTP date, "-1", "+0") counts as a long delay (max int).
func retryAfterSeconds(v string) int {
	if v == "" {
		return 0
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return int(^uint(0) >> 1)
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return n
}

func isRedirect(status int) bool {
	switch status {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
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
