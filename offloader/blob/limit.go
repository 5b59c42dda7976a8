package blob

import (
	"context"
	"io"
	"net/http"

	"golang.org/x/time/rate"
)

// Limits configures a Limiter. A zero field means unlimited.
type Limits struct {
	// UploadBytesPerSecond caps request bodies (object and part data).
	UploadBytesPerSecond float64 `json:"upload_bytes_per_second,omitempty"`
	// DownloadBytesPerSecond caps response bodies.
	DownloadBytesPerSecond float64 `json:"download_bytes_per_second,omitempty"`
	// RequestsPerSecond caps requests of every kind (retries included).
	RequestsPerSecond float64 `json:"requests_per_second,omitempty"`
}

// Limiter is a set of token buckets shared by every store and upload that
// uses it; create one per process and pass it to every provider (their
// Limiter option) or to Limited. A nil *Limiter limits nothing.
type Limiter struct {
	upload, download, requests *rate.Limiter
}

// NewLimiter returns a Limiter for l, or nil when l limits nothing.
func NewLimiter(l Limits) *Limiter {
	if l.UploadBytesPerSecond <= 0 && l.DownloadBytesPerSecond <= 0 && l.RequestsPerSecond <= 0 {
		return nil
	}
	return &Limiter{
		upload:   byteBucket(l.UploadBytesPerSecond),
		download: byteBucket(l.DownloadBytesPerSecond),
		requests: requestBucket(l.RequestsPerSecond),
	}
}

// byteBucket allows bursts of a tenth of a second (32 KiB to 4 MiB), so
// traffic is paced smoothly rather than sent in bursts.
func byteBucket(perSec float64) *rate.Limiter {
	if perSec <= 0 {
		return nil
	}
	burst := int(perSec / 10)
	burst = max(burst, 32<<10)
	burst = min(burst, 4<<20)
	return rate.NewLimiter(rate.Limit(perSec), burst)
}

func requestBucket(perSec float64) *rate.Limiter {
	if perSec <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(perSec), max(1, int(perSec/10)))
}

// WaitRequest takes one request token.
func (l *Limiter) WaitRequest(ctx context.Context) error {
	if l == nil || l.requests == nil {
		return nil
	}
	return l.requests.Wait(ctx)
}

// WaitUpload takes n upload-byte tokens (in bursts, so any n works).
func (l *Limiter) WaitUpload(ctx context.Context, n int64) error {
	if l == nil {
		return nil
	}
	return waitBytes(ctx, l.upload, n)
}

// WaitDownload takes n download-byte tokens.
func (l *Limiter) WaitDownload(ctx context.Context, n int64) error {
	if l == nil {
		return nil
	}
	return waitBytes(ctx, l.download, n)
}

func waitBytes(ctx context.Context, b *rate.Limiter, n int64) error {
	if b == nil {
		return nil
	}
	for n > 0 {
		step := min(n, int64(b.Burst()))
		if err := b.WaitN(ctx, int(step)); err != nil {
			return err
		}
		n -= step
	}
	return nil
}

// pacedReader takes byte tokens for what it reads, one burst at a time.
type pacedReader struct {
	ctx context.Context
	r   io.Reader
	b   *rate.Limiter
}

func (p *pacedReader) Read(buf []byte) (int, error) {
	if len(buf) > p.b.Burst() {
		buf = buf[:p.b.Burst()]
	}
	n, err := p.r.Read(buf)
	if n > 0 {
		if werr := p.b.WaitN(p.ctx, n); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

type pacedReadCloser struct {
	pacedReader
	c io.Closer
}

func (p *pacedReadCloser) Close() error { return p.c.Close() }

func pace(ctx context.Context, rc io.ReadCloser, b *rate.Limiter) io.ReadCloser {
	return &pacedReadCloser{pacedReader{ctx, rc, b}, rc}
}

// Transport wraps an HTTP transport so that every request (retries
// included) takes a request token, request bodies are paced by the upload
// bucket and response bodies by the download bucket. HTTP providers (s3, cos)
// use it when given a Limiter; it measures what really goes on the wire.
// With a nil Limiter it returns rt unchanged.
func (l *Limiter) Transport(rt http.RoundTripper) http.RoundTripper {
	if l == nil {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &limitTransport{l: l, rt: rt}
}

type limitTransport struct {
	l  *Limiter
	rt http.RoundTripper
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if err := t.l.WaitRequest(ctx); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if t.l.upload != nil && req.Body != nil && req.Body != http.NoBody {
		r2 := req.Clone(ctx)
		r2.Body = pace(ctx, req.Body, t.l.upload)
		if req.GetBody != nil {
			get := req.GetBody
			r2.GetBody = func() (io.ReadCloser, error) {
				b, err := get()
				if err != nil {
					return nil, err
				}
				return pace(ctx, b, t.l.upload), nil
			}
		}
		req = r2
	}
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if t.l.download != nil && resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = pace(ctx, resp.Body, t.l.download)
	}
	return resp, nil
}
