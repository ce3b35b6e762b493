package rules

import (
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/param"
)

// A retry layer sends a whole call again after a failure or a status; its attempts are the
// model's business attempts, each with the library's own re-sends (Resend) inside.

// More classes of failed attempts, for the retry layers (rules.Class).
const (
	// ClassCertificate is a certificate the client refused.
	ClassCertificate Class = iota + ClassTLS + 1
	// ClassAttemptTimeout is the per-attempt timeout (model.Limits.AttemptTimeout).
	ClassAttemptTimeout
	// ClassRedirects is a library's refusal to follow more redirects.
	ClassRedirects
)

// Statuses is a set of HTTP statuses, 0 to 639.
type Statuses [10]uint64

// StatusSet returns the set of the codes and ranges ("500-599"); a code out of 0..639 panics
// (a rule's table is wrong).
func StatusSet(codes ...int) Statuses {
	var s Statuses
	for _, c := range codes {
		s = s.With(c)
	}
	return s
}

// StatusRange returns the set of lo to hi, both included.
func StatusRange(lo, hi int) Statuses {
	var s Statuses
	for c := lo; c <= hi; c++ {
		s = s.With(c)
	}
	return s
}

// With returns s and c.
func (s Statuses) With(c int) Statuses {
	if c < 0 || c >= 640 {
		panic("rules: status out of range: " + strconv.Itoa(c))
	}
	s[c/64] |= 1 << (c % 64)
	return s
}

// Without returns s less c.
func (s Statuses) Without(c int) Statuses {
	if c >= 0 && c < 640 {
		s[c/64] &^= 1 << (c % 64)
	}
	return s
}

// Union returns s and o.
func (s Statuses) Union(o Statuses) Statuses {
	for i := range s {
		s[i] |= o[i]
	}
	return s
}

// Has reports whether c is in s.
func (s Statuses) Has(c int) bool { return c >= 0 && c < 640 && s[c/64]&(1<<(c%64)) != 0 }

// String lists the set's codes, runs as ranges: "429, 500, 502-599".
func (s Statuses) String() string {
	var parts []string
	for c := 0; c < 640; c++ {
		if !s.Has(c) {
			continue
		}
		e := c
		for e+1 < 640 && s.Has(e+1) {
			e++
		}
		if e > c {
			parts = append(parts, strconv.Itoa(c)+"-"+strconv.Itoa(e))
		} else {
			parts = append(parts, strconv.Itoa(c))
		}
		c = e
	}
	if parts == nil {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ParseStatuses reads a list as String writes it; "none" is empty, "!501" takes a code out.
func ParseStatuses(v string) (Statuses, error) {
	var s Statuses
	v = strings.TrimSpace(v)
	if v == "" || v == "none" {
		return s, nil
	}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		not := strings.HasPrefix(part, "!")
		part = strings.TrimPrefix(part, "!")
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 100 || b > 599 || a > b {
			return s, &statusError{part}
		}
		for c := a; c <= b; c++ {
			if not {
				s = s.Without(c)
			} else {
				s = s.With(c)
			}
		}
	}
	return s, nil
}

type statusError struct{ part string }

func (e *statusError) Error() string {
	return strconv.Quote(param.Cut(e.part)) + " is not a status or a range of them (100 to 599, \"500-599\", \"!501\")"
}

// RetryAfter is how a layer reads the Retry-After header of a status it retries.
type RetryAfter struct {
	// Read says the header replaces the back-off for Statuses (else it is ignored).
	Read     bool
	Statuses Statuses
	// ZeroAbsent: "Retry-After: 0" is no header (got, urllib3).
	ZeroAbsent bool
	// Required: a status is retried only with the header (urllib3's is_retry).
	Required bool
	// DropLongerThanAttempt: one longer than the per-attempt timeout ends the retries (got).
	DropLongerThanAttempt bool
}

// MaxWait is the longest wait the rules return, beyond any range a call takes: a longer
// back-off or Retry-After saturates here, so sums of a call's waits stay in time.Duration.
const MaxWait = time.Duration(1 << 62)

// secondsWait is sec seconds, saturated at MaxWait.
func secondsWait(sec int64) time.Duration {
	if sec > int64(MaxWait/time.Second) {
		return MaxWait
	}
	return time.Duration(sec) * time.Second
}

// Backoff is how a layer's wait grows: retry n waits min(max, base × Mult^(n-1)), jittered.
type Backoff struct {
	// Mult is the growth per retry; 0 and 1 keep the wait constant.
	Mult int
	// FirstImmediate: the first retry does not wait (urllib3's get_backoff_time).
	FirstImmediate bool
	// JitterDown is the percentage a wait may fall below its value; AtLeastBase keeps it at or
	// above the base (resty).
	JitterDown  int
	AtLeastBase bool
	// Noise is at most this much added (got: retry.noise, 100 ms).
	Noise time.Duration
}

// Wait is the shortest and longest wait before retry n (1-based); max 0 is none.
func (b Backoff) Wait(n int, base, maxWait time.Duration) (lo, hi time.Duration) {
	if n <= 0 || (n == 1 && b.FirstImmediate) {
		return 0, 0
	}
	v := base
	for i := 1; i < n && b.Mult > 1; i++ {
		if maxWait > 0 && v >= maxWait {
			break
		}
		if v > MaxWait/time.Duration(b.Mult) {
			v = MaxWait
			break
		}
		v *= time.Duration(b.Mult)
	}
	if maxWait > 0 && v > maxWait {
		v = maxWait
	}
	j := time.Duration(b.JitterDown) // v × j / 100, without overflow
	lo, hi = v-(v/100*j+v%100*j/100), v+b.Noise
	if b.AtLeastBase {
		lo, hi = max(lo, base), max(hi, base)
	}
	return lo, hi
}

// Jitter reports whether the waits are a band, not a figure.
func (b Backoff) Jitter() bool { return b.JitterDown > 0 || b.Noise > 0 }

// RetryLayer is a retry layer's rules: what it retries and how long it waits.
type RetryLayer struct {
	// On says the library has a layer; without it the model's retries are labrun's own.
	On bool
	// Errors are the failures retried, Methods the methods; UnsentAnyMethod retries a failure
	// before the request was sent whatever the method (urllib3).
	Errors          Classes
	Methods         Methods
	UnsentAnyMethod bool
	// BodyRetried: the layer reads the body within its attempt, and retries its failure.
	BodyRetried bool
	// NoEOF: a FIN where the answer or the rest of the body was due is not retried, a reset is.
	NoEOF bool
	// Statuses are retried, the last answer returned when the retries are spent.
	Statuses   Statuses
	RetryAfter RetryAfter
	Backoff    Backoff
	// Source cites where the rules are read.
	Source string
}

// LayerFailure is a failed attempt as a layer sees it.
type LayerFailure struct {
	Class  Class
	Sent   bool
	InBody bool
	// EOF: the server's FIN ended the attempt (ClassIO), not an RST.
	EOF    bool
	Method string
}

// Retries reports whether the layer sends the call again after f.
func (r RetryLayer) Retries(f LayerFailure) bool {
	switch {
	case !r.On:
		return false
	case f.InBody && !r.BodyRetried:
		return false
	case !r.Errors.Has(f.Class), f.EOF && r.NoEOF:
		return false
	case !f.Sent && r.UnsentAnyMethod:
		return true
	}
	return r.Methods.Has(f.Method, false)
}

// RetriesStatus reports whether the layer retries a status with Retry-After ra, and the wait the
// header asks for (ok false: the back-off applies).
func (r RetryLayer) RetriesStatus(method string, status int, ra string, attemptTimeout time.Duration) (retry bool, wait time.Duration, ok bool) {
	if !r.On || !r.Statuses.Has(status) || !r.Methods.Has(method, false) {
		return false, 0, false
	}
	sec, err := strconv.Atoi(strings.TrimSpace(ra))
	has := ra != "" && err == nil && sec >= 0
	if has && sec == 0 && r.RetryAfter.ZeroAbsent {
		has = false
	}
	if r.RetryAfter.Required && ra == "" {
		return false, 0, false
	}
	if !r.RetryAfter.Read || !r.RetryAfter.Statuses.Has(status) || !has {
		return true, 0, false
	}
	wait = secondsWait(int64(sec))
	if r.RetryAfter.DropLongerThanAttempt && attemptTimeout > 0 && wait > attemptTimeout {
		return false, 0, false
	}
	return true, wait, true
}

// Tick is a timer wheel (undici's lib/util/timers.js): a limit fires on a later tick.
type Tick struct {
	// Every is the wheel's period (undici: TICK_MS, 499 ms); 0 means exact timers.
	Every time.Duration
}

// Late returns when a limit d set at 0 fires at the latest (a lone timer restarts the wheel:
// ceil(d/Every) × Every) and at the earliest (a tick sooner).
func (t Tick) Late(d time.Duration) (lo, hi time.Duration) {
	if t.Every <= 0 || d <= 0 {
		return d, d
	}
	n := (d + t.Every - 1) / t.Every
	return (n - 1) * t.Every, n * t.Every
}
