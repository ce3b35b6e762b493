package model

import "math"

// SampleRank is the rank, 1 to n, of the p-quantile of n draws: the ceil(p x n)-th smallest.
func SampleRank(n int, p float64) int {
	return min(max(int(math.Ceil(p*float64(n)-1e-9)), 1), n)
}

// QuantileBand is the sampling band of the p-quantile of n independent draws (SampleRank's):
// it lies between the distribution's lo- and hi-quantiles with probability at least conf,
// each side missed with probability (1-conf)/2. The band holds for any continuous
// distribution, as the draw of rank r is below the u-quantile exactly when at least r of the
// n draws are, a binomial count. Out-of-range arguments give the whole range, 0 and 1.
func QuantileBand(n int, p, conf float64) (lo, hi float64) {
	if n < 1 || !(p > 0 && p < 1) || !(conf > 0 && conf < 1) {
		return 0, 1
	}
	r := SampleRank(n, p)
	solve := func(target float64) float64 {
		a, b := 0.0, 1.0
		for range 60 {
			if m := (a + b) / 2; binomAtLeast(n, r, m) < target {
				a = m
			} else {
				b = m
			}
		}
		return (a + b) / 2
	}
	miss := (1 - conf) / 2
	return solve(miss), solve(1 - miss)
}

// CountBand is the band of a binomial count, n trials at share u: at least lo and at most hi
// with probability at least conf, each side missed with probability (1-conf)/2.
func CountBand(n int, u, conf float64) (lo, hi int) {
	miss := (1 - conf) / 2
	for lo < n && binomAtLeast(n, lo+1, u) >= 1-miss {
		lo++
	}
	hi = n
	for hi > lo && binomAtLeast(n, hi, u) <= miss {
		hi--
	}
	return lo, hi
}

// binomAtLeast is P(X >= r) for X binomial over n trials at u, summed from the side of r
// away from the mode, where the terms only decrease.
func binomAtLeast(n, r int, u float64) float64 {
	switch {
	case r <= 0 || u >= 1:
		return 1
	case r > n || u <= 0:
		return 0
	case float64(r) > u*float64(n):
		return binomSum(n, r, u, 1)
	}
	return 1 - binomSum(n, r-1, u, -1)
}

// binomSum sums the binomial probabilities of k = from, from+dir, ... while they matter.
func binomSum(n, from int, u float64, dir int) float64 {
	lf := func(k int) float64 {
		v, _ := math.Lgamma(float64(k) + 1)
		return v
	}
	term := math.Exp(lf(n) - lf(from) - lf(n-from) + float64(from)*math.Log(u) + float64(n-from)*math.Log1p(-u))
	var sum float64
	for k := from; k >= 0 && k <= n && term > sum*1e-17; k += dir {
		sum += term
		if dir > 0 {
			term *= float64(n-k) / float64(k+1) * u / (1 - u)
		} else {
			term *= float64(k) / float64(n-k+1) * (1 - u) / u
		}
	}
	return sum
}
