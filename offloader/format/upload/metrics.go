package upload

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the upload pipeline's Prometheus metrics. Create them once
// per registry with NewMetrics and share them between Uploaders.
type Metrics struct {
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

// NewMetrics registers the metrics with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		bytes: f.NewCounter(prometheus.CounterOpts{
			Name: "offload_upload_bytes_total",
			Help: "Bytes stored in the object store by offload uploads (data blocks and indexes).",
		}),
		parts: f.NewCounter(prometheus.CounterOpts{
			Name: "offload_upload_parts_total",
			Help: "Multipart parts uploaded.",
		}),
		objects: f.NewCounterVec(prometheus.CounterOpts{
			Name: "offload_upload_objects_total",
			Help: "Objects written, by role (data, index).",
		}, []string{"role"}),
		failures: f.NewCounterVec(prometheus.CounterOpts{
			Name: "offload_upload_failures_total",
			Help: "Failed ledger uploads, by the stage that failed.",
		}, []string{"stage"}),
		partDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "offload_upload_part_duration_seconds",
			Help:    "Time to upload one part or single-PUT data object.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
		inFlight: f.NewGauge(prometheus.GaugeOpts{
			Name: "offload_upload_parts_in_flight",
			Help: "Parts being uploaded right now.",
		}),
	}
	for _, r := range []string{"data", "index"} {
		m.objects.WithLabelValues(r)
	}
	for _, s := range []string{stageCreate, stagePart, stageComplete, stagePut, stageIndex, stageEncode} {
		m.failures.WithLabelValues(s)
	}
	return m
}
