package blob

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
)

// Operation names, the values of the "operation" label.
const (
	OpHead              = "head"
	OpGet               = "get"
	OpGetRange          = "get_range"
	OpIter              = "iter"
	OpPut               = "put"
	OpCreateMultipart   = "create_multipart"
	OpUploadPart        = "upload_part"
	OpCompleteMultipart = "complete_multipart"
	OpAbortMultipart    = "abort_multipart"
	OpDelete            = "delete"
	OpListMultipart     = "list_multipart"
)

var allOps = []string{OpHead, OpGet, OpGetRange, OpIter, OpPut, OpCreateMultipart, OpUploadPart,
	OpCompleteMultipart, OpAbortMultipart, OpDelete, OpListMultipart}

// Metrics holds the blob-store metrics:
//
//	tierkeeper_blob_operations_total{operation}            calls started
//	tierkeeper_blob_operation_failures_total{operation}    calls that failed
//	tierkeeper_blob_operation_duration_seconds{operation}  call latency (Get: until the body is closed)
//	tierkeeper_blob_uploaded_bytes_total                   bytes of successful Put and UploadPart
//	tierkeeper_blob_downloaded_bytes_total                 bytes read from Get/GetRange bodies
//
// A call that ends with context.Canceled is not a failure; nor is
// ErrNotFound from Head, Get or GetRange (an answer, not a fault). Several
// stores on one registerer share the series; to tell them apart, give each
// a registerer wrapped with a distinguishing label
// (prometheus.WrapRegistererWith).
type Metrics struct {
	ops        *prometheus.CounterVec
	failures   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	uploaded   prometheus.Counter
	downloaded prometheus.Counter
}

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered). Every operation label is pre-created at zero. A registerer
// that already holds them (another store's) lends its collectors: the
// stores then count into the same series.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	f := metrics.New(reg, "blob")
	op := metrics.Label{Name: "operation", Values: allOps}
	m := &Metrics{
		ops:      f.CounterVec("operations_total", "Blob store operations started.", op),
		failures: f.CounterVec("operation_failures_total", "Blob store operations that failed (cancellations and not-found answers excluded).", op),
		duration: f.HistogramVec("operation_duration_seconds", "Duration of blob store operations; for Get and GetRange until the body is closed.",
			prometheus.ExponentialBuckets(0.005, 4, 8), op),
		uploaded:   f.Counter("uploaded_bytes_total", "Bytes stored by successful Put and UploadPart calls."),
		downloaded: f.Counter("downloaded_bytes_total", "Bytes read from Get and GetRange bodies."),
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// WithMetrics is NewMetrics(reg) followed by Wrap(s).
func WithMetrics(s Store, reg prometheus.Registerer) (Store, error) {
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return m.Wrap(s), nil
}

// Wrap returns s instrumented with m. The result implements MultipartLister
// when s does.
func (m *Metrics) Wrap(s Store) Store {
	ms := &metricStore{s: s, m: m}
	if ml, ok := s.(MultipartLister); ok {
		return &metricListerStore{ms, ml}
	}
	return ms
}

// observe records one finished call.
func (m *Metrics) observe(op string, start time.Time, err error) {
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if isFailure(op, err) {
		m.failures.WithLabelValues(op).Inc()
	}
}

func isFailure(op string, err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, ErrNotFound) && (op == OpHead || op == OpGet || op == OpGetRange) {
		return false
	}
	return true
}

func (m *Metrics) start(op string) time.Time {
	m.ops.WithLabelValues(op).Inc()
	return time.Now()
}

type metricStore struct {
	s Store
	m *Metrics
}

var (
	_ Store           = (*metricStore)(nil)
	_ MultipartLister = (*metricListerStore)(nil)
	_ PartCRC32CUser  = (*metricStore)(nil)
)

func (s *metricStore) Name() string { return s.s.Name() }
func (s *metricStore) Close() error { return s.s.Close() }

// UsesPartCRC32C answers for the wrapped store.
func (s *metricStore) UsesPartCRC32C() bool { return UsesPartCRC32C(s.s) }

func (s *metricStore) Head(ctx context.Context, key string) (Attrs, error) {
	t := s.m.start(OpHead)
	a, err := s.s.Head(ctx, key)
	s.m.observe(OpHead, t, err)
	return a, err
}

func (s *metricStore) Get(ctx context.Context, key string) (io.ReadCloser, Attrs, error) {
	t := s.m.start(OpGet)
	rc, a, err := s.s.Get(ctx, key)
	if err != nil {
		s.m.observe(OpGet, t, err)
		return nil, a, err
	}
	return &metricBody{rc: rc, m: s.m, op: OpGet, start: t}, a, nil
}

func (s *metricStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, Attrs, error) {
	t := s.m.start(OpGetRange)
	rc, a, err := s.s.GetRange(ctx, key, off, length)
	if err != nil {
		s.m.observe(OpGetRange, t, err)
		return nil, a, err
	}
	return &metricBody{rc: rc, m: s.m, op: OpGetRange, start: t}, a, nil
}

// metricBody counts bytes read and records the operation when closed; a
// read error other than io.EOF makes the operation a failure.
type metricBody struct {
	rc    io.ReadCloser
	m     *Metrics
	op    string
	start time.Time
	err   error
	once  sync.Once
}

func (b *metricBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.m.downloaded.Add(float64(n))
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *metricBody) Close() error {
	err := b.rc.Close()
	b.once.Do(func() { b.m.observe(b.op, b.start, b.err) })
	return err
}

func (s *metricStore) Iter(ctx context.Context, prefix string, fn func(Attrs) error) error {
	t := s.m.start(OpIter)
	err := s.s.Iter(ctx, prefix, fn)
	s.m.observe(OpIter, t, err)
	return err
}

func (s *metricStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Attrs, error) {
	t := s.m.start(OpPut)
	a, err := s.s.Put(ctx, key, r, size, opts)
	s.m.observe(OpPut, t, err)
	if err == nil {
		s.m.uploaded.Add(float64(size))
	}
	return a, err
}

func (s *metricStore) CreateMultipart(ctx context.Context, key string, opts PutOptions) (Multipart, error) {
	t := s.m.start(OpCreateMultipart)
	mp, err := s.s.CreateMultipart(ctx, key, opts)
	s.m.observe(OpCreateMultipart, t, err)
	if err != nil {
		return nil, err
	}
	return &metricMultipart{mp, s.m}, nil
}

func (s *metricStore) Delete(ctx context.Context, key string) error {
	t := s.m.start(OpDelete)
	err := s.s.Delete(ctx, key)
	s.m.observe(OpDelete, t, err)
	return err
}

type metricMultipart struct {
	mp Multipart
	m  *Metrics
}

func (p *metricMultipart) UploadID() string { return p.mp.UploadID() }

func (p *metricMultipart) UploadPart(ctx context.Context, n int, data []byte) error {
	t := p.m.start(OpUploadPart)
	err := p.mp.UploadPart(ctx, n, data)
	p.m.observe(OpUploadPart, t, err)
	if err == nil {
		p.m.uploaded.Add(float64(len(data)))
	}
	return err
}

// UploadsVectors answers for the wrapped upload.
func (p *metricMultipart) UploadsVectors() bool { return UploadsVectors(p.mp) }

func (p *metricMultipart) UploadPartVector(ctx context.Context, n int, data [][]byte) error {
	t := p.m.start(OpUploadPart)
	err := UploadPartVector(ctx, p.mp, n, data)
	p.m.observe(OpUploadPart, t, err)
	if err == nil {
		p.m.uploaded.Add(float64(VectorLen(data)))
	}
	return err
}

func (p *metricMultipart) Complete(ctx context.Context) (Attrs, error) {
	t := p.m.start(OpCompleteMultipart)
	a, err := p.mp.Complete(ctx)
	p.m.observe(OpCompleteMultipart, t, err)
	return a, err
}

func (p *metricMultipart) Abort(ctx context.Context) error {
	t := p.m.start(OpAbortMultipart)
	err := p.mp.Abort(ctx)
	p.m.observe(OpAbortMultipart, t, err)
	return err
}

type metricListerStore struct {
	*metricStore
	ml MultipartLister
}

func (s *metricListerStore) ListMultipart(ctx context.Context, prefix string) ([]Upload, error) {
	t := s.m.start(OpListMultipart)
	u, err := s.ml.ListMultipart(ctx, prefix)
	s.m.observe(OpListMultipart, t, err)
	return u, err
}

func (s *metricListerStore) AbortMultipart(ctx context.Context, key, uploadID string) error {
	t := s.m.start(OpAbortMultipart)
	err := s.ml.AbortMultipart(ctx, key, uploadID)
	s.m.observe(OpAbortMultipart, t, err)
	return err
}
