package model

import (
	"errors"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Before the first byte: lookup, TCP and TLS handshakes, bounded and moved past per library
// (rules.PreFirst).

// PreFirstFault is a fault before the first byte.
type PreFirstFault string

const (
	// HandshakeStall: the ClientHello is never answered.
	HandshakeStall PreFirstFault = "handshake-stall"
	// BadCertificate fails the handshake at once.
	BadCertificate PreFirstFault = "bad-certificate"
	// ProtocolFailure fails it at once on version or cipher (Java: SSLHandshakeException without a
	// CertificateException, which OkHttp retries on the next route).
	ProtocolFailure PreFirstFault = "protocol-failure"
	// SlowHandshake trickles the first PreFirst.Bytes one per PreFirst.ByteGap.
	SlowHandshake PreFirstFault = "slow-handshake"
	// SlowLookup answers after PreFirst.LookupDelay.
	SlowLookup PreFirstFault = "slow-lookup"
	// NXDomain is a name that does not exist; ServFail a failing resolver.
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
	// Routes is the name's addresses (0 is 1); the first Bad have the fault (0: all).
	Routes, Bad int
	LookupDelay time.Duration
	ByteGap     time.Duration
	Bytes       int
}

func (f PreFirst) trickle() time.Duration { return time.Duration(f.Bytes) * f.ByteGap }

// NextAddress is a library's move after a failure on one address.
type NextAddress = rules.NextAddress

const (
	NextInConnect = rules.NextInConnect
	NextRoute     = rules.NextRoute
	RetryOnce     = rules.RetryOnce
	NoNext        = rules.NoNext
)

// Bound is the limit bounding one step.
type Bound = rules.Bound

// PreFirstRule is a library's rules.PreFirst, read against Limits.
type PreFirstRule struct{ rules.PreFirst }

// Handshake bounds a stalled or slow TLS handshake.
func (r PreFirstRule) Handshake(l Limits) Bound { return r.PreFirst.Handshake.Of(timeouts(l)) }

// Lookup bounds a slow name lookup.
func (r PreFirstRule) Lookup(l Limits) Bound { return r.PreFirst.Lookup.Of(timeouts(l)) }

func timeouts(l Limits) rules.Timeouts {
	return rules.Timeouts{Connect: l.connectTimer(), Read: l.ReadTimeout, TLSHandshake: l.TLSHandshakeTimeout}
}

// PreFirstRuleOf returns l's library's rule.
func PreFirstRuleOf(l Limits) PreFirstRule { return PreFirstRule{rulesOf(l).PreFirst} }

// PredictPreFirst predicts a call with fault f (Total Forever when nothing bounds a stall); a
// retry layer is played, business retries are not.
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

// preFirstOnce is one attempt, library retries included.
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
	// wait is a step of length d (Forever: no answer) with longest gap gap, bounded by b from t.
	wait := func(t, d, gap time.Duration, b Bound) (time.Duration, vocab.Outcome) {
		at, o := t+d, vocab.OK
		if d == Forever {
			at, o = Forever, vocab.Hang
		}
		fires := b.Limit > 0 && (b.Limit < d || b.BeforeConnect && b.Limit == d)
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
		// Go's dialer budget covers the lookup too.
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
