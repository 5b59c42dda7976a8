package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/offloader/blob/internal/faults"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

const attempts = 4

// faultStore is a store talking to versitygw through a fault injector.
func faultStore(t *testing.T) (*Store, *faults.Proxy) {
	t.Helper()
	srv := testenv.StartS3(t)
	p, err := faults.NewReverse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(p)
	t.Cleanup(ts.Close)
	cfg := staticConfig(srv, srv.NewBucket(t))
	cfg.Endpoint = ts.URL
	cfg.Retry = Retry{MaxAttempts: attempts, MaxBackoff: blob.Duration(5 * time.Millisecond)}
	return newTestStore(t, cfg, Options{}), p
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n)})
	r.Read(b)
	return b
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

var (
	isPut      = func(r *http.Request) bool { return r.Method == "PUT" && !r.URL.Query().Has("partNumber") }
	isPart     = faults.Method("PUT", "partNumber")
	isComplete = faults.Method("POST", "uploadId")
	isGet      = faults.Method("GET", "")
)

func upload(ctx context.Context, s blob.Store, key string, data []byte) (blob.Attrs, error) {
	return blob.UploadStream(ctx, s, key, bytes.NewReader(data), blob.UploadOptions{PartSize: blob.MinPartSize, Concurrency: 2})
}

func assertNoUploads(t *testing.T, s *Store, prefix string) {
	t.Helper()
	ups, err := s.ListMultipart(ctxT(t), prefix)
	if err != nil || len(ups) != 0 {
		t.Errorf("incomplete uploads left under %q: %+v, %v", prefix, ups, err)
	}
}

func TestFaultSlowDownIsRetried(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPut, Times: 2, Kind: faults.Status, Status: 503, Code: "SlowDown"})
	data := randBytes(1000)
	if _, err := s.Put(ctxT(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
		t.Fatalf("Put through two SlowDowns: %v", err)
	}
	if n := p.Count(func(r faults.Request) bool { return r.Method == "PUT" }); n != 3 {
		t.Errorf("PUT attempts = %d, want 3", n)
	}
	blobtest.AssertStored(t, s, "k", data)
}

func TestFaultSlowDownExhausted(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPut, Kind: faults.Status, Status: 503, Code: "SlowDown"})
	data := randBytes(1000)
	_, err := s.Put(ctxT(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{})
	if err == nil || !strings.Contains(err.Error(), "SlowDown") {
		t.Fatalf("Put against permanent SlowDown: %v", err)
	}
	if n := p.Count(func(r faults.Request) bool { return r.Method == "PUT" }); n != attempts {
		t.Errorf("PUT attempts = %d, want %d", n, attempts)
	}
	blobtest.AssertAbsentOrEqual(t, s, "k", nil)
}

func TestFault500OnEveryPartAbortsCleanly(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPart, Kind: faults.Status, Status: 500, Code: "InternalError"})
	data := randBytes(2*blob.MinPartSize + 10)
	if _, err := upload(ctxT(t), s, "mp", data); err == nil {
		t.Fatal("upload succeeded though every part failed")
	}
	byPart := map[string]int{}
	for _, r := range p.Requests() {
		if r.Method == "PUT" && r.Query.Has("partNumber") {
			byPart[r.Query.Get("partNumber")]++
		}
	}
	// Parts go two at a time: the first to exhaust its attempts cancels
	// the other, so only the maximum is exact.
	most := 0
	for n, c := range byPart {
		if c > attempts {
			t.Errorf("part %s tried %d times, max %d", n, c, attempts)
		}
		most = max(most, c)
	}
	if most != attempts {
		t.Errorf("parts tried %v times, want one part tried %d times", byPart, attempts)
	}
	if n := p.Count(func(r faults.Request) bool { return r.Method == "DELETE" && r.Query.Has("uploadId") }); n != 1 {
		t.Errorf("abort requests = %d, want 1", n)
	}
	blobtest.AssertAbsentOrEqual(t, s, "mp", nil)
	assertNoUploads(t, s, "mp")
}

func TestFaultCorruptPartIsRejectedAndRetried(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPart, Times: 1, Kind: faults.CorruptRequestBody})
	data := randBytes(2*blob.MinPartSize + 10)
	if _, err := upload(ctxT(t), s, "mp", data); err != nil {
		t.Fatalf("upload with one corrupted part: %v", err)
	}
	if n := p.Count(func(r faults.Request) bool { return r.Method == "PUT" && r.Query.Has("partNumber") }); n != 4 {
		t.Errorf("part requests = %d, want 3 parts + 1 retry", n)
	}
	blobtest.AssertStored(t, s, "mp", data)
}

func TestFaultCorruptBodyAlwaysFailsCleanly(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: func(r *http.Request) bool { return r.Method == "PUT" }, Kind: faults.CorruptRequestBody})
	data := randBytes(blob.MinPartSize + 10)
	_, err := s.Put(ctxT(t), "single", bytes.NewReader(data), int64(len(data)), blob.PutOptions{})
	if !errors.Is(err, blob.ErrBadDigest) {
		t.Errorf("Put with corrupted body: %v, want ErrBadDigest", err)
	}
	blobtest.AssertAbsentOrEqual(t, s, "single", nil)
	_, err = upload(ctxT(t), s, "mp", data)
	if !errors.Is(err, blob.ErrBadDigest) {
		t.Errorf("multipart with corrupted parts: %v, want ErrBadDigest", err)
	}
	blobtest.AssertAbsentOrEqual(t, s, "mp", nil)
	assertNoUploads(t, s, "mp")
}

func TestFaultConnectionResetIsRetried(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPut, Times: 1, Kind: faults.ResetBeforeForward})
	p.Add(faults.Rule{Match: isPart, Times: 1, Kind: faults.ResetAfterForward})
	data := randBytes(1000)
	if _, err := s.Put(ctxT(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
		t.Fatalf("Put after a connection reset: %v", err)
	}
	blobtest.AssertStored(t, s, "k", data)
	big := randBytes(blob.MinPartSize + 10)
	if _, err := upload(ctxT(t), s, "mp", big); err != nil {
		t.Fatalf("upload after a lost part response: %v", err)
	}
	blobtest.AssertStored(t, s, "mp", big)
}

// The server completes the upload but the answer is lost; the retry finds
// no upload. The store accepts the object only after checking its size and
// multipart ETag.
func TestFaultLostCompleteResponse(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isComplete, Times: 1, Kind: faults.ResetAfterForward})
	data := randBytes(2*blob.MinPartSize + 10)
	a, err := upload(ctxT(t), s, "mp", data)
	if err != nil {
		t.Fatalf("upload with a lost Complete response: %v", err)
	}
	if a.Size != int64(len(data)) {
		t.Errorf("attrs size %d", a.Size)
	}
	if n := p.Count(func(r faults.Request) bool { return r.Method == "POST" && r.Query.Has("uploadId") }); n != 2 {
		t.Errorf("Complete requests = %d, want 2", n)
	}
	blobtest.AssertStored(t, s, "mp", data)
	assertNoUploads(t, s, "mp")
}

func TestFaultTruncatedDownloadIsAnError(t *testing.T) {
	s, p := faultStore(t)
	data := randBytes(100_000)
	if _, err := s.Put(ctxT(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Add(faults.Rule{Match: isGet, Times: 2, Kind: faults.TruncateBody, KeepBytes: 1000})
	for _, r := range [][2]int64{{0, -1}, {10, 50_000}} {
		rc, _, err := s.GetRange(ctxT(t), "k", r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("GetRange%v of a truncated body: %d bytes, err %v; want io.ErrUnexpectedEOF", r, len(got), err)
		}
	}
	blobtest.AssertStored(t, s, "k", data) // unfaulted read is whole
}

func TestContentMD5OnEveryUpload(t *testing.T) {
	s, p := faultStore(t)
	data := randBytes(blob.MinPartSize + 10)
	if _, err := s.Put(ctxT(t), "k", bytes.NewReader(data[:100]), 100, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := upload(ctxT(t), s, "mp", data); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range p.Requests() {
		if r.Method == "PUT" {
			n++
			if r.Header.Get("Content-MD5") == "" {
				t.Errorf("PUT %s?%s without Content-MD5", r.Path, r.Query.Encode())
			}
		}
	}
	if n != 3 {
		t.Errorf("saw %d PUTs, want 3", n)
	}
}

func TestSSEHeaders(t *testing.T) {
	srv := testenv.StartS3(t)
	p, _ := faults.NewReverse(srv.Endpoint)
	// Capture the headers; answer 200 without forwarding, since versitygw
	// does not implement SSE-KMS.
	ts := httptest.NewServer(p)
	t.Cleanup(ts.Close)
	for _, tc := range []struct {
		sse  SSE
		want map[string]string
	}{
		{SSE{Type: SSES3}, map[string]string{"X-Amz-Server-Side-Encryption": "AES256"}},
		{SSE{Type: SSEKMS, KMSKeyID: "arn:aws:kms:us-east-1:1:key/k", KMSEncryptionContext: map[string]string{"a": "b"}, BucketKeyEnabled: true},
			map[string]string{"X-Amz-Server-Side-Encryption": "aws:kms", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": "arn:aws:kms:us-east-1:1:key/k",
				"X-Amz-Server-Side-Encryption-Context": "eyJhIjoiYiJ9", "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled": "true"}},
	} {
		p.Reset()
		p.Add(faults.Rule{Kind: faults.Status, Status: 501, Code: "NotImplemented"})
		cfg := staticConfig(srv, "b")
		cfg.Endpoint, cfg.SSE, cfg.Retry.MaxAttempts = ts.URL, tc.sse, 1
		s := newTestStore(t, cfg, Options{})
		s.Put(ctxT(t), "k", strings.NewReader("x"), 1, blob.PutOptions{})
		s.CreateMultipart(ctxT(t), "k", blob.PutOptions{})
		reqs := p.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%s: %d requests", tc.sse.Type, len(reqs))
		}
		for _, r := range reqs {
			for k, v := range tc.want {
				if got := r.Header.Get(k); got != v {
					t.Errorf("%s %s %s: header %s = %q, want %q", tc.sse.Type, r.Method, r.Query.Encode(), k, got, v)
				}
			}
		}
	}
}
