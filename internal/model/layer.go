package model

import (
	"slices"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// A retry layer (rules.RetryLayer) on the calls that are not played by the pool's simulation:
// a status the server answers and a fault before the first byte. The simulation (sim.go)
// plays the layer on the calls it plays itself.

// LayeredFollow is what a client with a retry layer sends for a call answered by statuses:
// the library's follow-ups (FollowUps) of each of the layer's attempts, in order.
type LayeredFollow struct {
	FollowResult
	// Tries are the layer's attempts, in order.
	Tries []FollowTry
	// Waits are the shortest and the longest time the layer waited between them, in all.
	Waits, WaitsMax time.Duration
}

// FollowTry is one attempt of a retry layer on a call answered by statuses.
type FollowTry struct {
	// Start and StartMax are when it starts, with the waits before it at their shortest and
	// longest (the answers take no time).
	Start, StartMax time.Duration
	// Sent is how many requests it sends.
	Sent int
	// Repeat says the library's retry strategy sent it (rules.Resend.StatusAgain), not the
	// layer.
	Repeat bool
}

// FollowUpsLayered predicts c under l's library and its retry layer: each of the layer's
// attempts is the library's follow-ups with s; the layer sends the call again when the last
// answer is a status it retries (rules.RetryLayer.RetriesStatus, Retry-After read by its
// policy) or the follow-ups failed on an error it retries (too many redirects:
// rules.ClassRedirects), up to l.Retries times. The server's answers (c.Answers) go on from
// one attempt to the next. Without a layer it is FollowUps.
func FollowUpsLayered(l Limits, s FollowRules, c FollowCall) LayeredFollow {
	r := rulesOf(l)
	var out LayeredFollow
	all := c.Answers
	repeats, repeat := 0, false
	for n := 0; ; n++ {
		// The server's answers go on where the last attempt left them.
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
				out.Waits += d
				out.WaitsMax += d
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
		out.Waits += lo
		out.WaitsMax += hi
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

// preFirstLayered plays l's retry layer over the attempts PredictPreFirst predicts one at a
// time (once): each attempt is bounded by the layer's timeout per attempt as a deadline
// (l.AttemptTimeout) beside the call's; a failure the layer retries (rules.RetryLayer.Retries,
// before the request was sent) is sent again after the back-off, up to l.Retries times.
//
// With rules.Connect.DetachedDial (net/http), a slow lookup or handshake the attempt's timeout
// cut keeps going and pools its connection when it completes (detached). A later attempt
// takes a pooled connection at once, or dials too and takes the first connection that comes,
// its own or a detached one: its lookup joins the one in flight (Go 1.26 net/lookup.go:
// lookupGroup, a singleflight), so both dials connect when it answers; its handshake is its
// own. Every dial connects: each is a connection the server sees. Waits are at their
// shortest, or at their longest with high.
func preFirstLayered(f PreFirst, l Limits, high bool, once func(PreFirst, Limits) (Prediction, error)) (Prediction, error) {
	layer := l.Rules.Retry
	var p Prediction
	start := time.Duration(0)
	var pending []time.Duration // when the dials attempts gave up on pool their connections
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
			a = detachedAttempt(f, la.Deadline, start, &pending)
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
				// The first attempt's dial: its lookup answers, then it connects.
				pending = append(pending, start+f.LookupDelay)
				p.Connects++
				p.Attempts[len(p.Attempts)-1].NewConnection = true
			case SlowHandshake:
				pending = append(pending, start+f.trickle()) // its TCP connection is counted
			}
		}
		switch {
		case a.Outcome == vocab.OK || a.Outcome == vocab.Hang || (a.Outcome == vocab.Deadline && !cut):
			return p, nil
		case n >= l.Retries || !layer.Retries(rules.LayerFailure{Class: preFirstClass(f, a.Outcome, cut), Method: "GET"}):
			return p, nil
		}
		lo, hi := layer.Backoff.Wait(n+1, l.Backoff, l.BackoffMax)
		if high {
			lo = hi
		}
		start = p.Total + lo
		if l.Deadline > 0 && start >= l.Deadline {
			p.Outcome, p.Total = vocab.Deadline, l.Deadline
			return p, nil
		}
	}
}

// detachedAttempt is an attempt from start, bounded by deadline (from start; 0: none), while
// dials earlier attempts gave up on pool their connections at the times in pending
// (preFirstLayered): it takes the first connection pooled by then, or dials (a connection
// more, pending too) and takes the first that comes.
func detachedAttempt(f PreFirst, deadline, start time.Duration, pending *[]time.Duration) Prediction {
	first := slices.Min(*pending)
	var a Prediction
	if first > start {
		own := first // a lookup joins the one in flight
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
		*pending = slices.Delete(*pending, i, i+1) // taken
	}
	at.Phases = []Span{{Phase: vocab.PhaseConnect, End: at.End}}
	a.Outcome, a.Total, a.Attempts = at.Outcome, at.End, []Attempt{at}
	return a
}

// preFirstClass is a failure before the first byte as a retry layer sees it.
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
