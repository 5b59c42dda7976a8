// Package allocs measures how many heap bytes a function allocates, for the
// tests and fuzz targets that bound what a decoder may allocate for a small
// input ("fuzz every decoder and measure what a small input can make it
// allocate").
package allocs

import "runtime"

// Bytes runs f runs times (at least once) and returns the fewest heap bytes
// one run allocated. Allocations by other goroutines during a run can only
// add to it, so the least of a few runs is the one closest to f's own; f
// must do the same work every time.
func Bytes(runs int, f func()) uint64 {
	best := ^uint64(0)
	var before, after runtime.MemStats
	for i := 0; i < max(runs, 1); i++ {
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		best = min(best, after.TotalAlloc-before.TotalAlloc)
	}
	return best
}
