package fakesrv

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The parsers of the request parameters; each error names its parameter, for a 400's body.

func parseDuration(q url.Values, key string) (time.Duration, error) {
	s := q.Get(key)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		// Say what the parameter wants, in the caller's words, not Go's.
		return 0, fmt.Errorf("%s must be a duration such as 250ms, 2s or 1m30s, got %q", key, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s must not be negative, got %v", key, d)
	}
	return d, nil
}

// parseCount reads the whole number q[key] in [lo, hi]; absent means 0; digits only.
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

// parseBool reads q[key] as 1, true, 0 or false; absent means false.
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

// pathNumber reads the number after prefix in path and checks it lies in [lo, hi].
func pathNumber(path, prefix, what string, lo, hi int) (int, error) {
	s, ok := strings.CutPrefix(path, prefix)
	if !ok {
		s = ""
	}
	// ParseUint: a sign or a second path segment is not a number here.
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n < uint64(lo) || n > uint64(hi) {
		return 0, fmt.Errorf("%s must be a whole number between %d and %d, got %q", what, lo, hi, s)
	}
	return int(n), nil
}

// checkHeaderValue checks that v is non-empty printable ASCII without edge spaces.
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

const maxBudgetMs = math.MaxInt64 / int64(time.Millisecond)

// parseBudget reads X-Deadline-Ms, whole milliseconds; a budget beyond a Duration saturates
// ("no deadline to speak of").
func parseBudget(v string) (time.Duration, error) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, fmt.Errorf("want whole milliseconds, got %q", v)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms > maxBudgetMs {
		return math.MaxInt64, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}
