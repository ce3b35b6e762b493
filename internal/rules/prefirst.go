package rules

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// Before the first byte: a connect is a name lookup, a TCP handshake and, for https, a TLS
// handshake. Each library bounds the lookup and the handshake with a limit of its own, not
// always the one a user set, and decides by its own rule whether a failure there moves on to
// the host's next address.

// NextAddress is what a library does after a failure on one address of a host.
type NextAddress string

// The decisions.
const (
	// NextInConnect: the same connect tries the next address (HttpClient 5's connection
	// operator), one attempt.
	NextInConnect NextAddress = "next address, same connect"
	// NextRoute: a new attempt on the next route (OkHttp's recover(), with
	// retryOnConnectionFailure).
	NextRoute NextAddress = "route retry"
	// RetryOnce: the call tries once more, from the lookup (the JDK HttpClient's retry of a
	// ConnectException, MultiExchange.retriedOnce).
	RetryOnce NextAddress = "one new attempt"
	// NoNext: the call fails.
	NoNext NextAddress = "none"
)

// Limit names which of the user's limits bounds a step.
type Limit int

// The limits.
const (
	// LimitNone: nothing but the call's deadline.
	LimitNone Limit = iota
	// LimitTLSHandshake: the library's handshake timeout.
	LimitTLSHandshake
	// LimitRead: the read timeout.
	LimitRead
	// LimitConnect: the connect timeout.
	LimitConnect
	// LimitShorterConnectRead: the shorter of the connect and the read timeout that are set.
	LimitShorterConnectRead
	// LimitTLSHandshakeElseConnect: the handshake timeout, else the connect timeout.
	LimitTLSHandshakeElseConnect
)

// Timeouts are the user's limits a Bound is taken from.
type Timeouts struct {
	Connect, Read, TLSHandshake time.Duration
}

// BoundRule is which limit bounds a step, and how.
type BoundRule struct {
	Limit Limit
	// Outcome is what the call ends with when it fires.
	Outcome vocab.Outcome
	// Name names the library's setting (or "none").
	Name string
	// PerRead says that the limit bounds each read of the step (a socket timeout, restarted by
	// every byte) rather than the step as a whole (a deadline).
	PerRead bool
	// Late says that the limit fires on time but the call learns of it only when the step
	// ends: it then fails with Outcome.
	Late bool
}

// Bound is the limit that bounds one step, for some Timeouts.
type Bound struct {
	// Limit is its value; 0 means nothing but the call's deadline bounds the step.
	Limit   time.Duration
	Outcome vocab.Outcome
	Name    string
	PerRead bool
	Late    bool
}

// Of returns the bound for t.
func (b BoundRule) Of(t Timeouts) Bound {
	var v time.Duration
	switch b.Limit {
	case LimitTLSHandshake:
		v = t.TLSHandshake
	case LimitRead:
		v = t.Read
	case LimitConnect:
		v = t.Connect
	case LimitShorterConnectRead:
		v = t.Connect
		if v == 0 || (t.Read != 0 && t.Read < v) {
			v = t.Read
		}
	case LimitTLSHandshakeElseConnect:
		v = t.TLSHandshake
		if v == 0 {
			v = t.Connect
		}
	}
	return Bound{Limit: v, Outcome: b.Outcome, Name: b.Name, PerRead: b.PerRead, Late: b.Late}
}

// PreFirst is one library's rules before the first byte.
type PreFirst struct {
	// Handshake bounds a TLS handshake the server never answers or answers slowly, Lookup a
	// slow name lookup.
	Handshake, Lookup BoundRule
	// HandshakeSource and LookupSource cite where the rule is read.
	HandshakeSource, LookupSource string
	// AfterCertificate, AfterProtocol, AfterHandshakeTimeout and AfterDNSError say what
	// follows a certificate failure, a protocol failure, a handshake ended by its limit, and a
	// failed lookup.
	AfterCertificate, AfterProtocol, AfterHandshakeTimeout, AfterDNSError NextAddress
	// RetrySource cites the retry rule.
	RetrySource string
}

// deadlineOnly is a step that nothing but the call's deadline bounds, the library's setting
// (or its absence) named.
func deadlineOnly(name string) BoundRule { return BoundRule{Name: name} }
