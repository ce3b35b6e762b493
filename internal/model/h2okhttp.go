package model

import (
	"errors"
	"fmt"
	"time"
)

// This file is the model of OkHttp 3.13's HTTP/2 connection finding in a burst (docs/http2.md):
// calls started together against one node whose stream limit the client does not know yet.
// Its rules, from OkHttp 3.13.1's source:
//
//   - A call that finds no pooled connection with room dials its own; the new connection
//     enters the pool only once connected (StreamAllocation.findConnection,
//     Internal.instance.put after RealConnection.connect), so calls started together each dial.
//   - A connection's allocationLimit is set when its connect ends, to the peer's
//     SETTINGS_MAX_CONCURRENT_STREAMS as known then (RealConnection.connect,
//     Http2Connection.maxConcurrentStreams): Integer.MAX_VALUE if the peer's SETTINGS have not
//     been read yet, and the peer's limit once they are (RealConnection.onSettings).
//   - Once connected, the call looks in the pool again and moves to the first other
//     multiplexed connection with room, closing the one it dialled
//     (ConnectionPool.deduplicate, StreamAllocation.releaseAndAcquire). A connection pooled
//     before its SETTINGS were read takes every call that connects meanwhile: a herd, beyond
//     the peer's limit.
//   - The peer refuses the streams over its limit (RST_STREAM REFUSED_STREAM). A refused
//     stream is retried once, on the same connection unless that connection takes no new
//     streams; a second refusal ends the call with StreamResetException and marks the
//     connection as taking no new streams (StreamAllocation.streamFailed: refusedStreamCount
//     > 1; RetryAndFollowUpInterceptor.recover finds no other route).
//   - Calls enqueued run through the Dispatcher: at most 64 at once, 5 per host
//     (Dispatcher.maxRequests, maxRequestsPerHost).
//
// Where in its range a burst lands is the race between each connection's connect ending and
// the peer's SETTINGS being read on it, which the model cannot know: it gives bounds.

// OkHttp 3.13's Dispatcher limits (Dispatcher.maxRequests, maxRequestsPerHost).
const (
	OkHttpMaxRequests        = 64
	OkHttpMaxRequestsPerHost = 5
)

// H2Burst is a burst of calls through OkHttp 3.13 to one HTTP/2 node, on a new client.
type H2Burst struct {
	// Calls are started together; PeerLimit is the node's SETTINGS_MAX_CONCURRENT_STREAMS and
	// Latency its answer time.
	Calls, PeerLimit int
	Latency          time.Duration
	// Enqueue makes the calls with Call.enqueue, through the Dispatcher; otherwise each calls
	// execute on a thread of its own, all at once.
	Enqueue bool
	// MaxRequests and MaxRequestsPerHost are the Dispatcher's limits (0: OkHttp's 64 and 5).
	MaxRequests, MaxRequestsPerHost int
}

// CountSpan is a count the model bounds: from Min to Max, both included.
type CountSpan struct{ Min, Max int }

// Exact reports whether the span is one value.
func (s CountSpan) Exact() bool { return s.Min == s.Max }

// H2BurstPrediction is the model's answer for an H2Burst.
type H2BurstPrediction struct {
	// AtOnce is how many calls look for a connection together: every call, or the
	// Dispatcher's limit for the host.
	AtOnce int
	// Dialled counts the connections the client opens; Kept those that carry streams (the
	// others are closed by deduplication right after their connect); Answered the calls the
	// node answers. The rest of the calls fail with REFUSED_STREAM.
	Dialled, Kept, Answered CountSpan
	// Waves is how many rounds of AtOnce calls the burst takes; Total the burst's time,
	// Waves x Latency (connects and streams on loopback not counted).
	Waves int
	Total time.Duration
}

// Failed is the CountSpan of calls that fail with REFUSED_STREAM.
func (p H2BurstPrediction) Failed(calls int) CountSpan {
	return CountSpan{Min: calls - p.Answered.Max, Max: calls - p.Answered.Min}
}

// PredictH2Burst bounds an H2Burst by OkHttp 3.13's rules (above). A call that finds no
// pooled connection with room dials: each of the AtOnce calls if they all look before the
// first connect ends, as few as one if the others find a connection pooled before its SETTINGS
// were read. Every refused call may dial once more (its connection stopped taking streams
// before its retry), so at most AtOnce + (AtOnce - PeerLimit) dials. If every connection's
// SETTINGS are read before its connect ends, the calls fill the connections one after the
// other, PeerLimit each: ceil(AtOnce / PeerLimit) kept, none refused. If none are, every call
// moves to the first connection pooled, the herd: 1 kept, PeerLimit answered. A connection is
// kept only when it found every pooled connection full, so at most ceil(AtOnce / PeerLimit).
// With AtOnce at most PeerLimit no connection can go over the limit: one kept, all answered.
// Later waves (Enqueue) find the kept connection with room and dial nothing.
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
		// Later waves would meet connections marked by the first wave's refusals.
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
		// The Dispatcher runs AtOnce at a time, at most the limit: all are answered, and
		// each wave after the first reuses the kept connection.
		p.Waves = ceilDiv(b.Calls, at)
		p.Answered = CountSpan{Min: b.Calls, Max: b.Calls}
	}
	p.Total = time.Duration(p.Waves) * b.Latency
	return p, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
