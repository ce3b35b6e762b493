package model

import "math"

// SampleRank is the rank, 1 to n, of the p-quantile of n draws: ceil(p x n).
func SampleRank(n int, p float64) int {
	return min(max(int(math.Ceil(p*float64(n)-1e-9)), 1), n)
}

// QuantileBand is the band of the p-quantile of n draws: between the lo- and hi-quantiles of
// any continuous distribution but with (1-conf)/2 each side, the r-th draw being below the
// u-quantile when r draws are. Bad arguments give 0 and 1.
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

// CountBand bounds a binomial count, n trials at u, as QuantileBand.
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

// binomAtLeast is P(X >= r), X binomial(n, u), summed away from the mode.
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
