package model

import (
	"testing"
	"time"
)

func TestPredictH2BurstSync(t *testing.T) {
	p, err := PredictH2Burst(H2Burst{Calls: 50, PeerLimit: 10, Latency: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := H2BurstPrediction{AtOnce: 50, Dialled: CountSpan{1, 90}, Kept: CountSpan{1, 5}, Answered: CountSpan{10, 50}, Waves: 1, Total: 200 * time.Millisecond}
	if p != want {
		t.Fatalf("got %+v, want %+v", p, want)
	}
	if f := p.Failed(50); f != (CountSpan{0, 40}) {
		t.Errorf("failed %+v, want 0-40", f)
	}
}

func TestPredictH2BurstWithinLimitIsExact(t *testing.T) {
	p, err := PredictH2Burst(H2Burst{Calls: 8, PeerLimit: 10, Latency: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Kept.Exact() || p.Kept.Min != 1 || !p.Answered.Exact() || p.Answered.Min != 8 || p.Dialled != (CountSpan{1, 8}) {
		t.Fatalf("got %+v, want 8 dialled, 1 kept, 8 answered", p)
	}
}

func TestPredictH2BurstEnqueue(t *testing.T) {
	p, err := PredictH2Burst(H2Burst{Calls: 50, PeerLimit: 10, Latency: 200 * time.Millisecond, Enqueue: true})
	if err != nil {
		t.Fatal(err)
	}
	want := H2BurstPrediction{AtOnce: 5, Dialled: CountSpan{1, 5}, Kept: CountSpan{1, 1}, Answered: CountSpan{50, 50}, Waves: 10, Total: 2 * time.Second}
	if p != want {
		t.Fatalf("got %+v, want %+v", p, want)
	}
	p, err = PredictH2Burst(H2Burst{Calls: 7, PeerLimit: 10, Latency: time.Second, Enqueue: true, MaxRequests: 3, MaxRequestsPerHost: 6})
	if err != nil || p.AtOnce != 3 || p.Waves != 3 {
		t.Fatalf("maxRequests 3: got %+v, %v; want 3 at once, 3 waves", p, err)
	}
}

func TestPredictH2BurstRejects(t *testing.T) {
	for _, b := range []H2Burst{
		{Calls: 0, PeerLimit: 10},
		{Calls: 5, PeerLimit: 0},
		{Calls: 5, PeerLimit: 1, Latency: -1},
		{Calls: 5, PeerLimit: 1, MaxRequestsPerHost: -1},
		{Calls: 50, PeerLimit: 2, Enqueue: true},
	} {
		if _, err := PredictH2Burst(b); err == nil {
			t.Errorf("%+v: no error", b)
		}
	}
}
