// Package stats holds the summary figures the benchmarks and the bookie
// agent's rules compute over repeated measurements.
package stats

import "slices"

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
