package faults

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
)

// Store is what the shared fault tests need of a provider.
type Store interface {
	blob.Store
	blob.MultipartLister
}

// Setup returns a store backed by a fresh, empty bucket whose requests go
// through the returned proxy.
type Setup func(t *testing.T) (Store, *Proxy)

// Upload sends data through the multipart pipeline (blob.Parts) in
// MinPartSize parts, two in flight: the part geometry the request counts of
// the fault tests assume.
func Upload(ctx context.Context, s blob.Store, key string, data []byte) (blob.Attrs, error) {
	return blobtest.UploadParts(ctx, s, key, data, blob.MinPartSize, 2)
}

// Common runs the fault tests every HTTP provider passes: retried
// SlowDown, a 500 on every part, corrupted parts and bodies, connection
// resets, a lost Complete answer and truncated downloads. Each subtest
// calls setup; attempts is the retry.max_attempts of the store setup
// builds. After every failure there is no object or a byte-identical one,
// and no incomplete upload.
func Common(t *testing.T, setup Setup, attempts int) {
	t.Run("SlowDownIsRetried", func(t *testing.T) {
		s, p := setup(t)
		p.Add(Rule{Match: PutObject, Times: 2, Kind: Status, Status: 503, Code: "SlowDown"})
		data := RandBytes(1000)
		if _, err := s.Put(Context(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
			t.Fatalf("Put through two SlowDowns: %v", err)
		}
		if n := p.Count(func(r Request) bool { return r.Method == "PUT" }); n != 3 {
			t.Errorf("PUT attempts = %d, want 3", n)
		}
		blobtest.AssertStored(t, s, "k", data)
	})

	t.Run("VectorPartsAreVerifiedAndResentWhole", func(t *testing.T) {
		// Parts given as gather lists (blob.VectorMultipart, as an
		// offload's blocks are sent from the bookie frames): part 1's first
		// attempt is corrupted on the way (the server refuses it), part 2's
		// first attempt is read whole and answered with a 500; both are
		// retried from their first byte and the object is exactly the
		// concatenation. With every attempt of part 1 corrupted the upload
		// fails and leaves nothing.
		s, p := setup(t)
		data := RandBytes(2*blob.MinPartSize + 10)
		upload := func(key string) error {
			mp, err := s.CreateMultipart(Context(t), key, blob.PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !blob.UploadsVectors(mp) {
				t.Fatalf("%T does not take gather lists", mp)
			}
			for n, off := 1, 0; off < len(data); n, off = n+1, off+blob.MinPartSize {
				part := data[off:min(off+blob.MinPartSize, len(data))]
				// Odd slices: a header-like 128, a record header, the bulk, 1 byte.
				var vec [][]byte
				for _, cut := range []int{128, 12, len(part) - 128 - 12 - 1} {
					if cut > 0 && cut < len(part) {
						vec = append(vec, part[:cut])
						part = part[cut:]
					}
				}
				vec = append(vec, part)
				if err := blob.UploadPartVector(Context(t), mp, n, vec); err != nil {
					_ = mp.Abort(Context(t))
					return err
				}
			}
			if _, err := mp.Complete(Context(t)); err != nil {
				_ = mp.Abort(Context(t))
				return err
			}
			return nil
		}
		p.Add(Rule{Match: And(UploadPart, func(r *http.Request) bool { return r.URL.Query().Get("partNumber") == "1" }), Times: 1, Kind: CorruptRequestBody})
		p.Add(Rule{Match: And(UploadPart, func(r *http.Request) bool { return r.URL.Query().Get("partNumber") == "2" }), Times: 1, Kind: Status, Status: 500, Code: "InternalError"})
		if err := upload("vec"); err != nil {
			t.Fatalf("vector upload with a corrupted and a failed attempt: %v", err)
		}
		blobtest.AssertStored(t, s, "vec", data)
		if n := p.Count(func(r Request) bool { return r.Method == "PUT" && r.Query.Has("partNumber") }); n != 5 {
			t.Errorf("part requests = %d, want 3 parts + 2 resends", n)
		}
		p.Reset()
		p.Add(Rule{Match: UploadPart, Kind: CorruptRequestBody})
		if err := upload("vec-bad"); !errors.Is(err, blob.ErrBadDigest) {
			t.Errorf("vector upload with every part corrupted: %v, want ErrBadDigest", err)
		}
		blobtest.AssertAbsentOrEqual(t, s, "vec-bad", nil)
		assertNoUploads(t, s, "vec-bad")
	})

	t.Run("500OnEveryPartAbortsCleanly", func(t *testing.T) {
		s, p := setup(t)
		p.Add(Rule{Match: UploadPart, Kind: Status, Status: 500, Code: "InternalError"})
		data := RandBytes(2*blob.MinPartSize + 10)
		if _, err := Upload(Context(t), s, "mp", data); err == nil {
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
		if n := p.Count(func(r Request) bool { return r.Method == "DELETE" && r.Query.Has("uploadId") }); n != 1 {
			t.Errorf("abort requests = %d, want 1", n)
		}
		blobtest.AssertAbsentOrEqual(t, s, "mp", nil)
		assertNoUploads(t, s, "mp")
	})

	// A corrupted part fails the part checksum (checked by the server, or
	// by the COS SDK against the CRC-64 COS answers); the provider resends
	// it.
	t.Run("CorruptPartIsRejectedAndRetried", func(t *testing.T) {
		s, p := setup(t)
		p.Add(Rule{Match: UploadPart, Times: 1, Kind: CorruptRequestBody})
		data := RandBytes(2*blob.MinPartSize + 10)
		if _, err := Upload(Context(t), s, "mp", data); err != nil {
			t.Fatalf("upload with one corrupted part: %v", err)
		}
		if n := p.Count(func(r Request) bool { return r.Method == "PUT" && r.Query.Has("partNumber") }); n != 4 {
			t.Errorf("part requests = %d, want 3 parts + 1 retry", n)
		}
		blobtest.AssertStored(t, s, "mp", data)
	})

	t.Run("CorruptBodyAlwaysFailsCleanly", func(t *testing.T) {
		s, p := setup(t)
		p.Add(Rule{Match: func(r *http.Request) bool { return r.Method == "PUT" }, Kind: CorruptRequestBody})
		data := RandBytes(blob.MinPartSize + 10)
		if _, err := s.Put(Context(t), "single", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); !errors.Is(err, blob.ErrBadDigest) {
			t.Errorf("Put with corrupted body: %v, want ErrBadDigest", err)
		}
		blobtest.AssertAbsentOrEqual(t, s, "single", nil)
		if _, err := Upload(Context(t), s, "mp", data); !errors.Is(err, blob.ErrBadDigest) {
			t.Errorf("multipart with corrupted parts: %v, want ErrBadDigest", err)
		}
		blobtest.AssertAbsentOrEqual(t, s, "mp", nil)
		assertNoUploads(t, s, "mp")
	})

	t.Run("ConnectionResetIsRetried", func(t *testing.T) {
		s, p := setup(t)
		p.Add(Rule{Match: PutObject, Times: 1, Kind: ResetBeforeForward})
		p.Add(Rule{Match: UploadPart, Times: 1, Kind: ResetAfterForward})
		data := RandBytes(1000)
		if _, err := s.Put(Context(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
			t.Fatalf("Put after a connection reset: %v", err)
		}
		blobtest.AssertStored(t, s, "k", data)
		big := RandBytes(blob.MinPartSize + 10)
		if _, err := Upload(Context(t), s, "mp", big); err != nil {
			t.Fatalf("upload after a lost part response: %v", err)
		}
		blobtest.AssertStored(t, s, "mp", big)
	})

	// The server completes the upload but the answer is lost; the retry
	// finds no upload. The store accepts the object only after checking it
	// against the parts it sent.
	t.Run("LostCompleteResponse", func(t *testing.T) {
		s, p := setup(t)
		p.Add(Rule{Match: CompleteMultipart, Times: 1, Kind: ResetAfterForward})
		data := RandBytes(2*blob.MinPartSize + 10)
		a, err := Upload(Context(t), s, "mp", data)
		if err != nil {
			t.Fatalf("upload with a lost Complete response: %v", err)
		}
		if a.Size != int64(len(data)) {
			t.Errorf("attrs size %d", a.Size)
		}
		if n := p.Count(func(r Request) bool { return r.Method == "POST" && r.Query.Has("uploadId") }); n != 2 {
			t.Errorf("Complete requests = %d, want 2", n)
		}
		blobtest.AssertStored(t, s, "mp", data)
		assertNoUploads(t, s, "mp")
	})

	t.Run("TruncatedDownloadIsAnError", func(t *testing.T) {
		s, p := setup(t)
		data := RandBytes(100_000)
		if _, err := s.Put(Context(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		p.Add(Rule{Match: Method("GET", ""), Times: 2, Kind: TruncateBody, KeepBytes: 1000})
		for _, r := range [][2]int64{{0, -1}, {10, 50_000}} {
			rc, _, err := s.GetRange(Context(t), "k", r[0], r[1])
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
	})
}

func assertNoUploads(t *testing.T, s blob.MultipartLister, prefix string) {
	t.Helper()
	if ups, err := s.ListMultipart(Context(t), prefix); err != nil || len(ups) != 0 {
		t.Errorf("incomplete uploads left under %q: %+v, %v", prefix, ups, err)
	}
}

// RandBytes returns n pseudo-random bytes, the same for the same n.
func RandBytes(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(n)}).Read(b)
	return b
}

// Context is a context for one test's requests: it ends after a minute or
// with t.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// CorruptParts is the checksum scenario every part checksum mode passes:
// one part's body corrupted on the way is caught (refused by the server or
// detected by the client) and resent, the object byte-identical; then
// every part corrupted on every attempt fails the upload with
// ErrBadDigest, leaving no object and no upload. It returns the part
// requests of the first upload (3 parts + 1 resend, checked here) for
// the caller's checks of what each part carried. p must hold no rules.
func CorruptParts(t *testing.T, s Store, p *Proxy) []Request {
	t.Helper()
	data := RandBytes(2*blob.MinPartSize + 10)
	p.Add(Rule{Match: UploadPart, Times: 1, Kind: CorruptRequestBody})
	if _, err := Upload(Context(t), s, "mp", data); err != nil {
		t.Fatalf("upload with one corrupted part: %v", err)
	}
	blobtest.AssertStored(t, s, "mp", data)
	var parts []Request
	faulted := 0
	for _, r := range p.Requests() {
		if r.Method == "PUT" && r.Query.Has("partNumber") {
			parts = append(parts, r)
			if r.Fault == CorruptRequestBody {
				faulted++
			}
		}
	}
	if len(parts) != 4 || faulted != 1 {
		t.Errorf("part requests = %d (%d corrupted), want 3 parts + 1 resend of the corrupted one", len(parts), faulted)
	}

	p.Reset()
	p.Add(Rule{Match: UploadPart, Kind: CorruptRequestBody})
	if _, err := Upload(Context(t), s, "bad", data); !errors.Is(err, blob.ErrBadDigest) {
		t.Errorf("upload with every part corrupted: %v, want ErrBadDigest", err)
	}
	blobtest.AssertAbsentOrEqual(t, s, "bad", nil)
	assertNoUploads(t, s, "bad")
	return parts
}
