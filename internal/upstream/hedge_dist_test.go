package upstream

import (
	"context"
	"io"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/dist"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/testenv"
)

// TestHedgeOverDistribution holds the tail question's hedging answer to a live hedge: 1,500
// calls to a downstream drawing lognormal:20ms:0.4, hedged after 30 ms (about its p85). The
// share of calls slower than the model's hedged p99 is 1% within 3 binomial sigma, with 5 ms
// of the machine's lateness either side, and the copies sent are the model's share within
// theirs (plus the first answers the margin could make late).
func TestHedgeOverDistribution(t *testing.T) {
	testenv.Slow(t, "1,500 hedged calls")
	testenv.Timing(t)
	d, _ := dist.Parse("lognormal:20ms:0.4")
	const n, after = 1500, 30 * time.Millisecond
	want := model.TailQuestion{Dist: d, Hedge: after}.Answer()
	s, err := fakesrv.New(fakesrv.WithPreciseTiming(false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	get := func(ctx context.Context, _ int) (struct{}, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/delay?delay-dist=lognormal:20ms:0.4&seed=5", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return struct{}{}, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return struct{}{}, err
	}
	var mu sync.Mutex
	var took []time.Duration
	copies := 0
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range jobs {
				start := time.Now()
				_, sent, err := Hedge(context.Background(), after, get)
				el := time.Since(start)
				mu.Lock()
				if err == nil {
					took = append(took, el)
				}
				copies += sent
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(took) != n {
		t.Fatalf("%d of %d calls answered", len(took), n)
	}
	const margin = 5 * time.Millisecond
	over := func(limit time.Duration) float64 {
		k := 0
		for _, x := range took {
			if x > limit {
				k++
			}
		}
		return float64(k) / n
	}
	band := 3 * math.Sqrt(0.01*0.99/n)
	if hi, lo := over(want.HedgeP99-margin), over(want.HedgeP99+margin); hi < 0.01-band || lo > 0.01+band {
		t.Errorf("calls slower than the model's hedged p99 %v: %.2f%% (%v earlier) to %.2f%% (%v later), want 1%% +- %.2f%%",
			want.HedgeP99, 100*hi, margin, 100*lo, margin, 100*band)
	} else {
		t.Logf("hedged p99 %v: %.2f%% to %.2f%% of the calls slower (+-%v)", want.HedgeP99, 100*lo, 100*hi, margin)
	}
	extra := want.HedgeExecutions - 1
	// A first answer up to margin late sends a copy the model does not.
	late := d.CDF(after) - d.CDF(after-margin)
	if got, sd := float64(copies)/n-1, math.Sqrt(extra*(1-extra)/n); got < extra-3*sd || got > extra+3*sd+late {
		t.Errorf("copies per call %.3f, want %.3f", 1+got, want.HedgeExecutions)
	} else {
		t.Logf("copies per call %.3f, model %.3f", 1+got, want.HedgeExecutions)
	}
}
