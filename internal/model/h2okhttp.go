package model

import (
	"errors"
	"fmt"
	"time"
)

// OkHttp 3.13.1's HTTP/2 connection finding in a burst, the node's stream limit not yet known
// (docs/http2.md): a call finding no connection with room dials its own (findConnection);
// allocationLimit is MAX_VALUE until SETTINGS are read (onSettings); once connected, a call
// moves to the first other connection with room (deduplicate), so one pooled before its
// SETTINGS takes a herd; a stream refused twice fails (streamFailed). Connects and SETTINGS
// race: the model gives bounds.

const (
	OkHttpMaxRequests        = 64
	OkHttpMaxRequestsPerHost = 5
)

// H2Burst is a burst through a new OkHttp 3.13 client to one HTTP/2 node.
type H2Burst struct {
	// PeerLimit is SETTINGS_MAX_CONCURRENT_STREAMS.
	Calls, PeerLimit int
	Latency          time.Duration
	// Enqueue uses the Dispatcher, else a thread per call.
	Enqueue bool
	// Dispatcher limits; 0 is 64 and 5.
	MaxRequests, MaxRequestsPerHost int
}

// CountSpan bounds a count, Min to Max inclusive.
type CountSpan struct{ Min, Max int }

// Exact reports Min == Max.
func (s CountSpan) Exact() bool { return s.Min == s.Max }

// H2BurstPrediction bounds an H2Burst.
type H2BurstPrediction struct {
	AtOnce int
	// Dialled, Kept (carrying streams) and Answered; the rest fail with REFUSED_STREAM.
	Dialled, Kept, Answered CountSpan
	// Total is Waves x Latency.
	Waves int
	Total time.Duration
}

// Failed bounds the calls refused.
func (p H2BurstPrediction) Failed(calls int) CountSpan {
	return CountSpan{Min: calls - p.Answered.Max, Max: calls - p.Answered.Min}
}

// PredictH2Burst bounds an H2Burst. Dials run from one to AtOnce, plus one per refused call. If
// every SETTINGS beats its connect, ceil(AtOnce / PeerLimit) are kept and none refused; if none
// does, the herd: 1 kept, PeerLimit answered. Later waves dial nothing.
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
		// Each wave reuses the kept connection.
		p.Waves = ceilDiv(b.Calls, at)
		p.Answered = CountSpan{Min: b.Calls, Max: b.Calls}
	}
	p.Total = time.Duration(p.Waves) * b.Latency
	return p, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
