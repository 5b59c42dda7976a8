// Package metricstest reads metrics back in tests: the figures a test
// asserts, gathered from the registry the code under test registered on.
package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// CounterSum is the sum of the counter values of every series of the
// metric family name in g (0 when g has no such family); t fails if g
// cannot be gathered.
func CounterSum(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// HistogramCount is the number of observations of every series of the
// histogram family name in g (0 when g has no such family); t fails if g
// cannot be gathered.
func HistogramCount(t testing.TB, g prometheus.Gatherer, name string) uint64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}
