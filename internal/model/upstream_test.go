package model

import (
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

func TestLittleAndSizing(t *testing.T) {
	if got, want := Concurrency(200, 20*time.Millisecond), 4.0; got != want {
		t.Errorf("Concurrency: got %v, want %v", got, want)
	}
	for _, tt := range []struct {
		qps      float64
		p99      time.Duration
		headroom float64
		want     int
	}{
		{200, 20 * time.Millisecond, 1.5, 6}, // 6.000000000000001 in floats: still 6
		{100, 25 * time.Millisecond, 1.5, 4}, // 3.75 rounds up
		{0, time.Second, 1.5, 1},
		{-5, time.Second, 1.5, 1},
	} {
		if got := PoolSize(tt.qps, tt.p99, tt.headroom); got != tt.want {
			t.Errorf("PoolSize(%v, %v, %v): got %d, want %d", tt.qps, tt.p99, tt.headroom, got, tt.want)
		}
	}
}

func TestCascade(t *testing.T) {
	const ms = time.Millisecond
	incident := Cascade{Workers: 200, Pool: 5, LeaseTimeout: 3 * time.Minute, Requests: 200,
		Health: []time.Duration{200 * ms, 100 * ms}, Pause: 300 * ms, Service: 5 * ms}
	fast := incident
	fast.LeaseTimeout = 50 * ms
	quiz := fast
	quiz.Pool, quiz.Capacity = 500, 20
	queued := Cascade{Workers: 2, Pool: 1, Requests: 4, Health: []time.Duration{time.Millisecond}, Service: 10 * ms}
	tests := []struct {
		name                     string
		c                        Cascade
		ok, leaseTimeouts        int
		busy, pending            int // at 100 ms
		health                   []time.Duration
		peak                     int
		recovered, firstLeaseEnd time.Duration
	}{
		// Every worker stuck at the pool: 5 leased, 195 waiting 3 minutes; the health checks
		// wait for the first worker freed at 305 ms; the backlog drains 5 at a time.
		{"incident", incident, 200, 0, 200, 195, []time.Duration{105 * ms, 205 * ms}, 5, 500 * ms, -1},
		// All but the pool's size fail at 50 ms; the health checks find a free worker.
		{"lease timeout 50ms", fast, 5, 195, 5, 0, []time.Duration{0, 0}, 5, 305 * ms, 50 * ms},
		// Pool 500: every worker waits on the downstream, which serves 20 at a time after
		// the pause: 305, 310, ... 350 ms.
		{"pool 500", quiz, 200, 0, 200, 0, []time.Duration{105 * ms, 205 * ms}, 200, 350 * ms, -1},
		// Two workers, four requests: the health check at 1 ms waits behind the requests
		// queued for a worker, until the first worker frees at 10 ms and two requests after it.
		{"worker queue", queued, 4, 0, 0, 0, []time.Duration{29 * ms}, 1, 40 * ms, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.c.Predict()
			if got := p.Count(vocab.OK); got != tt.ok {
				t.Errorf("ok: got %d, want %d", got, tt.ok)
			}
			if got := p.Count(vocab.LeaseTimeout); got != tt.leaseTimeouts {
				t.Errorf("lease timeouts: got %d, want %d", got, tt.leaseTimeouts)
			}
			if got := p.BusyAt(100 * ms); got != tt.busy {
				t.Errorf("busy at 100 ms: got %d, want %d", got, tt.busy)
			}
			if got := p.PendingAt(100 * ms); got != tt.pending {
				t.Errorf("pending at 100 ms: got %d, want %d", got, tt.pending)
			}
			if !reflect.DeepEqual(p.Health, tt.health) {
				t.Errorf("health: got %v, want %v", p.Health, tt.health)
			}
			if p.PeakDownstream != tt.peak {
				t.Errorf("peak downstream: got %d, want %d", p.PeakDownstream, tt.peak)
			}
			if p.Recovered != tt.recovered {
				t.Errorf("recovered: got %v, want %v", p.Recovered, tt.recovered)
			}
			if ends := p.Ends(vocab.LeaseTimeout); tt.firstLeaseEnd >= 0 && (len(ends) == 0 || ends[0] != tt.firstLeaseEnd || ends[len(ends)-1] != tt.firstLeaseEnd) {
				t.Errorf("lease timeouts end at %v, want all at %v", ends, tt.firstLeaseEnd)
			}
		})
	}
}

func TestCascadeStrictLease(t *testing.T) {
	// A connection freed at the waiter's lease timeout is still granted to it.
	p := Cascade{Workers: 2, Pool: 1, LeaseTimeout: 10 * time.Millisecond, Requests: 2, Service: 10 * time.Millisecond}.Predict()
	if got := p.Count(vocab.OK); got != 2 {
		t.Errorf("got %d ok, want 2: %+v", got, p.Calls)
	}
}

func TestTailHedge(t *testing.T) {
	const ms = time.Millisecond
	tail := Tail{Fast: 10 * ms, Slow: 200 * ms, SlowFraction: 0.03}
	if got := tail.Quantile(0.95); got != 10*ms {
		t.Errorf("p95: got %v, want 10ms", got)
	}
	if got := tail.Quantile(0.99); got != 200*ms {
		t.Errorf("p99: got %v, want 200ms", got)
	}
	tests := []struct {
		delay time.Duration
		want  HedgePrediction
	}{
		{10 * ms, HedgePrediction{Extra: 0.03, P99: 20 * ms}}, // at the p95: 3% more requests
		{5 * ms, HedgePrediction{Extra: 1, P99: 15 * ms}},     // before the fast answer: every call twice
		{300 * ms, HedgePrediction{Extra: 0, P99: 200 * ms}},  // after the slow one: no effect
	}
	for _, tt := range tests {
		if got := tail.Hedge(tt.delay); got != tt.want {
			t.Errorf("Hedge(%v): got %+v, want %+v", tt.delay, got, tt.want)
		}
	}
	// With half the calls slow, a quarter of the hedged calls find a slow copy too.
	if got := (Tail{Fast: 10 * ms, Slow: 200 * ms, SlowFraction: 0.5}).Hedge(10 * ms); got.P99 != 200*ms {
		t.Errorf("half slow: got p99 %v, want 200ms", got.P99)
	}
}

func TestBreaker(t *testing.T) {
	const ms = time.Millisecond
	var calls []BreakerCall
	for i := 0; i < 30; i++ {
		at := time.Duration(i) * 10 * ms
		calls = append(calls, BreakerCall{At: at, Took: 5 * ms, Fails: at < 200*ms})
	}
	p := Breaker{Trip: 3, Open: 100 * ms, HalfOpenMax: 1}.Predict(calls)
	want := []BreakerChange{{25 * ms, Opened}, {130 * ms, HalfOpen}, {135 * ms, Opened}, {240 * ms, HalfOpen}, {245 * ms, Closed}}
	if !reflect.DeepEqual(p.Changes, want) {
		t.Errorf("changes: got %v, want %v", p.Changes, want)
	}
	if got := p.Sheds(); got != 20 {
		t.Errorf("shed: got %d, want 20 (30..120 ms and 140..230 ms)", got)
	}
	// A call that ends after the breaker opened belongs to an old generation: it counts for
	// nothing.
	slow := []BreakerCall{{At: 0, Took: 5 * ms, Fails: true}, {At: 1 * ms, Took: 50 * ms, Fails: true}, {At: 2 * ms, Took: 1 * ms, Fails: true}, {At: 60 * ms, Took: 1 * ms}}
	p = Breaker{Trip: 2, Open: 100 * ms, HalfOpenMax: 1}.Predict(slow)
	if want := []BreakerChange{{5 * ms, Opened}}; !reflect.DeepEqual(p.Changes, want) {
		t.Errorf("old generation: got %v, want %v", p.Changes, want)
	}
}

func TestChain(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		c        Chain
		gaveUp   time.Duration
		after    []time.Duration
		executed bool
	}{
		// Growing: the gateway gives up at 100 ms; order waits on inventory to its own 200 ms,
		// and inventory works until order leaves.
		{"growing", Chain{Timeouts: []time.Duration{100 * ms, 200 * ms}, Work: 250 * ms}, 100 * ms, []time.Duration{100 * ms, 100 * ms}, true},
		// Shrinking: order gives up first and answers the gateway in time: no work wasted.
		{"shrinking", Chain{Timeouts: []time.Duration{100 * ms, 80 * ms}, Work: 250 * ms}, 80 * ms, []time.Duration{0, 0}, true},
		// Propagated: inventory is told 100 ms are left and refuses 250 ms of work at once.
		{"propagated", Chain{Timeouts: []time.Duration{100 * ms, 200 * ms}, Work: 250 * ms, Propagate: true}, 0, []time.Duration{0, 0}, false},
		{"propagated, work fits", Chain{Timeouts: []time.Duration{100 * ms, 200 * ms}, Work: 50 * ms, Propagate: true}, 50 * ms, []time.Duration{0, 0}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.c.Predict()
			if p.GaveUp != tt.gaveUp {
				t.Errorf("gave up: got %v, want %v", p.GaveUp, tt.gaveUp)
			}
			var after []time.Duration
			for _, h := range p.Hops {
				after = append(after, h.After)
			}
			if !reflect.DeepEqual(after, tt.after) {
				t.Errorf("work after: got %v, want %v", after, tt.after)
			}
			if want := tt.name == "growing"; p.TimedOut != want {
				t.Errorf("timed out: got %v, want %v", p.TimedOut, want)
			}
			if p.Executed != tt.executed {
				t.Errorf("executed: got %v, want %v", p.Executed, tt.executed)
			}
		})
	}
}

func TestStormConns(t *testing.T) {
	calls := []BreakerCall{{Fails: true}, {Fails: true}, {Fails: true}, {}, {}}
	if d, c := StormConns(calls, nil, 1); d != 3 || c != 3 {
		t.Errorf("no breaker: got %d dials, %d closes; want 3 and 3 (the warm connection, then one per timeout)", d, c)
	}
	if d, c := StormConns(calls, []bool{false, true, true, false, false}, 1); d != 1 || c != 1 {
		t.Errorf("two shed: got %d dials, %d closes; want 1 and 1", d, c)
	}
}
