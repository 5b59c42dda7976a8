package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
)

// Copy phases, the values of tierkeeper_pipeline_copy_seconds_total's
// "phase" label: where a copy step's time goes (CopyStats, as it goes).
const (
	// PhaseBookies: waiting for the next entry from the bookies.
	PhaseBookies = "bookies"
	// PhaseAdd: handing an entry to the encoder (copying it into the
	// block and, at a full block, waiting for a free block buffer while
	// PartsInFlight parts upload).
	PhaseAdd = "add"
	// PhaseFinish: after the last entry, the last parts, the completion
	// and the index.
	PhaseFinish = "finish"
)

// copyMetrics are the pipeline's own metrics, tierkeeper_pipeline_*; the
// upload's and the bookie client's are theirs.
type copyMetrics struct {
	seconds              *prometheus.CounterVec
	bookies, add, finish prometheus.Counter
}

func newCopyMetrics(reg prometheus.Registerer) (*copyMetrics, error) {
	f := metrics.New(reg, "pipeline")
	m := &copyMetrics{seconds: f.CounterVec("copy_seconds_total",
		"Time of the copy steps by phase: waiting for the bookies, handing entries to the encoder (with waiting for a free block), finishing.",
		metrics.Label{Name: "phase", Values: []string{PhaseBookies, PhaseAdd, PhaseFinish}})}
	m.bookies, m.add, m.finish = m.seconds.WithLabelValues(PhaseBookies), m.seconds.WithLabelValues(PhaseAdd), m.seconds.WithLabelValues(PhaseFinish)
	return m, f.Err()
}
