package fakesrv

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The parsers of the request parameters. Each returns an error that names the parameter,
// which the server sends back as a 400's one-line body. FuzzXxx in params_test.go fuzz them.

// parseDuration reads the non-negative duration q[key]; absent means 0.
func parseDuration(q url.Values, key string) (time.Duration, error) {
	s := q.Get(key)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		// Say what the parameter wants, not what the parser found: "time: invalid
		// duration" is Go's vocabulary, not the caller's.
		return 0, fmt.Errorf("%s must be a duration such as 250ms, 2s or 1m30s, got %q", key, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s must not be negative, got %v", key, d)
	}
	return d, nil
}

// parseCount reads the whole number q[key], which must lie in [lo, hi]; absent means 0. Only
// digits are a number here (no sign, no spaces), as in every other count of the server.
func parseCount(q url.Values, key string, lo, hi int) (int, error) {
	s := q.Get(key)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil || strings.TrimLeft(s, "0123456789") != "" || n < uint64(lo) || n > uint64(hi) {
		return 0, fmt.Errorf("%s must be a whole number from %d to %d, got %q", key, lo, hi, s)
	}
	return int(n), nil
}

// parseBool reads the boolean q[key]; absent means false. It accepts only the four words a
// person would type in a URL, rather than strconv.ParseBool's longer list, so that the
// accepted set stays small enough to document.
func parseBool(q url.Values, key string) (bool, error) {
	switch s := q.Get(key); s {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, fmt.Errorf("%s: unknown boolean %q, want 1, true, 0 or false", key, s)
	}
}

// pathNumber reads the whole number that follows prefix in path ("" when path lacks the
// prefix, as "/status" does) and checks that it lies in [lo, hi]. what names the parameter
// in the error, as "status: CODE".
func pathNumber(path, prefix, what string, lo, hi int) (int, error) {
	s, ok := strings.CutPrefix(path, prefix)
	if !ok {
		s = ""
	}
	// ParseUint, not Atoi: a sign ("+5") or a second path segment is not a number here.
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n < uint64(lo) || n > uint64(hi) {
		return 0, fmt.Errorf("%s must be a whole number between %d and %d, got %q", what, lo, hi, s)
	}
	return int(n), nil
}

// checkHeaderValue checks that v can be sent verbatim as a header value: non-empty printable
// ASCII, without leading or trailing spaces (net/http would trim them).
func checkHeaderValue(key, v string) error {
	if v == "" {
		return fmt.Errorf("%s must not be empty", key)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' || c > '~' {
			return fmt.Errorf("%s must be printable ASCII, got %q", key, v)
		}
	}
	if strings.TrimSpace(v) != v {
		return fmt.Errorf("%s must not start or end with a space, got %q", key, v)
	}
	return nil
}

// maxBudgetMs is the largest budget in milliseconds that a time.Duration holds.
const maxBudgetMs = math.MaxInt64 / int64(time.Millisecond)

// parseBudget reads an X-Deadline-Ms value: the caller's remaining budget in whole
// milliseconds, digits only. A budget beyond what a time.Duration holds (about 292 years)
// saturates at the largest Duration rather than wrapping around: a caller that sends a huge
// value means "no deadline to speak of".
func parseBudget(v string) (time.Duration, error) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, fmt.Errorf("want whole milliseconds, got %q", v)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms > maxBudgetMs {
		// Only digits, so the one possible error is a value out of range.
		return math.MaxInt64, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}
