// Package dist holds the seeded faults of the fault server and the model: whether request
// number n of a seed fails, and its delay drawn from a distribution, each a pure function of
// (seed, n), so that labrun can say before a run which requests will fail or be slow.
package dist

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// DefaultSeed is the seed of a request that names none.
const DefaultSeed = 1

// A stream per decision: a failure rate and a delay on one seed are independent.
const (
	failStream  = 0x6661696c // "fail"
	delayStream = 0x64656c61 // "dela"
)

// unit returns a number in [0, 1) that depends only on seed, n and stream: the first output
// of a PCG seeded with them, mixed first so that neighbouring numbers share no bits.
func unit(seed, n, stream uint64) float64 {
	src := rand.NewPCG(mix(seed^stream), mix(n+stream<<32))
	// Computed here rather than by rand.Float64, whose algorithm Go does not promise to keep.
	return float64(src.Uint64()>>11) / (1 << 53)
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Fails reports whether request number n of seed fails at rate (0 to 1). A number that fails
// at a rate fails at every higher rate.
func Fails(seed, n uint64, rate float64) bool {
	return unit(seed, n, failStream) < rate
}

// Failing returns the numbers from 1 to n that fail at rate under seed, in order.
func Failing(seed uint64, rate float64, n int) []int {
	out := []int{}
	for i := 1; i <= n; i++ {
		if Fails(seed, uint64(i), rate) {
			out = append(out, i)
		}
	}
	return out
}

// ParseRate reads a failure rate: a decimal number from 0 to 1.
func ParseRate(s string) (float64, error) {
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(r) || r < 0 || r > 1 || strings.ContainsAny(s, "xXpPiInN_") {
		return 0, fmt.Errorf("must be a decimal number from 0 to 1, got %q", s)
	}
	return r, nil
}

type Kind string

const (
	Fixed     Kind = "fixed"
	Uniform   Kind = "uniform"
	LogNormal Kind = "lognormal"
	Table     Kind = "table"
)

// Max bounds every duration a distribution takes or draws.
const Max = 24 * time.Hour

const MaxPoints = 16

// maxSigma bounds a lognormal's sigma (at 4 the p99.99 is 3.5 million medians).
const maxSigma = 4

const z99 = 2.3263478740408408

// Dist is a delay distribution. The zero value is a fixed delay of 0.
type Dist struct {
	Kind Kind
	// A is fixed's delay and lognormal's median; A and B are uniform's bounds.
	A, B time.Duration
	// Sigma is lognormal's shape: the p99 is A x e^(2.326 x Sigma).
	Sigma float64
	// Points are table's quantiles, P from 0 to 1 and D not decreasing, the first at P 0 and
	// the last at P 1; between two the delay is linear in P.
	Points []Point
}

// Point is a table's quantile: a share P of the draws is at most D.
type Point struct {
	P float64
	D time.Duration
}

// Grammar is the form Parse reads, for help texts.
const Grammar = "fixed:DUR, uniform:MIN:MAX, lognormal:MEDIAN:SIGMA, lognormal:P50:P99 or table:p0=DUR,p50=DUR,...,p100=DUR"

// Parse reads a distribution: fixed:80ms, uniform:50ms:150ms, lognormal:80ms:0.4 (the median
// and sigma), lognormal:80ms:203ms (the p50 and the p99), or table:p0=10ms,p50=80ms,p100=1s
// (percentiles from p0 to p100, increasing, with delays that do not decrease).
func Parse(s string) (Dist, error) {
	kind, rest, _ := strings.Cut(s, ":")
	args := strings.Split(rest, ":")
	d := Dist{Kind: Kind(kind)}
	var err error
	switch d.Kind {
	case Fixed:
		if len(args) != 1 {
			return Dist{}, fmt.Errorf("fixed takes one duration (fixed:80ms), got %q", s)
		}
		d.A, err = duration(args[0])
	case Uniform:
		if len(args) != 2 {
			return Dist{}, fmt.Errorf("uniform takes a minimum and a maximum (uniform:50ms:150ms), got %q", s)
		}
		if d.A, err = duration(args[0]); err == nil {
			d.B, err = duration(args[1])
		}
		if err == nil && d.B < d.A {
			err = fmt.Errorf("uniform's maximum %v is below its minimum %v", d.B, d.A)
		}
	case LogNormal:
		err = d.parseLogNormal(s, args)
	case Table:
		err = d.parseTable(rest)
	default:
		return Dist{}, fmt.Errorf("unknown distribution %q, want %s", s, Grammar)
	}
	if err != nil {
		return Dist{}, err
	}
	return d, nil
}

func (d *Dist) parseLogNormal(s string, args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("lognormal takes a median and a sigma (lognormal:80ms:0.4) or a p50 and a p99 (lognormal:80ms:203ms), got %q", s)
	}
	var err error
	if d.A, err = duration(args[0]); err != nil {
		return err
	}
	if d.A == 0 {
		return errors.New("lognormal's median must be positive")
	}
	if p99, err := time.ParseDuration(args[1]); err == nil {
		if p99 <= d.A || p99 > Max {
			return fmt.Errorf("lognormal's p99 must lie above its p50 (%v) and at most %v, got %v", d.A, Max, p99)
		}
		d.Sigma = math.Log(float64(p99)/float64(d.A)) / z99
	} else if d.Sigma, err = strconv.ParseFloat(args[1], 64); err != nil || !(d.Sigma > 0 && d.Sigma <= maxSigma) {
		return fmt.Errorf("lognormal's sigma must be a number above 0 and at most %d, or a p99 duration, got %q", maxSigma, args[1])
	}
	return nil
}

func (d *Dist) parseTable(rest string) error {
	items := strings.Split(rest, ",")
	if len(items) < 2 || len(items) > MaxPoints {
		return fmt.Errorf("table takes 2 to %d percentiles from p0 to p100 (table:p0=10ms,p50=80ms,p100=1s), got %d", MaxPoints, len(items))
	}
	for i, it := range items {
		ps, ds, ok := strings.Cut(it, "=")
		pct, err := strconv.ParseFloat(strings.TrimPrefix(ps, "p"), 64)
		if !ok || !strings.HasPrefix(ps, "p") || err != nil || !(pct >= 0 && pct <= 100) {
			return fmt.Errorf("table: %q is not a percentile such as p50=80ms", it)
		}
		dur, err := duration(ds)
		if err != nil {
			return fmt.Errorf("table: %s: %w", ps, err)
		}
		pt := Point{P: pct / 100, D: dur}
		if i > 0 && (pt.P <= d.Points[i-1].P || pt.D < d.Points[i-1].D) {
			return fmt.Errorf("table: %q must come after %s with a higher percentile and a delay no shorter", it, items[i-1])
		}
		d.Points = append(d.Points, pt)
	}
	if d.Points[0].P != 0 || d.Points[len(d.Points)-1].P != 1 {
		return errors.New("table must start at p0 and end at p100: the least and the greatest delay")
	}
	return nil
}

func duration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 || v > Max {
		return 0, fmt.Errorf("%q is not a duration from 0 to %v such as 80ms", s, Max)
	}
	return v, nil
}

func (d Dist) String() string {
	switch d.Kind {
	case Uniform:
		return fmt.Sprintf("uniform:%v:%v", d.A, d.B)
	case LogNormal:
		return fmt.Sprintf("lognormal:%v:%s", d.A, strconv.FormatFloat(d.Sigma, 'g', 6, 64))
	case Table:
		parts := make([]string, len(d.Points))
		for i, p := range d.Points {
			parts[i] = fmt.Sprintf("p%s=%v", strconv.FormatFloat(p.P*100, 'g', -1, 64), p.D)
		}
		return "table:" + strings.Join(parts, ",")
	default:
		return fmt.Sprintf("fixed:%v", d.A)
	}
}

// Quantile returns the delay a share p (0 to 1) of the draws does not exceed, at most Max.
func (d Dist) Quantile(p float64) time.Duration {
	p = min(max(p, 0), 1)
	var v float64
	switch d.Kind {
	case Uniform:
		v = float64(d.A) + p*float64(d.B-d.A)
	case LogNormal:
		v = float64(d.A) * math.Exp(d.Sigma*math.Sqrt2*math.Erfinv(2*p-1))
	case Table:
		i := 1
		for i < len(d.Points)-1 && d.Points[i].P < p {
			i++
		}
		lo, hi := d.Points[i-1], d.Points[i]
		v = float64(lo.D) + (p-lo.P)/(hi.P-lo.P)*float64(hi.D-lo.D)
	default:
		v = float64(d.A)
	}
	if math.IsNaN(v) || v >= float64(Max) {
		return Max
	}
	return time.Duration(math.Round(v))
}

// CDF returns the share of the draws at most t.
func (d Dist) CDF(t time.Duration) float64 {
	switch d.Kind {
	case Uniform:
		if d.B == d.A {
			return step(t >= d.A)
		}
		return min(max(float64(t-d.A)/float64(d.B-d.A), 0), 1)
	case LogNormal:
		if t <= 0 {
			return 0
		}
		return 0.5 * math.Erfc(-math.Log(float64(t)/float64(d.A))/(d.Sigma*math.Sqrt2))
	case Table:
		last := d.Points[len(d.Points)-1]
		if t >= last.D {
			return 1
		}
		var out float64
		for i := 1; i < len(d.Points); i++ {
			lo, hi := d.Points[i-1], d.Points[i]
			if t >= lo.D && hi.D > lo.D {
				out = lo.P + min(float64(t-lo.D)/float64(hi.D-lo.D), 1)*(hi.P-lo.P)
			}
		}
		return out
	default:
		return step(t >= d.A)
	}
}

func step(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Draw returns request number n's delay under seed.
func (d Dist) Draw(seed, n uint64) time.Duration {
	return d.Quantile(unit(seed, n, delayStream))
}
