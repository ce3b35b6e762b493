package model

import (
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

func waves(ws ...H2Wave) []H2Wave { return ws }

func ok(at time.Duration, n int) H2Wave { return H2Wave{At: at, Outcome: vocab.OK, Calls: n} }

// pairs returns starts of two calls at 0, every, 2 x every, ... (n pairs).
func pairs(n int, every time.Duration) []time.Duration {
	var s []time.Duration
	for i := range n {
		s = append(s, time.Duration(i)*every, time.Duration(i)*every)
	}
	return s
}

// TestSimulateH2 checks the pool rules. Each want is derived by hand in the comment; the
// connect time is the model's 1 ms.
func TestSimulateH2(t *testing.T) {
	node200 := H2Node{Latency: 200 * ms}
	// Node 1 answers in 10 ms, and in 100 ms from its third request on.
	turning := []H2Node{{Latency: 10 * ms}, {Latency: 10 * ms, SlowAfter: 2, SlowLatency: 100 * ms}}
	rule1 := &H2Ejection{BadCalls: 2, BadAvg: 20 * ms, MinCalls: 1 << 30, SlowAvg: time.Hour, MaxAvgShare: 0.9}
	rule2 := &H2Ejection{BadCalls: 1 << 30, BadAvg: time.Hour, MinCalls: 4, SlowAvg: 20 * ms, MaxAvgShare: 0.9}
	tests := []struct {
		name     string
		s        H2Scenario
		newConns int
		streams  []int
		last     []int
		waves    []H2Wave
		p50, p99 time.Duration
	}{
		// One warm connection, limit 100: the calls beyond 100 wait for slots and go out as
		// the previous ones finish, in waves of 200 ms (200, 400 ms, as StrictMaxConcurrentRequests documents).
		{name: "go strict 150", s: H2Scenario{Nodes: []H2Node{node200}, Calls: 150,
			Client: H2Client{Rule: rules.H2GoStrict(), Warm: 1, Deadline: 5 * time.Second}},
			newConns: 0, streams: []int{150}, last: []int{149},
			waves: waves(ok(200*ms, 100), ok(400*ms, 50)), p50: 200 * ms, p99: 400 * ms},
		{name: "go strict 250", s: H2Scenario{Nodes: []H2Node{node200}, Calls: 250,
			Client: H2Client{Rule: rules.H2GoStrict(), Warm: 1, Deadline: 5 * time.Second}},
			newConns: 0, streams: []int{250}, last: []int{249},
			waves: waves(ok(200*ms, 100), ok(400*ms, 100), ok(600*ms, 50)), p50: 400 * ms, p99: 600 * ms},
		// The strict waves meet a 500 ms deadline: the third wave is cut at 500 ms.
		{name: "go strict 250 deadline", s: H2Scenario{Nodes: []H2Node{node200}, Calls: 250,
			Client: H2Client{Rule: rules.H2GoStrict(), Warm: 1, Deadline: 500 * ms}},
			newConns: 0, streams: []int{250}, last: []int{249},
			waves: waves(ok(200*ms, 100), ok(400*ms, 100), H2Wave{500 * ms, vocab.Deadline, 50}),
			p50:   400 * ms, p99: 500 * ms},
		// Non-strict, as documented: 100 on the warm connection, then a new connection per
		// 100 calls (2 for 150), usable after 1 ms.
		{name: "go 250 warm", s: H2Scenario{Nodes: []H2Node{node200}, Calls: 250,
			Client: H2Client{Rule: rules.H2Go(), Warm: 1}},
			newConns: 2, streams: []int{250}, last: []int{249},
			waves: waves(ok(200*ms, 100), ok(201*ms, 150)), p50: 201 * ms, p99: 201 * ms},
		{name: "go 250 cold", s: H2Scenario{Nodes: []H2Node{node200, node200}, Calls: 250,
			Client: H2Client{Rule: rules.H2Go()}},
			newConns: 3, streams: []int{250, 0}, last: []int{249, -1},
			waves: waves(ok(201*ms, 250)), p50: 201 * ms, p99: 201 * ms},
		// OkHttp with the interceptor's cap of 60 over 3 nodes: 5 connections (60, 60, 60, 60,
		// 10) to nodes 0, 1, 2, 0, 1.
		{name: "okhttp cap 60", s: H2Scenario{Nodes: []H2Node{node200, node200, node200}, Calls: 250,
			Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 60}},
			newConns: 5, streams: []int{120, 70, 60}, last: []int{239, 249, 179},
			waves: waves(ok(201*ms, 250)), p50: 201 * ms, p99: 201 * ms},
		// Without the cap, the peer's 100: 3 connections, 100 + 100 + 50.
		{name: "okhttp peer limit", s: H2Scenario{Nodes: []H2Node{node200, node200, node200}, Calls: 250,
			Client: H2Client{Rule: rules.H2OkHttp()}},
			newConns: 3, streams: []int{100, 100, 50}, last: []int{99, 199, 249},
			waves: waves(ok(201*ms, 250)), p50: 201 * ms, p99: 201 * ms},
		// A stream limit of 1: pairs of calls every 200 ms. Calls 0 and 1 open connection 0
		// (node 0) and 1 (node 1); later pairs reuse them. Node 1's third request (call 5, at
		// 400 ms) takes 100 ms: 3 calls > 2, avg (10+10+100)/3 = 40 ms > 20 ms and 100 > 40:
		// connection 1 is ejected at 500 ms. Call 7 (600 ms) then opens connection 2 to the
		// next route, node 0 again, and call 9 reuses it: node 1 gets nothing after call 5.
		{name: "eject, rule 1", s: H2Scenario{Nodes: turning, Starts: pairs(5, 200*ms),
			Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 1, Eject: rule1}},
			newConns: 3, streams: []int{7, 3}, last: []int{9, 5},
			waves: waves(ok(11*ms, 2), ok(210*ms, 2), ok(410*ms, 1), ok(500*ms, 1), ok(610*ms, 1), ok(611*ms, 1), ok(810*ms, 2)),
			p50:   10 * ms, p99: 100 * ms},
		// The global rule: 6 calls > 4 in all, node 1's avg 40 ms > 20 ms, 100 > 40, and 40 >
		// 0.9 x 10 ms (the worst average before): ejected at the same call.
		{name: "eject, rule 2", s: H2Scenario{Nodes: turning, Starts: pairs(5, 200*ms),
			Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 1, Eject: rule2}},
			newConns: 3, streams: []int{7, 3}, last: []int{9, 5},
			waves: waves(ok(11*ms, 2), ok(210*ms, 2), ok(410*ms, 1), ok(500*ms, 1), ok(610*ms, 1), ok(611*ms, 1), ok(810*ms, 2)),
			p50:   10 * ms, p99: 100 * ms},
		// Statistics idle for 100 ms are dropped by a sweep every 50 ms: at 500 ms node 1's
		// entry (last used at 210 ms) is gone, so call 5 starts a fresh average (100 ms, not
		// above itself) and nothing is ejected: node 1 stays slow for calls 7 and 9.
		{name: "eject, idle stats dropped", s: H2Scenario{Nodes: turning, Starts: pairs(5, 200*ms),
			Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 1, Eject: &H2Ejection{
				BadCalls: 2, BadAvg: 20 * ms, MinCalls: 1 << 30, SlowAvg: time.Hour, MaxAvgShare: 0.9,
				IdleDrop: 100 * ms, Sweep: 50 * ms}}},
			newConns: 2, streams: []int{5, 5}, last: []int{8, 9},
			waves: waves(ok(11*ms, 2), ok(210*ms, 2), ok(410*ms, 1), ok(500*ms, 1), ok(610*ms, 1), ok(700*ms, 1), ok(810*ms, 1), ok(900*ms, 1)),
			p50:   10 * ms, p99: 100 * ms},
		// One address kept: node 0's calls push node 1 out, so node 1 never has 3 calls on record.
		{name: "eject, one address kept", s: H2Scenario{Nodes: turning, Starts: pairs(5, 200*ms),
			Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 1, Eject: &H2Ejection{
				BadCalls: 2, BadAvg: 20 * ms, MinCalls: 1 << 30, SlowAvg: time.Hour, MaxAvgShare: 0.9, MaxAddrs: 1}}},
			newConns: 2, streams: []int{5, 5}, last: []int{8, 9},
			waves: waves(ok(11*ms, 2), ok(210*ms, 2), ok(410*ms, 1), ok(500*ms, 1), ok(610*ms, 1), ok(700*ms, 1), ok(810*ms, 1), ok(900*ms, 1)),
			p50:   10 * ms, p99: 100 * ms},
		// Read timeout 50 ms against 100 ms answers: each stream ends at its start + 50 ms.
		{name: "okhttp read timeout", s: H2Scenario{Nodes: []H2Node{{Latency: 100 * ms}}, Calls: 3,
			Client: H2Client{Rule: rules.H2OkHttp(), ReadTimeout: 50 * ms}},
			newConns: 1, streams: []int{3}, last: []int{2},
			waves: waves(H2Wave{51 * ms, vocab.ReadTimeout, 3}), p50: 51 * ms, p99: 51 * ms},
		// Ties: an answer at the read timeout is in time, one at the deadline is not.
		{name: "tie with read timeout", s: H2Scenario{Nodes: []H2Node{{Latency: 50 * ms}}, Calls: 1,
			Client: H2Client{Rule: rules.H2OkHttp(), ReadTimeout: 50 * ms, Warm: 1}},
			newConns: 0, streams: []int{1}, last: []int{0}, waves: waves(ok(50*ms, 1)), p50: 50 * ms, p99: 50 * ms},
		{name: "tie with deadline", s: H2Scenario{Nodes: []H2Node{{Latency: 50 * ms}}, Calls: 1,
			Client: H2Client{Rule: rules.H2Go(), Deadline: 50 * ms, Warm: 1}},
			newConns: 0, streams: []int{1}, last: []int{0},
			waves: waves(H2Wave{50 * ms, vocab.Deadline, 1}), p50: 50 * ms, p99: 50 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := SimulateH2(tt.s)
			if got := p.NewConns(); got != tt.newConns {
				t.Errorf("new connections: got %d, want %d", got, tt.newConns)
			}
			if !reflect.DeepEqual(p.StreamsPerNode, tt.streams) {
				t.Errorf("streams per node: got %v, want %v", p.StreamsPerNode, tt.streams)
			}
			if !reflect.DeepEqual(p.LastCall, tt.last) {
				t.Errorf("last call per node: got %v, want %v", p.LastCall, tt.last)
			}
			if !reflect.DeepEqual(p.Waves, tt.waves) {
				t.Errorf("waves: got %v, want %v", p.Waves, tt.waves)
			}
			if p.P50 != tt.p50 || p.P99 != tt.p99 {
				t.Errorf("p50, p99: got %v, %v, want %v, %v", p.P50, p.P99, tt.p50, tt.p99)
			}
		})
	}
}

func TestSimulateH2Ejection(t *testing.T) {
	p := SimulateH2(H2Scenario{
		Nodes:  []H2Node{{Latency: 10 * ms}, {Latency: 10 * ms, SlowAfter: 2, SlowLatency: 100 * ms}},
		Starts: pairs(5, 200*ms),
		Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 1, Eject: &H2Ejection{BadCalls: 2, BadAvg: 20 * ms, MinCalls: 1 << 30, SlowAvg: time.Hour}},
	})
	want := []H2Conn{
		{Node: 0, Opened: 0, Streams: 5, Peak: 1, EjectedAfter: -1, DroppedAt: Forever},
		{Node: 1, Opened: 0, Streams: 3, Peak: 1, EjectedAfter: 5, EjectedAt: 500 * ms, DroppedAt: Forever},
		{Node: 0, Opened: 600 * ms, Streams: 2, Peak: 1, EjectedAfter: -1, DroppedAt: Forever},
	}
	if !reflect.DeepEqual(p.Conns, want) {
		t.Errorf("connections:\ngot  %+v\nwant %+v", p.Conns, want)
	}
	if c := p.Calls[7]; c.Conn != 2 || !c.NewConn || c.Node != 0 || c.Waited != ms {
		t.Errorf("call 7: got %+v, want a new connection 2 to node 0, 1 ms set-up", c)
	}
}

// TestSimulateH2Frozen checks a node that hangs at 1 s, calls every 300 ms.
func TestSimulateH2Frozen(t *testing.T) {
	frozen := []H2Node{{Latency: 10 * ms, Frozen: true, FrozenAt: time.Second}}
	health := H2Client{Rule: rules.H2Go(), SendPingTimeout: 100 * ms, PingTimeout: 50 * ms, Deadline: 3 * time.Second}
	type call struct {
		end time.Duration
		o   vocab.Outcome
	}
	okAt := func(d time.Duration) call { return call{d, vocab.OK} }
	tests := []struct {
		name    string
		s       H2Scenario
		calls   []call
		dropped []time.Duration
	}{
		// The last frame before the freeze is call 3's answer at 910 ms (the PING due at
		// 1010 ms is never answered): the connection drops at 910 + 100 + 50 = 1060 ms, with no
		// stream on it. Call 4 (1.2 s) opens a new connection, usable at 1201 ms, whose health
		// check fires at 1201 + 150 = 1351 ms: "connection lost".
		{name: "health check", s: H2Scenario{Nodes: frozen, Calls: 5, Every: 300 * ms, Client: health},
			calls:   []call{okAt(11 * ms), okAt(310 * ms), okAt(610 * ms), okAt(910 * ms), {1351 * ms, vocab.Failed}},
			dropped: []time.Duration{1060 * ms, 1351 * ms}},
		// Calls 0 to 3 at 0, 100, 200, 300 ms on a node frozen at 250 ms: call 2's answer (210
		// ms) is the last frame, as the next PING would be due at 310 ms, after the freeze; the
		// drop at 210 + 150 = 360 ms fails call 3.
		{name: "in flight at the freeze", s: H2Scenario{Nodes: []H2Node{{Latency: 10 * ms, Frozen: true, FrozenAt: 250 * ms}},
			Calls: 4, Every: 100 * ms, Client: health},
			calls:   []call{okAt(11 * ms), okAt(110 * ms), okAt(210 * ms), {360 * ms, vocab.Failed}},
			dropped: []time.Duration{360 * ms}},
		// An idle connection keeps answering PINGs every 100 ms until the freeze at 1 s:
		// the last answered PING is at 11 + 9 x 100 = 911 ms; the drop at 1061 ms.
		{name: "idle pings", s: H2Scenario{Nodes: frozen, Calls: 1, Client: health},
			calls: []call{okAt(11 * ms)}, dropped: []time.Duration{1061 * ms}},
		// No health check: call 4 waits until its deadline, 1.2 + 3 s.
		{name: "no health check", s: H2Scenario{Nodes: frozen, Calls: 5, Every: 300 * ms,
			Client: H2Client{Rule: rules.H2Go(), Deadline: 3 * time.Second}},
			calls:   []call{okAt(11 * ms), okAt(310 * ms), okAt(610 * ms), okAt(910 * ms), {4200 * ms, vocab.Deadline}},
			dropped: []time.Duration{Forever}},
		// No limit at all: a hang.
		{name: "hang", s: H2Scenario{Nodes: frozen, Calls: 5, Every: 300 * ms, Client: H2Client{Rule: rules.H2Go()}},
			calls:   []call{okAt(11 * ms), okAt(310 * ms), okAt(610 * ms), okAt(910 * ms), {Forever, vocab.Hang}},
			dropped: []time.Duration{Forever}},
		// A handshake with a frozen node (TLS, or labrun's pool waiting for SETTINGS) is never
		// answered: the health check never starts, and the call ends at its deadline.
		{name: "tls handshake", s: H2Scenario{Nodes: []H2Node{{Latency: 10 * ms, Frozen: true}}, Calls: 1,
			Client: H2Client{Rule: rules.H2OkHttp(), Handshake: true, SendPingTimeout: 100 * ms, Deadline: time.Second}},
			calls: []call{{time.Second, vocab.Deadline}}, dropped: []time.Duration{Forever}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := SimulateH2(tt.s)
			var got []call
			for _, c := range p.Calls {
				got = append(got, call{c.End, c.Outcome})
			}
			if !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("calls: got %v, want %v", got, tt.calls)
			}
			var dropped []time.Duration
			for _, c := range p.Conns {
				dropped = append(dropped, c.DroppedAt)
			}
			if !reflect.DeepEqual(dropped, tt.dropped) {
				t.Errorf("connections dropped at: got %v, want %v", dropped, tt.dropped)
			}
		})
	}
}

// TestSimulateH2StrictDrop: strict, limit 1, three calls at once on a node frozen at 5 ms.
// Call 0 holds the slot; its connection's last frame is its SETTINGS at 0 (no PING was due
// before the freeze), so it drops at 0 + 100 + 50 = 150 ms, failing call 0. The waiting calls
// 1 and 2 move to a new connection, usable at 151 ms, where call 1 streams and call 2 waits;
// it drops at 151 + 150 = 301 ms. Call 2 goes on to a third, usable at 302 ms and dropped at
// 452 ms, before its deadline.
func TestSimulateH2StrictDrop(t *testing.T) {
	p := SimulateH2(H2Scenario{
		Nodes:  []H2Node{{Latency: 10 * ms, MaxStreams: 1, Frozen: true, FrozenAt: 5 * ms}},
		Calls:  3,
		Client: H2Client{Rule: rules.H2GoStrict(), Warm: 1, SendPingTimeout: 100 * ms, PingTimeout: 50 * ms, Deadline: time.Second},
	})
	type call struct {
		end  time.Duration
		o    vocab.Outcome
		conn int
	}
	var got []call
	for _, c := range p.Calls {
		got = append(got, call{c.End, c.Outcome, c.Conn})
	}
	want := []call{{150 * ms, vocab.Failed, 0}, {301 * ms, vocab.Failed, 1}, {452 * ms, vocab.Failed, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestSimulateH2Panics(t *testing.T) {
	for _, s := range []H2Scenario{
		{Calls: 1, Client: H2Client{Rule: rules.H2Go()}},
		{Nodes: []H2Node{{}}, Calls: -1, Client: H2Client{Rule: rules.H2Go()}},
		{Nodes: []H2Node{{Latency: -1}}, Calls: 1, Client: H2Client{Rule: rules.H2Go()}},
		{Nodes: []H2Node{{}}, Calls: 2, Starts: []time.Duration{0}, Client: H2Client{Rule: rules.H2Go()}},
		{Nodes: []H2Node{{}}, Calls: 2, Rejected: []bool{true}, Client: H2Client{Rule: rules.H2Go()}},
		{Nodes: []H2Node{{}}, Calls: 1, Client: H2Client{Rule: rules.H2OkHttp(), StreamCost: -1}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SimulateH2(%+v): no panic", s)
				}
			}()
			SimulateH2(s)
		}()
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	tests := []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {99, 10}, {10, 1}, {100, 10}, {1, 1}}
	for _, tt := range tests {
		if got := Percentile(ds, tt.p); got != tt.want {
			t.Errorf("Percentile(%v): got %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil): got %v, want 0", got)
	}
}

func BenchmarkSimulateH2(b *testing.B) {
	s := H2Scenario{Nodes: []H2Node{{Latency: 200 * ms}, {Latency: 200 * ms}, {Latency: 200 * ms}}, Calls: 1000, Every: ms,
		Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 60, Eject: new(rules.APNsProduction())}}
	for b.Loop() {
		SimulateH2(s)
	}
}

// TestSimulateH2Throttle: the APNs throttle. Call 0 is rejected at 100 ms on the one
// connection, whose limit drops to 1; calls 1 to 5 come at 200 ms. Go strict: call 1 streams,
// 2 to 5 wait; its success at 300 ms restores the limit (10) before it frees its slot, so the
// four go out at 300 ms and end at 400 ms. OkHttp's rule: call 1 takes the one slot, calls 2 to
// 5 open a second connection (usable at 201 ms) and end at 301 ms. A burst of rejections
// keeps the limit at 1: Go strict serializes it, one every 100 ms.
func TestSimulateH2Throttle(t *testing.T) {
	node := []H2Node{{Latency: 100 * ms, MaxStreams: 10, Throttle: true}}
	starts := []time.Duration{0, 200 * ms, 200 * ms, 200 * ms, 200 * ms, 200 * ms}
	first := []bool{true, false, false, false, false, false}
	all := []bool{true, true, true, true, true, true}
	tests := []struct {
		name     string
		rule     H2Rule
		rejected []bool
		newConns int
		waves    []H2Wave
		limits   []H2Limit // of connection 0
	}{
		{"go strict", rules.H2GoStrict(), first, 1, waves(ok(101*ms, 1), ok(300*ms, 1), ok(400*ms, 4)),
			[]H2Limit{{101 * ms, 1}, {300 * ms, 10}}},
		{"okhttp", rules.H2OkHttp(), first, 2, waves(ok(101*ms, 1), ok(300*ms, 1), ok(301*ms, 4)),
			[]H2Limit{{101 * ms, 1}, {300 * ms, 10}}},
		{"go strict, every call rejected", rules.H2GoStrict(), all, 1,
			waves(ok(101*ms, 1), ok(300*ms, 1), ok(400*ms, 1), ok(500*ms, 1), ok(600*ms, 1), ok(700*ms, 1)),
			[]H2Limit{{101 * ms, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := SimulateH2(H2Scenario{Nodes: node, Starts: starts, Rejected: tt.rejected, Client: H2Client{Rule: tt.rule}})
			if got := p.NewConns(); got != tt.newConns {
				t.Errorf("new connections: got %d, want %d", got, tt.newConns)
			}
			if !reflect.DeepEqual(p.Waves, tt.waves) {
				t.Errorf("waves: got %v, want %v", p.Waves, tt.waves)
			}
			if !reflect.DeepEqual(p.Conns[0].Limits, tt.limits) {
				t.Errorf("limits of connection 0: got %v, want %v", p.Conns[0].Limits, tt.limits)
			}
		})
	}
}

func TestGoStrictBurst(t *testing.T) {
	tests := []struct {
		calls, limit int
		deadline     time.Duration
		want         H2StrictBurst
	}{
		// Up to the limit, one wave.
		{10, 10, time.Second, H2StrictBurst{Certain: true, MaxOK: 10, OKAt: 200 * ms, StalledEnd: time.Second}},
		// Between the limit and twice it, it depends on the first wave: documented values.
		{15, 10, time.Second, H2StrictBurst{MaxOK: 15, OKAt: 200 * ms, StalledEnd: time.Second}},
		{20, 10, time.Second, H2StrictBurst{MaxOK: 20, OKAt: 200 * ms, StalledEnd: time.Second}},
		// From 2 x limit + 1 on, a stall whatever the first wave: 25 - s1 - 1 >= 10 for s1 <= 10.
		{21, 10, time.Second, H2StrictBurst{Certain: true, Stalls: true, MaxOK: 10, OKAt: 200 * ms, StalledEnd: time.Second}},
		{250, 100, 5 * time.Second, H2StrictBurst{Certain: true, Stalls: true, MaxOK: 100, OKAt: 200 * ms, StalledEnd: 5 * time.Second}},
		// golang/go#70809's own case: a limit of 1 and two requests can stall; three must.
		{3, 1, 0, H2StrictBurst{Certain: true, Stalls: true, MaxOK: 1, OKAt: 200 * ms, StalledEnd: Forever}},
		// A deadline before the answer cuts every call.
		{5, 10, 100 * ms, H2StrictBurst{Certain: true, MaxOK: 0, OKAt: 200 * ms, StalledEnd: 100 * ms}},
	}
	for _, tt := range tests {
		if got := GoStrictBurst(tt.calls, tt.limit, 200*ms, tt.deadline); got != tt.want {
			t.Errorf("GoStrictBurst(%d, %d, 200ms, %v): got %+v, want %+v", tt.calls, tt.limit, tt.deadline, got, tt.want)
		}
	}
}

// TestSimulateH2StreamCost checks the client's per-stream cost: 6 calls at once, OkHttp's
// rule, a cap of 3, two nodes (10 and 50 ms), a set-up of 2 ms and 100 µs per stream. Both
// connections are ready at 2 ms; each then sends its streams one after another in the order
// they got their slots: calls 0-2 (node 0) leave at 2.1, 2.2, 2.3 ms and end 10 ms later;
// calls 3-5 (node 1) leave at 2.1, 2.2, 2.3 ms too and end 50 ms later. A call at 100 ms,
// alone, leaves 100 µs after it starts, on node 0's connection.
func TestSimulateH2StreamCost(t *testing.T) {
	us := time.Microsecond
	starts := []time.Duration{0, 0, 0, 0, 0, 0, 100 * ms}
	p := SimulateH2(H2Scenario{Nodes: []H2Node{{Latency: 10 * ms}, {Latency: 50 * ms}}, Starts: starts,
		Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 3, ConnectTime: 2 * ms, StreamCost: 100 * us}})
	want := []time.Duration{12100 * us, 12200 * us, 12300 * us, 52100 * us, 52200 * us, 52300 * us, 110100 * us}
	for i, c := range p.Calls {
		if c.End != want[i] || c.Outcome != vocab.OK {
			t.Errorf("call %d: ends at %v (%s), want %v (ok)", i, c.End, c.Outcome, want[i])
		}
	}
	if p.NewConns() != 2 {
		t.Errorf("%d new connections, want 2", p.NewConns())
	}
	// Without a stream cost the same burst ends at 2 + 10 and 2 + 50 ms.
	p = SimulateH2(H2Scenario{Nodes: []H2Node{{Latency: 10 * ms}, {Latency: 50 * ms}}, Starts: starts,
		Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 3, ConnectTime: 2 * ms}})
	if p.Calls[0].End != 12*ms || p.Calls[5].End != 52*ms {
		t.Errorf("no stream cost: calls end at %v and %v, want 12ms and 52ms", p.Calls[0].End, p.Calls[5].End)
	}
}
