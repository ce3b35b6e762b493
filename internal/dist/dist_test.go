package dist

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFailingIsPureAndNested(t *testing.T) {
	a, b := Failing(7, 0.1, 1000), Failing(7, 0.1, 1000)
	if !slices.Equal(a, b) {
		t.Fatal("two calls disagree")
	}
	// The binomial band: 100 +- 3 sigma (sigma = sqrt(1000 x 0.1 x 0.9) = 9.5).
	if len(a) < 72 || len(a) > 128 {
		t.Errorf("seed 7 rate 0.1: %d of 1000 fail, want 100 +- 28", len(a))
	}
	wider := Failing(7, 0.2, 1000)
	for _, n := range a {
		if !slices.Contains(wider, n) {
			t.Errorf("number %d fails at 0.1 but not at 0.2", n)
		}
	}
	if other := Failing(8, 0.1, 1000); slices.Equal(a, other) {
		t.Error("seeds 7 and 8 fail the same numbers")
	}
	if got := Failing(7, 0, 1000); len(got) != 0 {
		t.Errorf("rate 0: %d fail", len(got))
	}
	if got := Failing(7, 1, 1000); len(got) != 1000 {
		t.Errorf("rate 1: %d fail, want 1000", len(got))
	}
}

// TestUnitIsUniform: the share below x over 100,000 numbers, within 4 sigma, and no
// correlation between a number's failure and its delay.
func TestUnitIsUniform(t *testing.T) {
	const n = 100_000
	for _, x := range []float64{0.01, 0.1, 0.5, 0.9} {
		below, both := 0, 0
		for i := uint64(1); i <= n; i++ {
			f := unit(3, i, failStream) < x
			if f {
				below++
			}
			if f && unit(3, i, delayStream) < x {
				both++
			}
		}
		sigma := math.Sqrt(n * x * (1 - x))
		if math.Abs(float64(below)-n*x) > 4*sigma {
			t.Errorf("share below %v: %d of %d", x, below, n)
		}
		want := n * x * x
		if math.Abs(float64(both)-want) > 4*math.Sqrt(want) {
			t.Errorf("both streams below %v: %d, want about %.0f", x, both, want)
		}
	}
}

func TestLogNormal(t *testing.T) {
	d, err := Parse("lognormal:80ms:0.4")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Quantile(0.5); got != 80*time.Millisecond {
		t.Errorf("p50 = %v, want 80ms", got)
	}
	if got := d.Quantile(0.99); got.Round(time.Millisecond) != 203*time.Millisecond {
		t.Errorf("p99 = %v, want about 203ms", got)
	}
	if got := 1 - d.CDF(150*time.Millisecond); math.Abs(got-0.058) > 0.001 {
		t.Errorf("P(> 150ms) = %.4f, want about 0.058", got)
	}
	byP99, err := Parse("lognormal:80ms:203ms")
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(byP99.Sigma-0.4) > 0.002 {
		t.Errorf("sigma from p99 203ms = %v, want about 0.4", byP99.Sigma)
	}
}

func TestQuantileAndCDFAgree(t *testing.T) {
	for _, s := range []string{"fixed:80ms", "uniform:50ms:150ms", "lognormal:80ms:0.4", "table:p0=10ms,p50=80ms,p99=200ms,p100=1s", "table:p0=0s,p50=0s,p100=10ms"} {
		d, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if d.String() != s && d.Kind != LogNormal {
			t.Errorf("String() = %q, want %q", d.String(), s)
		}
		for _, p := range []float64{0.1, 0.5, 0.9, 0.99} {
			q := d.Quantile(p)
			if c := d.CDF(q); c < p-1e-6 {
				t.Errorf("%s: CDF(Quantile(%v) = %v) = %v", s, p, q, c)
			}
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{"", "normal:1s", "fixed:", "fixed:-1s", "fixed:48h", "uniform:2s:1s", "uniform:1s",
		"lognormal:0s:0.4", "lognormal:80ms:0", "lognormal:80ms:5", "lognormal:80ms:NaN", "lognormal:80ms:70ms",
		"table:p0=1s", "table:p10=1s,p100=2s", "table:p0=1s,p90=2s", "table:p0=2s,p100=1s", "table:p0=1s,p0=2s,p100=3s",
		"table:p0=1s,x=2s,p100=3s", "table:p0=1s,p101=2s", "table:" + strings.Repeat("p0=1s,", 20) + "p100=1s"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	for _, s := range []string{"", "-0.1", "1.5", "NaN", "Inf", "0x1p-3", "ten"} {
		if _, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) accepted", s)
		}
	}
}

// TestDrawSample: 2,000 draws of lognormal:80ms:0.4 have their p50 and p99 where the
// distribution has them, within the sampling band of the order statistics.
func TestDrawSample(t *testing.T) {
	d, _ := Parse("lognormal:80ms:0.4")
	var xs []time.Duration
	for n := uint64(1); n <= 2000; n++ {
		xs = append(xs, d.Draw(7, n))
	}
	slices.Sort(xs)
	// Order statistic k of n at quantile p has a standard deviation of sqrt(n p (1-p)) ranks.
	for _, c := range []struct{ p, band float64 }{{0.5, 3 * math.Sqrt(2000*0.25)}, {0.99, 3 * math.Sqrt(2000*0.99*0.01)}} {
		lo, hi := d.Quantile(c.p-c.band/2000), d.Quantile(c.p+c.band/2000)
		got := xs[int(c.p*2000)-1]
		if got < lo || got > hi {
			t.Errorf("p%v of 2000 draws = %v, want %v to %v", c.p*100, got, lo, hi)
		}
	}
}
