// Package stats holds the summary figures the benchmarks and the bookie
// agent's rules compute over repeated measurements.
package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Median is the median of v (the mean of the two middle values for an
// even count), 0 for none; v is not modified.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// tQuantile975 is Student's t distribution's 97.5% quantile for 1–30
// degrees of freedom (index df−1).
var tQuantile975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// T975 is Student's t 97.5% quantile for df degrees of freedom (the
// half-width factor of a two-sided 95% interval); +Inf for df < 1. Past
// 30 it uses the Cornish–Fisher expansion around the normal 1.96.
func T975(df int) float64 {
	switch {
	case df < 1:
		return math.Inf(1)
	case df <= len(tQuantile975):
		return tQuantile975[df-1]
	}
	const z = 1.959964
	return z + (z*z*z+z)/(4*float64(df))
}

// MeanCI95 is the mean of v and the half-width of its two-sided 95%
// Student-t confidence interval (the sample standard deviation over √n
// times T975(n−1)); the half-width is +Inf for fewer than two values.
func MeanCI95(v []float64) (mean, half float64) {
	n := len(v)
	if n == 0 {
		return 0, math.Inf(1)
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, math.Inf(1)
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	return mean, T975(n-1) * sd / math.Sqrt(float64(n))
}

// BootstrapInterval is a percentile bootstrap interval, at level (0.9 for
// the 5th to 95th percentile), of a statistic over n units: stat is
// called with resamples index slices of length n drawn from 0..n−1 with
// replacement (seeded by seed, so an interval can be reproduced) and the
// interval is the percentiles of what it returns; NaN results are
// skipped. The units are whatever the caller resamples together — in a
// benchmark that alternates two tools, one round (both tools' runs), so
// that the pairing survives the resampling. It returns NaN, NaN for n < 2
// or when every result is NaN.
func BootstrapInterval(n, resamples int, level float64, seed uint64, stat func(idx []int) float64) (lo, hi float64) {
	if n < 2 || resamples < 1 {
		return math.NaN(), math.NaN()
	}
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	idx := make([]int, n)
	vals := make([]float64, 0, resamples)
	for range resamples {
		for i := range idx {
			idx[i] = r.IntN(n)
		}
		if v := stat(idx); !math.IsNaN(v) {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return math.NaN(), math.NaN()
	}
	slices.Sort(vals)
	at := func(q float64) float64 {
		k := int(math.Round(q * float64(len(vals)-1)))
		return vals[max(0, min(len(vals)-1, k))]
	}
	return at((1 - level) / 2), at((1 + level) / 2)
}
