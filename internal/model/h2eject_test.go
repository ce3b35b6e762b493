package model

import (
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// rounds returns the starts of n rounds of per calls at once, every apart.
func rounds(n, per int, every time.Duration) []time.Duration {
	var s []time.Duration
	for r := range n {
		for range per {
			s = append(s, time.Duration(r)*every)
		}
	}
	return s
}

// atBadAvg is exp-h's ejection rows with --pushes 50 --peer-limit 10 --latency 200ms: three
// nodes answering in 200 ms, the scaled threshold, 10 streams a connection, 4 rounds of 25.
// Each round puts 10 calls on node 1, 10 on node 2, 5 on node 3, each connection's calls
// ending together.
func atBadAvg(latency time.Duration, o H2Overhead) H2Scenario {
	ns := make([]H2Node, 3)
	for i := range ns {
		ns[i] = H2Node{Latency: latency, MaxStreams: 10}
	}
	return H2Scenario{Nodes: ns, Starts: rounds(4, 25, 450*ms),
		Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 60, Eject: new(rules.APNsScaled()), Overhead: o, Handshake: true}}
}

// TestSimulateH2EndsEjectAtThreshold: with calls of 200.3 to 205 ms, averages of 200.3 to
// 200.9 ms (one slow call moves an average by little), nodes 1 and 2 average
// above 200 ms for certain, and from their 21st call (round 3) on, a call slower than the
// average ejects: which call is the jitter's. Fewest keeps every connection (3); Most ejects
// nodes 1 and 2 at their first call of round 3, so round 4 fills node 3's connection and
// opens two more (to nodes 1 and 2 again, in route order): 5. Their statistics kept, those
// two are ejected at their first call too, and node 3 passes 20 calls in round 4: ejections
// too late to open anything.
func TestSimulateH2EndsEjectAtThreshold(t *testing.T) {
	e := SimulateH2Ends(atBadAvg(200*ms, H2Overhead{Min: 300 * time.Microsecond, MeanMax: 900 * time.Microsecond, Max: 5 * ms}))
	if n := e.Fewest.NewConns(); n != 3 {
		t.Errorf("fewest: %d new connections, want 3", n)
	}
	if n := e.Most.NewConns(); n != 5 {
		t.Errorf("most: %d new connections, want 5", n)
	}
	for _, c := range e.Fewest.Conns {
		if c.EjectedAfter >= 0 {
			t.Errorf("fewest ejected %+v, want none", c)
		}
	}
	var nodes []int
	for _, j := range e.Jitter {
		nodes = append(nodes, j.Node)
		if j.Threshold != 200*ms || j.AvgLo != 200*ms+300*time.Microsecond || j.AvgHi != 200*ms+900*time.Microsecond {
			t.Errorf("jitter ejection %+v: want the 200 ms threshold, averages 200.3 to 200.9 ms", j)
		}
		if c := e.Most.Conns[j.Conn]; c.EjectedAfter != j.Call || c.Node != j.Node {
			t.Errorf("jitter ejection %+v: connection %+v", j, c)
		}
	}
	if !reflect.DeepEqual(nodes, []int{0, 1, 2, 0, 1}) {
		t.Errorf("most: the jitter ejected nodes %v, want 0, 1 (round 3), then 2, 0, 1 (round 4)", nodes)
	}
	if c := e.Most.Conns[0]; c.EjectedAfter < 50 || c.EjectedAfter >= 60 {
		t.Errorf("most: node 1's connection ejected after call %d, want one of round 3's first 10 (50 to 59)", c.EjectedAfter)
	}
}

// TestSimulateH2EndsEjectBelowThreshold: at 190 ms, no average can exceed 200 ms with 0.9 ms
// of overhead (though one call may take 5 ms more), and the second rule (above 50 ms) needs more than 100 calls in all, which the
// 100 calls never pass: the jitter decides nothing.
func TestSimulateH2EndsEjectBelowThreshold(t *testing.T) {
	s := atBadAvg(190*ms, H2Overhead{Min: 300 * time.Microsecond, MeanMax: 900 * time.Microsecond, Max: 5 * ms})
	e := SimulateH2Ends(s)
	if !reflect.DeepEqual(e.Fewest, e.Most) || len(e.Jitter) > 0 || e.Fewest.NewConns() != 3 {
		t.Errorf("got fewest %d, most %d new connections, jitter %+v; want 3 at both ends, nothing to the jitter",
			e.Fewest.NewConns(), e.Most.NewConns(), e.Jitter)
	}
	if p := SimulateH2(s); !reflect.DeepEqual(p, e.Fewest) {
		t.Errorf("SimulateH2 differs from the ends it agrees with")
	}
}

// TestSimulateH2EndsEjectCertain: a node that turns slow is ejected at the same call at both
// ends: its 100 ms call is slower than its 40 ms average by more than any jitter
// (TestSimulateH2Ejection's scenario, with 0.3 to 0.9 ms of overhead).
func TestSimulateH2EndsEjectCertain(t *testing.T) {
	s := H2Scenario{
		Nodes:  []H2Node{{Latency: 10 * ms}, {Latency: 10 * ms, SlowAfter: 2, SlowLatency: 100 * ms}},
		Starts: pairs(5, 200*ms),
		Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 1, Eject: &H2Ejection{BadCalls: 2, BadAvg: 20 * ms, MinCalls: 1 << 30, SlowAvg: time.Hour},
			Overhead: H2Overhead{Min: 300 * time.Microsecond, MeanMax: 900 * time.Microsecond, Max: 5 * ms}},
	}
	e := SimulateH2Ends(s)
	if !reflect.DeepEqual(e.Fewest, e.Most) || len(e.Jitter) > 0 {
		t.Errorf("the ends differ (jitter %+v)", e.Jitter)
	}
	if c := e.Fewest.Conns[1]; c.EjectedAfter != 5 {
		t.Errorf("node 2's connection: %+v, want ejected after call 5", c)
	}
}

// TestSimulateH2EndsEjectNoOverhead: without overhead the ends are SimulateH2's prediction.
func TestSimulateH2EndsEjectNoOverhead(t *testing.T) {
	s := atBadAvg(200*ms, H2Overhead{})
	e := SimulateH2Ends(s)
	if p := SimulateH2(s); !reflect.DeepEqual(p, e.Fewest) || !reflect.DeepEqual(p, e.Most) || len(e.Jitter) > 0 {
		t.Errorf("the ends differ from SimulateH2 without overhead")
	}
}

func TestSimulateH2EndsEjectPanics(t *testing.T) {
	for _, o := range []H2Overhead{{Min: -1}, {Min: 2 * ms, MeanMax: 2 * ms, Max: ms}, {Min: 2 * ms, MeanMax: ms, Max: 3 * ms}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("overhead %+v: no panic", o)
				}
			}()
			SimulateH2Ends(atBadAvg(200*ms, o))
		}()
	}
}

// TestSimulateH2EndsEjectCorners: exp-h's ejection rows at --latency 50ms (the second
// rule's threshold), rounds of 90: node 1 answers 60 calls in 50 ms, then in 300 ms; node 2
// takes 30 a round. With a loaded machine's jitter (averages up to 22 ms over the
// latency), node 1's ejection in round 2 is the jitter's too. Ejecting none keeps node 1
// until round 3 (the cap's 60 slow calls and its connection's next 60); ejecting every node
// sends round 3 to node 3 and then, in the rotation, to node 1 again; ejecting node 2 alone
// keeps node 1 until round 4. Only the corners that eject node 1 and keep node 2 stop node 1
// after round 2, as a measured run did: the two outer corners do not bound its last round.
func TestSimulateH2EndsEjectCorners(t *testing.T) {
	ns := []H2Node{{Latency: 50 * ms, SlowAfter: 60, SlowLatency: 300 * ms}, {Latency: 50 * ms}, {Latency: 50 * ms}}
	e := SimulateH2Ends(H2Scenario{Nodes: ns, Starts: rounds(4, 90, 450*ms),
		Client: H2Client{Rule: rules.H2OkHttp(), AllocationLimit: 60, Eject: new(rules.APNsScaled()), Handshake: true,
			Overhead: H2Overhead{Min: 350 * time.Microsecond, MeanMax: 22 * ms, Max: 32 * ms}}})
	if len(e.Corners) != 8 {
		t.Fatalf("%d corners, want 8 (every set of 3 nodes)", len(e.Corners))
	}
	last := func(p H2Prediction) int { return p.LastCall[0]/90 + 1 }
	if last(e.Fewest) != 3 || last(e.Most) != 3 {
		t.Errorf("node 1's last round: %d with none ejected by the jitter, %d with all; want 3 and 3", last(e.Fewest), last(e.Most))
	}
	rounds := map[int]bool{}
	for _, c := range e.Corners {
		rounds[last(c)] = true
	}
	if !rounds[2] || !rounds[4] {
		t.Errorf("node 1's last rounds over the corners: %v, want 2 (node 1 ejected, node 2 kept) and 4 among them", rounds)
	}
	if e.Jitter[0].Node != 1 || e.Jitter[0].Threshold != 50*ms {
		t.Errorf("jitter %+v: want node 2 at 50 ms first", e.Jitter)
	}
}
