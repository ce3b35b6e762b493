package model

import (
	"errors"
	"fmt"
	"time"
)

// The model of OkHttp 3.13.1's HTTP/2 connection finding in a burst (docs/http2.md), against a
// node whose stream limit the client does not know yet:
//
//   - A call with no pooled connection with room dials its own, pooled only once connected
//     (StreamAllocation.findConnection).
//   - allocationLimit is MAX_VALUE until the peer's SETTINGS are read (RealConnection.onSettings).
//   - Once connected, a call moves to the first other connection with room and closes its own
//     (ConnectionPool.deduplicate): one pooled before its SETTINGS takes a herd.
//   - A refused stream is retried once; a second refusal fails the call and marks the
//     connection (StreamAllocation.streamFailed).
//
// Connects and SETTINGS race, so the model gives bounds.

const (
	OkHttpMaxRequests        = 64
	OkHttpMaxRequestsPerHost = 5
)

// H2Burst is a burst of calls through OkHttp 3.13 to one HTTP/2 node, on a new client.
type H2Burst struct {
	// PeerLimit is the node's SETTINGS_MAX_CONCURRENT_STREAMS; Latency its answer time.
	Calls, PeerLimit int
	Latency          time.Duration
	// Enqueue runs the calls through the Dispatcher; otherwise each executes on its own thread.
	Enqueue bool
	// MaxRequests and MaxRequestsPerHost are the Dispatcher's limits (0: 64 and 5).
	MaxRequests, MaxRequestsPerHost int
}

// CountSpan is a count the model bounds: from Min to Max, both included.
type CountSpan struct{ Min, Max int }

// Exact reports whether the span is one value.
func (s CountSpan) Exact() bool { return s.Min == s.Max }

// H2BurstPrediction is the model's answer for an H2Burst.
type H2BurstPrediction struct {
	// AtOnce is how many calls look for a connection together.
	AtOnce int
	// Dialled counts connections opened, Kept those carrying streams, Answered the calls
	// answered; the rest fail with REFUSED_STREAM.
	Dialled, Kept, Answered CountSpan
	// Total is Waves x Latency (loopback connects and streams not counted).
	Waves int
	Total time.Duration
}

// Failed is the CountSpan of calls that fail with REFUSED_STREAM.
func (p H2BurstPrediction) Failed(calls int) CountSpan {
	return CountSpan{Min: calls - p.Answered.Max, Max: calls - p.Answered.Min}
}

// PredictH2Burst bounds an H2Burst by OkHttp 3.13's rules (above). Dials: from one (the others
// find a connection pooled before its SETTINGS) to AtOnce, plus one per refused call. If every
// SETTINGS is read before its connect ends, ceil(AtOnce / PeerLimit) connections are kept and
// none refused; if none is, the herd: 1 kept, PeerLimit answered. Later waves dial nothing.
func PredictH2Burst(b H2Burst) (H2BurstPrediction, error) {
	if b.MaxRequests == 0 {
		b.MaxRequests = OkHttpMaxRequests
	}
	if b.MaxRequestsPerHost == 0 {
		b.MaxRequestsPerHost = OkHttpMaxRequestsPerHost
	}
	switch {
	case b.Calls < 1 || b.PeerLimit < 1:
		return H2BurstPrediction{}, fmt.Errorf("model: an HTTP/2 burst needs at least one call and a peer limit of at least 1, got %d and %d", b.Calls, b.PeerLimit)
	case b.Latency < 0 || b.MaxRequests < 0 || b.MaxRequestsPerHost < 0:
		return H2BurstPrediction{}, errors.New("model: an HTTP/2 burst needs a non-negative latency and Dispatcher limits")
	}
	at := b.Calls
	if b.Enqueue {
		at = min(at, b.MaxRequests, b.MaxRequestsPerHost)
	}
	over := max(0, at-b.PeerLimit)
	if b.Enqueue && over > 0 {
		return H2BurstPrediction{}, fmt.Errorf("model: an enqueued burst of %d at once over a peer limit of %d is not modelled", at, b.PeerLimit)
	}
	p := H2BurstPrediction{
		AtOnce:   at,
		Dialled:  CountSpan{Min: 1, Max: at + over},
		Kept:     CountSpan{Min: 1, Max: ceilDiv(at, b.PeerLimit)},
		Answered: CountSpan{Min: min(at, b.PeerLimit), Max: at},
		Waves:    1,
	}
	if b.Enqueue {
		// Each wave reuses the kept connection; all are answered.
		p.Waves = ceilDiv(b.Calls, at)
		p.Answered = CountSpan{Min: b.Calls, Max: b.Calls}
	}
	p.Total = time.Duration(p.Waves) * b.Latency
	return p, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
