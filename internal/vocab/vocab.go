// Package vocab holds the words several of labrun's packages share (Outcome, Phase, the
// deadline header), so that they compare typed values, never a string spelled twice. A
// library's facts live in internal/rules.
package vocab

import (
	"strconv"
)

// Outcome is how an attempt or a call ended, as labrun prints it.
type Outcome string

// The outcomes.
const (
	OK             Outcome = "ok"
	LeaseTimeout   Outcome = "lease-timeout"
	ConnectTimeout Outcome = "connect-timeout"
	ReadTimeout    Outcome = "read-timeout"
	Deadline       Outcome = "deadline"
	// KernelTimeout is the kernel giving up on SYNs or data; only the model predicts it.
	KernelTimeout Outcome = "kernel-timeout"
	// Hang means no limit ever fires.
	Hang Outcome = "hang"
	// DNSError is a failed name lookup (NXDOMAIN, SERVFAIL).
	DNSError Outcome = "dns-error"
	// TLSError is a handshake that failed on the certificate or the protocol.
	TLSError Outcome = "tls-error"
	// Failed is any other error: a refused connection, too many redirects.
	Failed Outcome = "error"
)

// Outcomes lists every outcome in the order tables sort them by: success first, then the
// limits in phase order, then the kernel, a hang and other errors.
func Outcomes() []Outcome {
	return []Outcome{OK, LeaseTimeout, ConnectTimeout, ReadTimeout, Deadline, KernelTimeout, Hang, DNSError, TLSError, Failed}
}

// Rank is o's position in Outcomes, len(Outcomes()) for a word that is not an outcome.
func (o Outcome) Rank() int {
	for i, x := range Outcomes() {
		if x == o {
			return i
		}
	}
	return len(Outcomes())
}

// Valid reports whether o is one of the outcomes.
func (o Outcome) Valid() bool { return o.Rank() < len(Outcomes()) }

// Timeout reports whether a limit ended the call: a client limit or the kernel's.
func (o Outcome) Timeout() bool {
	switch o {
	case LeaseTimeout, ConnectTimeout, ReadTimeout, Deadline, KernelTimeout:
		return true
	}
	return false
}

// Phase names a part of an attempt.
type Phase string

// The phases of an attempt, in order.
const (
	PhaseLease   Phase = "lease"
	PhaseConnect Phase = "connect"
	PhaseWait    Phase = "wait"
	PhaseBody    Phase = "body"
	// PhaseBackoff is the pause between attempts; only a deadline ends a call there.
	PhaseBackoff Phase = "backoff"
)

// Phases lists the phases of an attempt in order, the backoff last.
func Phases() []Phase { return []Phase{PhaseLease, PhaseConnect, PhaseWait, PhaseBody, PhaseBackoff} }

// DeadlineHeader carries a caller's remaining budget in whole milliseconds; the fake server
// answers 503 without executing when its work would outlast it.
const DeadlineHeader = "X-Deadline-Ms"

// HC5Retries is HttpClient 5's automatic-retries setting as --hc5-retries spells it.
type HC5Retries string

// The retry strategies.
const (
	// HC5RetriesNone is disableAutomaticRetries().
	HC5RetriesNone HC5Retries = ""
	// HC5RetriesDefault is DefaultHttpRequestRetryStrategy (rules.HC5).
	HC5RetriesDefault HC5Retries = "default"
)

// Plural counts a noun the way labrun's tables and notes do: "1 node", "3 nodes".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// EditDistance is the Levenshtein distance between a and b, in runes, for a "did you mean".
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}
