package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSampleRank(t *testing.T) {
	for _, tt := range []struct {
		n    int
		p    float64
		want int
	}{{1000, 0.99, 990}, {1000, 0.5, 500}, {999, 0.5, 500}, {50, 0.99, 50}, {1, 0.5, 1}, {100, 0.001, 1}} {
		if got := SampleRank(tt.n, tt.p); got != tt.want {
			t.Errorf("SampleRank(%d, %v) = %d, want %d", tt.n, tt.p, got, tt.want)
		}
	}
}

// TestBinomAtLeast holds the sums to a direct one on small counts and to the normal
// approximation on a large one.
func TestBinomAtLeast(t *testing.T) {
	for _, u := range []float64{0.01, 0.3, 0.5, 0.97} {
		for r := 0; r <= 13; r++ {
			var want float64
			for k := r; k <= 12; k++ {
				want += binom(12, k) * math.Pow(u, float64(k)) * math.Pow(1-u, float64(12-k))
			}
			if got := binomAtLeast(12, r, u); math.Abs(got-want) > 1e-12 {
				t.Errorf("P(X >= %d), n 12, u %v: got %v, want %v", r, u, got, want)
			}
		}
	}
	// n 100,000 at 0.5: P(X >= mean + 2 sd) is about 2.3%.
	if got := binomAtLeast(100000, 50000+316, 0.5); math.Abs(got-0.0228) > 0.001 {
		t.Errorf("P(X >= mean + 2 sd) = %v, want about 0.0228", got)
	}
}

// TestQuantileBandCovers draws 2,000 samples of 300 uniform draws: the sample p90 falls in
// the 90% band 90% of the time, within 3 binomial sigma, and misses each side about equally.
func TestQuantileBandCovers(t *testing.T) {
	const n, trials, conf = 300, 2000, 0.9
	lo, hi := QuantileBand(n, 0.9, conf)
	if !(lo < 0.9 && 0.9 < hi && hi < 1) {
		t.Fatalf("band %v to %v does not hold 0.9", lo, hi)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	below, above := 0, 0
	x := make([]float64, n)
	for range trials {
		for i := range x {
			x[i] = rng.Float64()
		}
		slices.Sort(x)
		switch q := x[SampleRank(n, 0.9)-1]; {
		case q < lo:
			below++
		case q > hi:
			above++
		}
	}
	sd := math.Sqrt(conf * (1 - conf) / trials)
	if in := 1 - float64(below+above)/trials; math.Abs(in-conf) > 3*sd {
		t.Errorf("in the band %.3f of the time, want %.2f +- %.3f", in, conf, 3*sd)
	}
	if d := math.Abs(float64(below - above)); d > 3*math.Sqrt(float64(below+above)) {
		t.Errorf("missed below %d times, above %d: want about equal", below, above)
	}
}

// TestQuantileBandShape: the median's band is symmetric, and more draws narrow a band.
func TestQuantileBandShape(t *testing.T) {
	lo, hi := QuantileBand(1001, 0.5, 0.999)
	if math.Abs((0.5-lo)-(hi-0.5)) > 1e-6 {
		t.Errorf("median band %v to %v is not symmetric", lo, hi)
	}
	// The normal approximation: 3.29 sd of a share at 0.5 over 1,001 draws.
	if w, want := hi-lo, 2*3.29*math.Sqrt(0.25/1001); math.Abs(w-want) > 0.005 {
		t.Errorf("median band width %v, want about %v", w, want)
	}
	prev := 1.0
	for _, n := range []int{100, 1000, 4000} {
		lo, hi := QuantileBand(n, 0.99, 0.999)
		if hi-lo >= prev || lo >= 0.99 || hi <= 0.99 {
			t.Errorf("n %d: p99 band %v to %v, want around 0.99 and narrower than %v", n, lo, hi, prev)
		}
		prev = hi - lo
	}
	if lo, hi := QuantileBand(0, 0.5, 0.9); lo != 0 || hi != 1 {
		t.Errorf("no draws: band %v to %v, want 0 to 1", lo, hi)
	}
}

func TestCountBand(t *testing.T) {
	lo, hi := CountBand(1000, 0.1, 0.999)
	// 100 +- 3.29 sd, sd 9.5.
	if lo < 66 || lo > 72 || hi < 128 || hi > 134 {
		t.Errorf("count band %d to %d, want about 69 to 131", lo, hi)
	}
	if lo, hi := CountBand(10, 0, 0.999); lo != 0 || hi != 0 {
		t.Errorf("share 0: %d to %d, want 0 to 0", lo, hi)
	}
	if lo, hi := CountBand(10, 1, 0.999); lo != 10 || hi != 10 {
		t.Errorf("share 1: %d to %d, want 10 to 10", lo, hi)
	}
}
