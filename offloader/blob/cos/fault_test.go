package cos

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/offloader/blob/internal/faults"
	"github.com/tierkeeper/tierkeeper/test/cosfake"
)

const attempts = 3 // fakeConfig's retry.max_attempts

func faultStore(t *testing.T) (*Store, *faults.Proxy) {
	t.Helper()
	var p *faults.Proxy
	f := cosfake.Start(t, func(h http.Handler) http.Handler { p = faults.New(h); return p })
	return newFakeStore(t, f, Options{}), p
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(n), 1}).Read(b)
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
)

func upload(ctx context.Context, s blob.Store, key string, data []byte) (blob.Attrs, error) {
	return blob.UploadStream(ctx, s, key, bytes.NewReader(data), blob.UploadOptions{PartSize: blob.MinPartSize, Concurrency: 2})
}

func assertNoUploads(t *testing.T, s *Store, prefix string) {
	t.Helper()
	if ups, err := s.ListMultipart(ctxT(t), prefix); err != nil || len(ups) != 0 {
		t.Errorf("incomplete uploads left under %q: %+v, %v", prefix, ups, err)
	}
}

func count(p *faults.Proxy, f func(faults.Request) bool) int { return p.Count(f) }

func TestFaultSlowDownIsRetried(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPut, Times: 2, Kind: faults.Status, Status: 503, Code: "SlowDown"})
	data := randBytes(1000)
	if _, err := s.Put(ctxT(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
		t.Fatalf("Put through two SlowDowns: %v", err)
	}
	if n := count(p, func(r faults.Request) bool { return r.Method == "PUT" }); n != 3 {
		t.Errorf("PUT attempts = %d, want 3", n)
	}
	blobtest.AssertStored(t, s, "k", data)
}

func TestFault4xxIsNotRetried(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPut, Kind: faults.Status, Status: 403, Code: "AccessDenied"})
	_, err := s.Put(ctxT(t), "k", strings.NewReader("x"), 1, blob.PutOptions{})
	if !errors.Is(err, blob.ErrAccessDenied) {
		t.Errorf("Put answered 403: %v, want ErrAccessDenied", err)
	}
	if n := count(p, func(r faults.Request) bool { return r.Method == "PUT" }); n != 1 {
		t.Errorf("PUT attempts = %d, want 1 (4xx is final)", n)
	}
}

func TestFault500OnEveryPartAbortsCleanly(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPart, Kind: faults.Status, Status: 500, Code: "InternalError"})
	data := randBytes(2*blob.MinPartSize + 10)
	if _, err := upload(ctxT(t), s, "mp", data); err == nil {
		t.Fatal("upload succeeded though every part failed")
	}
	// Parts go two at a time: the first to exhaust its attempts cancels
	// the other, so only the maximum is exact.
	byPart := map[string]int{}
	for _, r := range p.Requests() {
		if r.Method == "PUT" && r.Query.Has("partNumber") {
			byPart[r.Query.Get("partNumber")]++
		}
	}
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
	blobtest.AssertAbsentOrEqual(t, s, "mp", nil)
	assertNoUploads(t, s, "mp")
}

// A corrupted part fails cosfake's Content-MD5 check (400 InvalidDigest);
// the provider resends it.
func TestFaultCorruptPartIsRejectedAndRetried(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPart, Times: 1, Kind: faults.CorruptRequestBody})
	data := randBytes(2*blob.MinPartSize + 10)
	if _, err := upload(ctxT(t), s, "mp", data); err != nil {
		t.Fatalf("upload with one corrupted part: %v", err)
	}
	if n := count(p, func(r faults.Request) bool { return r.Method == "PUT" && r.Query.Has("partNumber") }); n != 4 {
		t.Errorf("part requests = %d, want 3 parts + 1 retry", n)
	}
	blobtest.AssertStored(t, s, "mp", data)
}

func TestFaultCorruptBodyAlwaysFailsCleanly(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: func(r *http.Request) bool { return r.Method == "PUT" }, Kind: faults.CorruptRequestBody})
	data := randBytes(blob.MinPartSize + 10)
	if _, err := s.Put(ctxT(t), "single", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); !errors.Is(err, blob.ErrBadDigest) {
		t.Errorf("Put with corrupted body: %v, want ErrBadDigest", err)
	}
	blobtest.AssertAbsentOrEqual(t, s, "single", nil)
	if _, err := upload(ctxT(t), s, "mp", data); !errors.Is(err, blob.ErrBadDigest) {
		t.Errorf("multipart with corrupted parts: %v, want ErrBadDigest", err)
	}
	blobtest.AssertAbsentOrEqual(t, s, "mp", nil)
	assertNoUploads(t, s, "mp")
}

// The SDK checks the CRC-64 COS returns for a part against the bytes it
// sent; a server that reports another CRC fails the part.
func TestFaultWrongPartCRCIsDetected(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isPart, Times: 1, Kind: faults.RewriteResponse, Rewrite: func(h http.Header) { h.Set("x-cos-hash-crc64ecma", "12345") }})
	data := randBytes(blob.MinPartSize + 10)
	if _, err := upload(ctxT(t), s, "mp", data); err != nil {
		t.Fatalf("upload with one lying part answer: %v", err)
	}
	if n := count(p, func(r faults.Request) bool { return r.Method == "PUT" && r.Query.Has("partNumber") }); n != 3 {
		t.Errorf("part requests = %d, want 2 parts + 1 retry", n)
	}
	blobtest.AssertStored(t, s, "mp", data)
}

// A completed object whose CRC-64 is not the combination of the parts'
// is deleted: no object that lies is left.
func TestFaultWrongObjectCRCDeletesObject(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isComplete, Kind: faults.RewriteResponse, Rewrite: func(h http.Header) { h.Set("x-cos-hash-crc64ecma", "1") }})
	data := randBytes(blob.MinPartSize + 10)
	if _, err := upload(ctxT(t), s, "mp", data); !errors.Is(err, blob.ErrBadDigest) {
		t.Fatalf("upload with a wrong completed CRC: %v, want ErrBadDigest", err)
	}
	blobtest.AssertAbsentOrEqual(t, s, "mp", nil)
}

func TestFaultLostCompleteResponse(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: isComplete, Times: 1, Kind: faults.ResetAfterForward})
	data := randBytes(2*blob.MinPartSize + 10)
	if _, err := upload(ctxT(t), s, "mp", data); err != nil {
		t.Fatalf("upload with a lost Complete response: %v", err)
	}
	if n := count(p, func(r faults.Request) bool { return r.Method == "POST" && r.Query.Has("uploadId") }); n != 2 {
		t.Errorf("Complete requests = %d, want 2", n)
	}
	blobtest.AssertStored(t, s, "mp", data)
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

func TestFaultTruncatedDownloadIsAnError(t *testing.T) {
	s, p := faultStore(t)
	data := randBytes(100_000)
	if _, err := s.Put(ctxT(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Add(faults.Rule{Match: faults.Method("GET", ""), Times: 2, Kind: faults.TruncateBody, KeepBytes: 1000})
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
	blobtest.AssertStored(t, s, "k", data)
}

// A whole-object download whose bytes do not match the stored CRC-64 fails
// at the end instead of returning wrong data silently.
func TestFaultDownloadCRCMismatch(t *testing.T) {
	s, p := faultStore(t)
	data := randBytes(10_000)
	if _, err := s.Put(ctxT(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Add(faults.Rule{Match: faults.Method("GET", ""), Times: 1, Kind: faults.RewriteResponse, Rewrite: func(h http.Header) { h.Set("x-cos-hash-crc64ecma", "7") }})
	rc, _, err := s.Get(ctxT(t), "k")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, blob.ErrBadDigest) {
		t.Errorf("Get with a wrong CRC: %v, want ErrBadDigest", err)
	}
}

func TestContentMD5AndSSEHeaders(t *testing.T) {
	var p *faults.Proxy
	f := cosfake.Start(t, func(h http.Handler) http.Handler { p = faults.New(h); return p })
	cfg := fakeConfig(f, f.NewBucket(t))
	cfg.SSE = SSE{Type: SSEKMS, KMSKeyID: "kms-key-1", KMSContext: map[string]string{"a": "b"}}
	s, err := New(cfg, Options{DialContext: f.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	data := randBytes(blob.MinPartSize + 10)
	if _, err := s.Put(ctxT(t), "k", bytes.NewReader(data[:100]), 100, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := upload(ctxT(t), s, "mp", data); err != nil {
		t.Fatal(err)
	}
	puts, inits := 0, 0
	for _, r := range p.Requests() {
		if r.Method == "PUT" {
			puts++
			if r.Header.Get("Content-MD5") == "" {
				t.Errorf("PUT %s?%s without Content-MD5", r.Path, r.Query.Encode())
			}
		}
		if (r.Method == "PUT" && !r.Query.Has("partNumber")) || (r.Method == "POST" && r.Query.Has("uploads")) {
			inits++
			for k, v := range map[string]string{"X-Cos-Server-Side-Encryption": "cos/kms", "X-Cos-Server-Side-Encryption-Cos-Kms-Key-Id": "kms-key-1",
				"X-Cos-Server-Side-Encryption-Context": "eyJhIjoiYiJ9"} {
				if got := r.Header.Get(k); got != v {
					t.Errorf("%s %s: %s = %q, want %q", r.Method, r.Path, k, got, v)
				}
			}
		}
	}
	if puts != 3 || inits != 2 {
		t.Errorf("saw %d PUTs and %d object creations, want 3 and 2", puts, inits)
	}
	// cosfake stores and echoes the SSE header.
	if a, err := s.Head(ctxT(t), "k"); err != nil || a.Size != 100 {
		t.Errorf("Head = %+v, %v", a, err)
	}
}
