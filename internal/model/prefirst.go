package model

import (
	"errors"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Before the first byte: a name lookup, a TCP handshake and, for https, a TLS handshake. Each
// library bounds them with limits of its own and decides whether a failure moves on to the next
// address (rules.PreFirst); PredictPreFirst applies them.

// PreFirstFault is what goes wrong before the first byte.
type PreFirstFault string

const (
	// HandshakeStall is a server that accepts and never answers the ClientHello.
	HandshakeStall PreFirstFault = "handshake-stall"
	// BadCertificate is a handshake that fails at once on the server's certificate.
	BadCertificate PreFirstFault = "bad-certificate"
	// ProtocolFailure is a handshake that fails at once on the version or cipher (Java: an
	// SSLHandshakeException without a CertificateException, which OkHttp recovers on the next
	// route).
	ProtocolFailure PreFirstFault = "protocol-failure"
	// SlowHandshake is a server whose flight's first PreFirst.Bytes bytes come one per
	// PreFirst.ByteGap, then the rest: a per-read limit longer than the gap never fires.
	SlowHandshake PreFirstFault = "slow-handshake"
	// SlowLookup is a resolver that answers after PreFirst.LookupDelay.
	SlowLookup PreFirstFault = "slow-lookup"
	// NXDomain is a name that does not exist; ServFail a resolver that fails.
	NXDomain PreFirstFault = "nxdomain"
	ServFail PreFirstFault = "servfail"
)

// PreFirstFaults lists the faults.
func PreFirstFaults() []PreFirstFault {
	return []PreFirstFault{HandshakeStall, SlowHandshake, BadCertificate, ProtocolFailure, SlowLookup, NXDomain, ServFail}
}

// PreFirst is a call whose trouble comes before the first byte; the server answers at once
// otherwise.
type PreFirst struct {
	Fault PreFirstFault
	// Routes is how many addresses the name has (0 means 1); Bad is how many of the first have
	// the fault (0 means all).
	Routes, Bad int
	LookupDelay time.Duration
	// ByteGap and Bytes are SlowHandshake's trickle.
	ByteGap time.Duration
	Bytes   int
}

func (f PreFirst) trickle() time.Duration { return time.Duration(f.Bytes) * f.ByteGap }

// NextAddress is what a library does after a failure on one address of a host.
type NextAddress = rules.NextAddress

const (
	NextInConnect = rules.NextInConnect
	NextRoute     = rules.NextRoute
	RetryOnce     = rules.RetryOnce
	NoNext        = rules.NoNext
)

// Bound is the limit that bounds one step, for some Limits.
type Bound = rules.Bound

// PreFirstRule is one library's rules before the first byte (rules.PreFirst), read against the
// model's Limits.
type PreFirstRule struct{ rules.PreFirst }

// Handshake is the limit that bounds a stalled or slow TLS handshake under l.
func (r PreFirstRule) Handshake(l Limits) Bound { return r.PreFirst.Handshake.Of(timeouts(l)) }

// Lookup is the limit that bounds a slow name lookup, under l.
func (r PreFirstRule) Lookup(l Limits) Bound { return r.PreFirst.Lookup.Of(timeouts(l)) }

func timeouts(l Limits) rules.Timeouts {
	return rules.Timeouts{Connect: l.ConnectTimeout, Read: l.ReadTimeout, TLSHandshake: l.TLSHandshakeTimeout}
}

// PreFirstRuleOf returns the rules before the first byte of l's library.
func PreFirstRuleOf(l Limits) PreFirstRule { return PreFirstRule{rulesOf(l).PreFirst} }

// PredictPreFirst predicts a call with fault f under l: outcome, end (Forever when nothing
// bounds a stall), attempts, and Connects (every address reached). Business retries are not
// modelled; a retry layer is (layer.go).
func PredictPreFirst(f PreFirst, l Limits) (Prediction, error) {
	l.Rules = rulesOf(l)
	if !l.Rules.Retry.On {
		p, err := preFirstOnce(f, l)
		p.TotalMax = p.Total
		return p, err
	}
	p, err := preFirstLayered(f, l, false, preFirstOnce)
	if err != nil {
		return p, err
	}
	p.TotalMax = p.Total
	if l.Rules.Retry.Backoff.Jitter() {
		hi, _ := preFirstLayered(f, l, true, preFirstOnce)
		p.TotalMax = hi.Total
	}
	return p, nil
}

// preFirstOnce is one attempt, the library's own retries included.
func preFirstOnce(f PreFirst, l Limits) (Prediction, error) {
	r := PreFirstRuleOf(l)
	routes := max(f.Routes, 1)
	bad := f.Bad
	if bad <= 0 || bad > routes {
		bad = routes
	}
	var p Prediction
	end := func(start, t time.Duration, o vocab.Outcome, conn bool) Prediction {
		p.Attempts = append(p.Attempts, Attempt{Start: start, End: t, Outcome: o, NewConnection: conn,
			Sent: o == vocab.OK, Phases: []Span{{Phase: vocab.PhaseConnect, Start: start, End: t}}})
		p.Outcome, p.Total = o, t
		if o == vocab.OK {
			p.Executions = 1
		}
		return p
	}
	// wait is a step of length d (Forever: unanswered) bounded by b from t, with longest
	// silence gap: when it ends and how.
	wait := func(t, d, gap time.Duration, b Bound) (time.Duration, vocab.Outcome) {
		at, o := t+d, vocab.OK
		if d == Forever {
			at, o = Forever, vocab.Hang
		}
		fires := b.Limit > 0 && b.Limit < d
		if b.PerRead {
			fires = b.Limit > 0 && b.Limit < gap
		}
		switch {
		case fires && b.Late:
			o = b.Outcome
		case fires:
			at, o = t+b.Limit, b.Outcome
		}
		if l.Deadline > 0 && l.Deadline <= at {
			at, o = l.Deadline, vocab.Deadline
		}
		return at, o
	}

	var t time.Duration
	switch f.Fault {
	case NXDomain, ServFail:
		if r.AfterDNSError == RetryOnce {
			p.Attempts = append(p.Attempts, Attempt{Outcome: vocab.DNSError, Phases: []Span{{Phase: vocab.PhaseConnect}}})
		}
		return end(0, 0, vocab.DNSError, false), nil
	case SlowLookup:
		at, o := wait(0, f.LookupDelay, f.LookupDelay, r.Lookup(l))
		if o != vocab.OK {
			return end(0, at, o, false), nil
		}
		// Go's dialer budget covers the lookup; what is left bounds the connect.
		p.Connects = 1
		return end(0, at, vocab.OK, true), nil
	case SlowHandshake:
		if f.ByteGap <= 0 || f.Bytes <= 0 {
			return Prediction{}, fmt.Errorf("model: a slow handshake needs a gap and a byte count, got %v and %d", f.ByteGap, f.Bytes)
		}
	case HandshakeStall, BadCertificate, ProtocolFailure:
	default:
		return Prediction{}, fmt.Errorf("model: unknown fault before the first byte %q", f.Fault)
	}

	start := time.Duration(0)
	for i := range routes {
		p.Connects++
		var o vocab.Outcome
		next := r.AfterCertificate
		if i >= bad {
			return end(start, t, vocab.OK, true), nil
		}
		switch f.Fault {
		case HandshakeStall:
			t, o = wait(t, Forever, Forever, r.Handshake(l))
			next = r.AfterHandshakeTimeout
		case SlowHandshake:
			if t, o = wait(t, f.trickle(), f.ByteGap, r.Handshake(l)); o == vocab.OK {
				return end(start, t, vocab.OK, true), nil
			}
			next = r.AfterHandshakeTimeout
		case ProtocolFailure:
			o, next = vocab.TLSError, r.AfterProtocol
		default:
			o = vocab.TLSError
		}
		last := i == routes-1
		switch {
		case o == vocab.Hang || o == vocab.Deadline || last || next == NoNext ||
			(next == NextRoute && !l.Rules.Resend.On):
			return end(start, t, o, true), nil
		case next == NextRoute:
			p.Attempts = append(p.Attempts, Attempt{Start: start, End: t, Outcome: o, NewConnection: true,
				Phases: []Span{{Phase: vocab.PhaseConnect, Start: start, End: t}}})
			start = t
		}
	}
	return Prediction{}, errors.New("model: PredictPreFirst: no route ended the call")
}
