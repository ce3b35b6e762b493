// Package vocab holds the words that several of labrun's packages share: how an attempt ended
// (Outcome), where it was (Phase), the header that carries a caller's remaining budget, and the
// facts of a library that labrun's client and the model both apply (HttpClient 5's retry
// strategy: which methods it treats as idempotent, how often and how soon it retries). It is
// a leaf: it imports nothing of labrun, and client, model, fakesrv, results and report all
// import it, so an outcome is compared as a typed value, never as a string spelled twice.
package vocab

import (
	"strconv"
)

// Outcome is how an attempt or a call ended. The words are the ones labrun prints and writes
// into its JSON.
type Outcome string

// The outcomes.
const (
	OK             Outcome = "ok"
	LeaseTimeout   Outcome = "lease-timeout"
	ConnectTimeout Outcome = "connect-timeout"
	ReadTimeout    Outcome = "read-timeout"
	Deadline       Outcome = "deadline"
	// KernelTimeout is the operating system giving up: unanswered SYNs (host down) or
	// unacknowledged data (connection silently dropped), with no client limit set shorter.
	// Only the model predicts it; a measured call that the kernel ends is an Failed call
	// whose error says so.
	KernelTimeout Outcome = "kernel-timeout"
	// Hang means no limit ever fires: the call waits forever. The model predicts it; an
	// experiment that caps such a call reports it measured when its cap ended the call.
	Hang Outcome = "hang"
	// DNSError is a name lookup that failed before any connection: the name does not exist
	// (NXDOMAIN) or the resolver failed (SERVFAIL). Java: UnknownHostException.
	DNSError Outcome = "dns-error"
	// TLSError is a TLS handshake that failed on the server's certificate (an unknown CA, a
	// missing intermediate, expired, for another host) or on the protocol (a version or cipher
	// the client refuses). Java: SSLHandshakeException, SSLPeerUnverifiedException.
	TLSError Outcome = "tls-error"
	// Failed is a call that ended on an error that is not a client limit, such as a refused
	// connection or a library refusing to follow more redirects.
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

// DeadlineHeader is the request header that carries a caller's remaining budget in whole
// milliseconds (docs/experiments.md, the demo): labrun's client sends it with PropagateDeadline, and the
// fake server answers 503 at once, without executing, when the budget is shorter than its
// processing time.
const DeadlineHeader = "X-Deadline-Ms"

// HC5Retries names HttpClient 5's automatic retries (HttpRequestRetryExec with an
// HttpRequestRetryStrategy), for labrun's client and the model alike.
type HC5Retries string

// The retry strategies.
const (
	// HC5RetriesNone is HttpClientBuilder.disableAutomaticRetries(): nothing is ever re-sent.
	HC5RetriesNone HC5Retries = ""
	// HC5RetriesDefault is DefaultHttpRequestRetryStrategy(): one retry of an idempotent
	// request whose I/O exception is not in its list, at once; a 429 or 503 is repeated once
	// after Retry-After or 1 s.
	HC5RetriesDefault HC5Retries = "default"
)

// Plural counts a noun the way labrun's tables and notes do: "1 node", "3 nodes".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// EditDistance is the Levenshtein distance between a and b, in runes: how far a name typed is
// from a known one, for a "did you mean" (flags, commands, probe scenarios).
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
