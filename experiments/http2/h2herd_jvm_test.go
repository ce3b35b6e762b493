package http2

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/jvm"
	"github.com/labrun/labrun/internal/model"
)

// herdJVMLatency is the node's answer time in the real-library test: long enough that the
// first streams are in flight when the refused ones are sent again.
const herdJVMLatency = 200 * time.Millisecond

// herdJVMMargin is how much longer than the model's waves x latency the enqueued burst may
// take on the real library: the JVM loads and compiles OkHttp's classes during the first wave
// (about 250 ms measured on two cores), and every wave's connect-free round trip adds a little.
// herdWaveMargin bounds each later wave's first end against the first wave's: the class
// loading is behind it by then, so the spacing is the model's latency per wave, plus what
// each hand-off costs the Dispatcher (about 2 ms a wave measured) and a loaded machine's
// scheduling, herdWavePerWave more per wave.
const (
	herdJVMMargin   = 500 * time.Millisecond
	herdWaveMargin  = 20 * time.Millisecond
	herdWavePerWave = 4 * time.Millisecond
)

// herdJVM runs H2Burst.java in mode against a new node and returns the calls' outcomes
// counted, the total time and the node's stats.
func herdJVM(t *testing.T, rt jvm.Runtime, mode string) (map[string]int, []time.Duration, time.Duration, h2node.Stats) {
	t.Helper()
	n, err := h2node.New(h2node.WithMaxStreams(herdLimit), h2node.WithLatency(herdJVMLatency))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	out := runJava(t, rt, "testdata/H2Burst.java", mode, fmt.Sprint(herdCalls), n.URL+"/")
	counts := make(map[string]int)
	var total time.Duration
	var ends []time.Duration // of the calls answered
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var word string
		var ms int
		if _, err := fmt.Sscan(line, &word, &ms); err != nil {
			t.Fatalf("H2Burst.java printed %q: %v", line, err)
		}
		if word == "total" {
			total = time.Duration(ms) * time.Millisecond
			continue
		}
		counts[word]++
		if word == "ok" {
			ends = append(ends, time.Duration(ms)*time.Millisecond)
		}
	}
	slices.Sort(ends)
	return counts, ends, total, n.Stats()
}

// TestH2HerdMatchesOkHttp313 holds exp-h's OkHttp 3.13 burst rows to OkHttp 3.13.1 over h2c:
// 50 synchronous calls at once against a limit of 10 land within model.PredictH2Burst's
// bounds (connections dialled and kept, calls answered, the others failed with
// REFUSED_STREAM), and 50 enqueued calls go 5 at a time on one kept connection, in the
// model's waves x latency plus herdJVMMargin.
func TestH2HerdMatchesOkHttp313(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	rt := jvm.Require(t, jvm.OkHttp3)
	in := func(n int, s model.CountSpan) bool { return n >= s.Min && n <= s.Max }
	t.Run("sync", func(t *testing.T) {
		pred, err := model.PredictH2Burst(model.H2Burst{Calls: herdCalls, PeerLimit: herdLimit, Latency: herdJVMLatency})
		if err != nil {
			t.Fatal(err)
		}
		counts, _, _, st := herdJVM(t, rt, "sync")
		t.Logf("real: %v; %d dialled, %d kept, streams %v, %d refused on the wire", counts, st.Conns, carried(st), nonZero(st.Streams), st.Refused)
		if counts["ok"]+counts["refused"] != herdCalls {
			t.Errorf("outcomes %v: want only ok and refused", counts)
		}
		if !in(st.Conns, pred.Dialled) || !in(carried(st), pred.Kept) || !in(counts["ok"], pred.Answered) {
			t.Errorf("%d dialled, %d kept, %d answered; model %+v", st.Conns, carried(st), counts["ok"], pred)
		}
		if counts["ok"] != st.Requests {
			t.Errorf("%d calls ok, the node answered %d", counts["ok"], st.Requests)
		}
	})
	t.Run("enqueue", func(t *testing.T) {
		pred, err := model.PredictH2Burst(model.H2Burst{Calls: herdCalls, PeerLimit: herdLimit, Latency: herdJVMLatency, Enqueue: true})
		if err != nil {
			t.Fatal(err)
		}
		counts, ends, total, st := herdJVM(t, rt, "enqueue")
		t.Logf("real: %v in %v; %d dialled, %d kept, %d at once", counts, total, st.Conns, carried(st), st.MaxInFlight)
		if counts["ok"] != herdCalls || !in(carried(st), pred.Kept) || !in(st.Conns, pred.Dialled) || st.MaxInFlight != pred.AtOnce {
			t.Errorf("%v, %d dialled, %d kept, %d at once; model %+v", counts, st.Conns, carried(st), st.MaxInFlight, pred)
		}
		if total < pred.Total || total > pred.Total+herdJVMMargin {
			t.Errorf("took %v, want %v (%d waves of %v) to %v more", total, pred.Total, pred.Waves, herdJVMLatency, herdJVMMargin)
		}
		// Each wave's first end, after the first wave's, at the model's latency per wave. (The
		// Dispatcher starts a call as another ends, so a wave's later ends trail its first by
		// the first wave's connect: its first end is the wave's clock.)
		for w := 1; w < pred.Waves && len(ends) == herdCalls; w++ {
			first, this := ends[0], ends[w*pred.AtOnce]
			want := time.Duration(w) * herdJVMLatency
			if d := this - first - want; d < -herdWaveMargin || d > herdWaveMargin+time.Duration(w)*herdWavePerWave {
				t.Errorf("wave %d starts ending %v after the first; the model %v (ends %v)", w+1, this-first, want, ends)
			}
		}
	})
}
