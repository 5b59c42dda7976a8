package upload

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
)

// uploadMetrics are the upload pipeline's Prometheus metrics,
// tierkeeper_upload_*. Uploaders given the same Options.Registerer share
// them.
type uploadMetrics struct {
	bytes        prometheus.Counter
	parts        prometheus.Counter
	objects      *prometheus.CounterVec
	failures     *prometheus.CounterVec
	partDuration prometheus.Histogram
	inFlight     prometheus.Gauge
}

// Failure stages (values of the "stage" label).
const (
	stageCreate   = "create"
	stagePart     = "part"
	stageComplete = "complete"
	stagePut      = "put"
	stageIndex    = "index"
	stageEncode   = "encode"
)

// newMetrics creates the metrics on reg (nil: not registered), reusing
// those another Uploader registered there.
func newMetrics(reg prometheus.Registerer) (*uploadMetrics, error) {
	f := metrics.New(reg, "upload")
	m := &uploadMetrics{
		bytes: f.Counter("bytes_total", "Bytes stored in the object store by offload uploads (data blocks and indexes)."),
		parts: f.Counter("parts_total", "Multipart parts uploaded."),
		objects: f.CounterVec("objects_total", "Objects written, by role (data, index).",
			metrics.Label{Name: "role", Values: []string{"data", "index"}}),
		failures: f.CounterVec("failures_total", "Failed ledger uploads, by the stage that failed.",
			metrics.Label{Name: "stage", Values: []string{stageCreate, stagePart, stageComplete, stagePut, stageIndex, stageEncode}}),
		partDuration: f.Histogram("part_duration_seconds", "Time to upload one part or single-PUT data object.",
			prometheus.ExponentialBuckets(0.01, 2, 14)),
		inFlight: f.Gauge("parts_in_flight", "Parts being uploaded right now."),
	}
	return m, f.Err()
}
