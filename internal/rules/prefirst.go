package rules

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// NextAddress is what a library does after a failure on one address of a host.
type NextAddress string

// The decisions.
const (
	// NextInConnect: the same connect tries the next address.
	NextInConnect NextAddress = "next address, same connect"
	// NextRoute: a new attempt on the next route (OkHttp).
	NextRoute NextAddress = "route retry"
	// RetryOnce: the call tries once more, from the lookup (the JDK HttpClient).
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
	// PerRead: the limit bounds each read of the step, not the step.
	PerRead bool
	// Late: the call learns the limit fired only when the step ends.
	Late bool
	// Times: the limit fires at Times its value (0 or 1: once), a timer re-armed by the library.
	Times int
	// BeforeConnect: the timer starts before the connect, so a step as long as it loses.
	BeforeConnect bool
}

// Bound is the limit that bounds one step, for some Timeouts.
type Bound struct {
	// Limit is its value; 0 means nothing but the call's deadline bounds the step.
	Limit         time.Duration
	Outcome       vocab.Outcome
	Name          string
	PerRead       bool
	Late          bool
	BeforeConnect bool
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
	if b.Times > 1 {
		v *= time.Duration(b.Times)
	}
	return Bound{Limit: v, Outcome: b.Outcome, Name: b.Name, PerRead: b.PerRead, Late: b.Late, BeforeConnect: b.BeforeConnect}
}

// PreFirst is one library's rules before the first byte.
type PreFirst struct {
	// Handshake bounds a slow TLS handshake, Lookup a slow name lookup.
	Handshake, Lookup BoundRule
	// HandshakeSource and LookupSource cite where the rule is read.
	HandshakeSource, LookupSource string
	// What follows each failure.
	AfterCertificate, AfterProtocol, AfterHandshakeTimeout, AfterDNSError NextAddress
	// RetrySource cites the retry rule.
	RetrySource string
}

// deadlineOnly is a step only the call's deadline bounds.
func deadlineOnly(name string) BoundRule { return BoundRule{Name: name} }
