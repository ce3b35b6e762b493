package model

import (
	"slices"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// A retry layer (rules.RetryLayer) on what the pool's simulation does not play: statuses and
// faults before the first byte.

// LayeredFollow is what a client with a retry layer sends for a call answered by statuses.
type LayeredFollow struct {
	FollowResult
	Tries []FollowTry
	// Waits: total time between tries, shortest and longest.
	Waits, WaitsMax time.Duration
}

// FollowTry is one attempt of a retry layer.
type FollowTry struct {
	// Start and StartMax: waits at their shortest and longest.
	Start, StartMax time.Duration
	Sent            int
	// Repeat: the library's own status retry (rules.Resend.StatusAgain) sent it, not the layer.
	Repeat bool
}

// FollowUpsLayered predicts c under l's library and retry layer: the library's follow-ups, sent
// again while the layer retries the last status or error, up to l.Retries times.
func FollowUpsLayered(l Limits, s FollowRules, c FollowCall) LayeredFollow {
	r := rulesOf(l)
	var out LayeredFollow
	all := c.Answers
	repeats, repeat := 0, false
	for n := 0; ; n++ {
		if k := len(out.Sent); len(all) > 0 {
			c.Answers = all[min(k, len(all)-1):]
		}
		res := r.FollowUps.Follow(s, c)
		out.Sent = append(out.Sent, res.Sent...)
		out.Outcome, out.Status, out.Err = res.Outcome, res.Status, res.Err
		out.Tries = append(out.Tries, FollowTry{Start: out.Waits, StartMax: out.WaitsMax, Sent: len(res.Sent), Repeat: repeat})
		if !repeat {
			repeats = 0
		}
		if res.Outcome == vocab.OK {
			// noDates: the model reads no HTTP date in Retry-After.
			if d, again := r.Resend.StatusAgain(res.Status, lastRetryAfter(all, len(out.Sent)), !(c.Body && c.OneShot), l.ReadTimeout, repeats, noDates); again {
				repeats, repeat, n = repeats+1, true, n-1
				out.Waits, out.WaitsMax = Later(out.Waits, d), Later(out.WaitsMax, d)
				continue
			}
		}
		repeat = false
		if !r.Retry.On || n >= l.Retries {
			return out
		}
		lo, hi := r.Retry.Backoff.Wait(n+1, l.Backoff, l.BackoffMax)
		switch {
		case res.Outcome == vocab.OK:
			retry, wait, ok := r.Retry.RetriesStatus(method(Downstream{Method: c.Method}), res.Status, lastRetryAfter(all, len(out.Sent)), l.AttemptTimeout)
			if !retry {
				return out
			}
			if ok {
				lo, hi = wait, wait
			}
		case !r.Retry.Retries(rules.LayerFailure{Class: rules.ClassRedirects, Sent: true, Method: method(Downstream{Method: c.Method})}):
			return out
		}
		out.Waits, out.WaitsMax = Later(out.Waits, lo), Later(out.WaitsMax, hi)
	}
}

// noDates is a now before which every HTTP date lies.
var noDates = time.Unix(1<<40, 0)

// lastRetryAfter is the Retry-After of the answer to the sent-th request.
func lastRetryAfter(all []Answer, sent int) string {
	if len(all) == 0 {
		return ""
	}
	return all[min(sent-1, len(all)-1)].RetryAfter
}

// preFirstLayered plays l's retry layer over PredictPreFirst (waits longest with high). With
// rules.Connect.DetachedDial (net/http) a cut dial goes on and pools its connection; a later
// attempt takes the first that comes (net/lookup.go lookupGroup).
func preFirstLayered(f PreFirst, l Limits, high bool, once func(PreFirst, Limits) (Prediction, error)) (Prediction, error) {
	layer := l.Rules.Retry
	var p Prediction
	start := time.Duration(0)
	var pending []time.Duration // when abandoned dials pool their connections
	var looked []lateDial       // a slow lookup's dials: their connections come at its answer
	for n := 0; ; n++ {
		la := l
		la.Deadline = 0
		if l.Deadline > 0 {
			la.Deadline = l.Deadline - start
		}
		if at := l.AttemptTimeout; at > 0 && (la.Deadline == 0 || at < la.Deadline) {
			la.Deadline = at
		}
		var a Prediction
		if len(pending) > 0 {
			first := slices.Min(pending)
			a = detachedAttempt(f, la.Deadline, start, &pending)
			if f.Fault == SlowLookup && a.Connects > 0 {
				a.Connects, a.Attempts[0].NewConnection = 0, false
				looked = append(looked, lateDial{first, len(p.Attempts)})
			}
		} else {
			var err error
			if a, err = once(f, la); err != nil {
				return a, err
			}
		}
		for _, at := range a.Attempts {
			at.Start, at.End = at.Start+start, shift(at.End, start)
			for i := range at.Phases {
				at.Phases[i].Start, at.Phases[i].End = at.Phases[i].Start+start, shift(at.Phases[i].End, start)
			}
			p.Attempts = append(p.Attempts, at)
		}
		p.Connects += a.Connects
		p.Executions += a.Executions
		p.Outcome, p.Total = a.Outcome, shift(a.Total, start)
		cut := a.Outcome == vocab.Deadline && (l.Deadline == 0 || p.Total < l.Deadline)
		if cut && l.Rules.Connect.DetachedDial && len(pending) == 0 {
			switch f.Fault {
			case SlowLookup:
				pending = append(pending, start+f.LookupDelay)
				looked = append(looked, lateDial{start + f.LookupDelay, len(p.Attempts) - 1})
			case SlowHandshake:
				pending = append(pending, start+f.trickle())
			}
		}
		switch {
		case a.Outcome == vocab.OK || a.Outcome == vocab.Hang || (a.Outcome == vocab.Deadline && !cut):
			return lookedUp(p, looked), nil
		case n >= l.Retries || !layer.Retries(rules.LayerFailure{Class: preFirstClass(f, a.Outcome, cut), Method: "GET"}):
			return lookedUp(p, looked), nil
		}
		lo, hi := layer.Backoff.Wait(n+1, l.Backoff, l.BackoffMax)
		if high {
			lo = hi
		}
		start = Later(p.Total, lo)
		if l.Deadline > 0 && start >= l.Deadline {
			p.Outcome, p.Total = vocab.Deadline, l.Deadline
			return lookedUp(p, looked), nil
		}
	}
}

// lateDial is attempt by's dial, whose connection comes at at.
type lateDial struct {
	at time.Duration
	by int
}

// lookedUp counts the connections of the dials whose lookup answers while the call is still
// running: the caller's process ends with its call.
func lookedUp(p Prediction, dials []lateDial) Prediction {
	for _, d := range dials {
		if d.at <= p.Total {
			p.Connects++
			p.Attempts[d.by].NewConnection = true
		}
	}
	return p
}

// detachedAttempt takes the first connection pooled by pending, or dials one more.
func detachedAttempt(f PreFirst, deadline, start time.Duration, pending *[]time.Duration) Prediction {
	first := slices.Min(*pending)
	var a Prediction
	// At a tie the attempt dials too: the cut dial still has its connect or last flight to go.
	if first >= start {
		own := first
		if f.Fault == SlowHandshake {
			own = start + f.trickle()
		}
		*pending = append(*pending, own)
		first, a.Connects = min(first, own), 1
	}
	at := Attempt{NewConnection: a.Connects > 0}
	got := max(first, start) - start
	if deadline > 0 && got >= deadline {
		at.End, at.Outcome = deadline, vocab.Deadline
	} else {
		at.End, at.Outcome, at.Sent = got, vocab.OK, true
		a.Executions = 1
		i := slices.Index(*pending, first)
		*pending = slices.Delete(*pending, i, i+1)
	}
	at.Phases = []Span{{Phase: vocab.PhaseConnect, End: at.End}}
	a.Outcome, a.Total, a.Attempts = at.Outcome, at.End, []Attempt{at}
	return a
}

// preFirstClass is a failure as a retry layer sees it.
func preFirstClass(f PreFirst, o vocab.Outcome, cut bool) rules.Class {
	switch {
	case cut:
		return rules.ClassAttemptTimeout
	case o == vocab.DNSError:
		return rules.ClassUnknownHost
	case o == vocab.TLSError && f.Fault == BadCertificate:
		return rules.ClassCertificate
	case o == vocab.TLSError:
		return rules.ClassTLS
	case o == vocab.ConnectTimeout:
		return rules.ClassConnectTimeout
	case o == vocab.ReadTimeout:
		return rules.ClassSocketTimeout
	}
	return rules.ClassFatal
}
