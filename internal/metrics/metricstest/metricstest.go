// Package metricstest reads metrics back in tests: the figures a test
// asserts, gathered from the registry the code under test registered on.
package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// CounterSum is the sum of the counter values of every series of the
// metric family name in g (0 when g has no such family); t fails if g
// cannot be gathered.
func CounterSum(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	return sum(t, g, name, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

// HistogramCount is the number of observations of every series of the
// histogram family name in g (0 when g has no such family); t fails if g
// cannot be gathered.
func HistogramCount(t testing.TB, g prometheus.Gatherer, name string) uint64 {
	t.Helper()
	return sum(t, g, name, func(m *dto.Metric) uint64 { return m.GetHistogram().GetSampleCount() })
}

// sum adds up f of every series of the family name in g.
func sum[N float64 | uint64](t testing.TB, g prometheus.Gatherer, name string, f func(*dto.Metric) N) N {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n N
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += f(m)
			}
		}
	}
	return n
}
