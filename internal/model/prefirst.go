package model

import (
	"errors"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Before the first byte: phase 2 (connect) is a name lookup, a TCP handshake and, for https,
// a TLS handshake. Each library bounds the lookup and the handshake with a limit of its own,
// not always the one a user set, and decides by its own rule whether a failure there moves on
// to the host's next address. Each library's rules.PreFirst holds those rules, read from its
// source; PredictPreFirst applies them.

// PreFirstFault is what goes wrong before the first byte.
type PreFirstFault string

// The faults.
const (
	// HandshakeStall is a server that accepts the connection and never answers the
	// ClientHello: the handshake waits for a byte until a limit ends it, or forever.
	HandshakeStall PreFirstFault = "handshake-stall"
	// BadCertificate is a handshake that fails on the server's certificate at once: an
	// unknown CA, a missing intermediate, expired, or for another host name (Java: an
	// SSLHandshakeException caused by a CertificateException, or an
	// SSLPeerUnverifiedException after the handshake).
	BadCertificate PreFirstFault = "bad-certificate"
	// ProtocolFailure is a handshake that fails at once on the protocol: a TLS version or a
	// cipher the client refuses (Java: an SSLHandshakeException that no CertificateException
	// caused, which OkHttp recovers on the next route).
	ProtocolFailure PreFirstFault = "protocol-failure"
	// SlowHandshake is a server that answers the ClientHello but writes the first
	// PreFirst.Bytes bytes of its handshake flight one at a time, each after PreFirst.ByteGap,
	// then the rest at once: a limit per read longer than the gap never fires on it, a
	// deadline shorter than Bytes × ByteGap does.
	SlowHandshake PreFirstFault = "slow-handshake"
	// SlowLookup is a resolver that answers after PreFirst.LookupDelay.
	SlowLookup PreFirstFault = "slow-lookup"
	// NXDomain is a name that does not exist; ServFail a resolver that fails. Both are an
	// UnknownHostException in Java, a *net.DNSError in Go.
	NXDomain PreFirstFault = "nxdomain"
	ServFail PreFirstFault = "servfail"
)

// PreFirstFaults lists the faults.
func PreFirstFaults() []PreFirstFault {
	return []PreFirstFault{HandshakeStall, SlowHandshake, BadCertificate, ProtocolFailure, SlowLookup, NXDomain, ServFail}
}

// PreFirst is a call whose trouble comes before the first byte. The server answers at once
// when the lookup and the handshake get through.
type PreFirst struct {
	Fault PreFirstFault
	// Routes is how many addresses the name resolves to (0 means 1); Bad is how many of the
	// first ones have the fault (HandshakeStall, BadCertificate, ProtocolFailure; 0 means all): the
	// others complete the handshake at once.
	Routes, Bad int
	// LookupDelay is the time the resolver takes to answer (SlowLookup).
	LookupDelay time.Duration
	// ByteGap and Bytes are SlowHandshake's trickle: Bytes bytes, each after ByteGap.
	ByteGap time.Duration
	Bytes   int
}

// trickle is how long SlowHandshake's server takes to send its flight.
func (f PreFirst) trickle() time.Duration { return time.Duration(f.Bytes) * f.ByteGap }

// NextAddress is what a library does after a failure on one address of a host.
type NextAddress = rules.NextAddress

// The decisions.
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

// Handshake is the limit that bounds a TLS handshake the server never answers or answers
// slowly, under l.
func (r PreFirstRule) Handshake(l Limits) Bound { return r.PreFirst.Handshake.Of(timeouts(l)) }

// Lookup is the limit that bounds a slow name lookup, under l.
func (r PreFirstRule) Lookup(l Limits) Bound { return r.PreFirst.Lookup.Of(timeouts(l)) }

func timeouts(l Limits) rules.Timeouts {
	return rules.Timeouts{Connect: l.ConnectTimeout, Read: l.ReadTimeout, TLSHandshake: l.TLSHandshakeTimeout}
}

// PreFirstRuleOf returns the rules before the first byte of l's library.
func PreFirstRuleOf(l Limits) PreFirstRule { return PreFirstRule{rulesOf(l).PreFirst} }

// PredictPreFirst predicts a call with fault f under l: its outcome, its end (Forever when
// nothing bounds a stalled handshake), its attempts, and Connects, the TCP connections it
// opened (every address it reached). A lookup and a handshake that get through take no time;
// the call's deadline (Limits.Deadline) ends any wait it outlasts. Business retries
// (Limits.Retries) are not modelled here: a row before the first byte sets none; a library's
// retry layer (rules.RetryLayer) is, with its timeout per attempt (layer.go). TotalMax is the
// call's end with the layer's waits at their longest.
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

// preFirstOnce is one attempt of PredictPreFirst, the library's own retries included.
func preFirstOnce(f PreFirst, l Limits) (Prediction, error) {
	r := PreFirstRuleOf(l)
	routes := max(f.Routes, 1)
	bad := f.Bad
	if bad <= 0 || bad > routes {
		bad = routes
	}
	var p Prediction
	// end closes the call at t with outcome o, one attempt from start.
	end := func(start, t time.Duration, o vocab.Outcome, conn bool) Prediction {
		p.Attempts = append(p.Attempts, Attempt{Start: start, End: t, Outcome: o, NewConnection: conn,
			Sent: o == vocab.OK, Phases: []Span{{Phase: vocab.PhaseConnect, Start: start, End: t}}})
		p.Outcome, p.Total = o, t
		if o == vocab.OK {
			p.Executions = 1
		}
		return p
	}
	// wait is a step of length d (Forever: unanswered) bounded by b, from t, whose longest
	// silence is gap (d itself when nothing arrives before its end): when it ends and how
	// (OK: it got through).
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
		// Go's dialer budget covers the lookup: what is left of it bounds the connect,
		// which is instant here.
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
		// NextInConnect: the same attempt goes on to the next address.
	}
	return Prediction{}, errors.New("model: PredictPreFirst: no route ended the call") // the last route always does
}
