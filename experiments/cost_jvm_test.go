package experiments

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/jvm"
	"github.com/labrun/labrun/internal/model"
)

// TestExchangeCostRealLibraries reports what an exchange costs the real HttpClient 5.2.1 and
// OkHttp 3.13.1 beyond the server's time, which the model leaves out (docs/experiments.md,
// "What an exchange costs the JVM clients"): 30 GETs in sequence on a pooled connection to a
// server that answers at once, then exp-b's waves scaled down (20 calls at once, 100 ms
// each, through the library's default pool). It logs each sequential exchange's median and
// 90th percentile and each wave's end less the model's; it fails only when the counts differ
// (the calls' outcomes, how many waves), since the gap it reports is the machine's as much as
// the library's.
func TestExchangeCostRealLibraries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM per library")
	}
	const calls, delay, seq = 20, 100 * time.Millisecond, 30
	for _, l := range []struct{ profile, name string }{{ProfileHC5, "hc5"}, {ProfileOkHttp, "okhttp"}} {
		t.Run(l.profile, func(t *testing.T) {
			rt := jvm.Require(t, jvm.HttpClient5, jvm.OkHttp3)
			srv, quick, jit := testServer(t), testServer(t), testServer(t)
			beh := fakesrv.Behaviour{Delay: delay}
			out, err := rt.Run(t.Context(), jvm.Program{Source: "testdata/ExchangeCost.java", Libs: []jvm.Library{jvm.HttpClient5, jvm.OkHttp3}},
				l.name, jit.URL+fakesrv.Behaviour{Delay: 20 * time.Millisecond}.Path(), strconv.Itoa(seq), quick.URL+"/delay", strconv.Itoa(calls), srv.URL+beh.Path())
			if err != nil {
				t.Fatal(err)
			}
			var seqMs, ends []float64
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var o string
				var ms float64
				if _, err := fmt.Sscanf(line, "%s %f", &o, &ms); err != nil || (o != "ok" && o != "seq") {
					t.Fatalf("bad line %q in %s", line, out)
				}
				if o == "seq" {
					seqMs = append(seqMs, ms)
				} else {
					ends = append(ends, ms)
				}
			}
			sort.Float64s(seqMs)
			sort.Float64s(ends)
			if len(seqMs) != seq || len(ends) != calls {
				t.Fatalf("got %d sequential exchanges and %d calls, want %d and %d: %s", len(seqMs), len(ends), seq, calls, out)
			}
			t.Logf("an exchange on a pooled connection, server instant: median %.2f ms, 90th percentile %.2f ms", seqMs[seq/2], seqMs[seq*9/10])
			b, err := lab.Build(l.profile, lab.Spec{})
			if err != nil {
				t.Fatal(err)
			}
			b.C.Close()
			preds := model.Simulate(model.Scenario{Calls: calls, Pool: b.ModelPool(calls), Downstream: downstream(beh), Limits: b.Limits})
			var want []time.Duration
			for _, p := range preds {
				want = append(want, p.Total)
			}
			slices.Sort(want)
			waves := 0
			for i := 0; i < calls; {
				j := i
				for j < calls && want[j] == want[i] {
					j++
				}
				waves++
				w := float64(want[i].Microseconds()) / 1000
				t.Logf("wave %d (%d calls): the model %.0f ms; the real library's first end %+.1f ms, its last %+.1f ms", waves, j-i, w, ends[i]-w, ends[j-1]-w)
				if i > 0 && ends[i-1] > ends[i]-float64(delay.Milliseconds())/2 {
					t.Errorf("wave %d began before the wave before it ended: ends %v", waves, ends)
				}
				i = j
			}
		})
	}
}
