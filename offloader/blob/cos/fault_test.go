package cos

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

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

func TestFaults(t *testing.T) {
	faults.Common(t, func(t *testing.T) (faults.Store, *faults.Proxy) { return faultStore(t) }, attempts)
}

func TestFault4xxIsNotRetried(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: faults.PutObject, Kind: faults.Status, Status: 403, Code: "AccessDenied"})
	_, err := s.Put(faults.Context(t), "k", strings.NewReader("x"), 1, blob.PutOptions{})
	if !errors.Is(err, blob.ErrAccessDenied) {
		t.Errorf("Put answered 403: %v, want ErrAccessDenied", err)
	}
	if n := p.Count(func(r faults.Request) bool { return r.Method == "PUT" }); n != 1 {
		t.Errorf("PUT attempts = %d, want 1 (4xx is final)", n)
	}
}

// The SDK checks the CRC-64 COS returns for a part against the bytes it
// sent; a server that reports another CRC fails the part.
func TestFaultWrongPartCRCIsDetected(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: faults.UploadPart, Times: 1, Kind: faults.RewriteResponse, Rewrite: func(h http.Header) { h.Set("x-cos-hash-crc64ecma", "12345") }})
	data := faults.RandBytes(blob.MinPartSize + 10)
	if _, err := faults.Upload(faults.Context(t), s, "mp", data); err != nil {
		t.Fatalf("upload with one lying part answer: %v", err)
	}
	if n := p.Count(func(r faults.Request) bool { return r.Method == "PUT" && r.Query.Has("partNumber") }); n != 3 {
		t.Errorf("part requests = %d, want 2 parts + 1 retry", n)
	}
	blobtest.AssertStored(t, s, "mp", data)
}

// A completed object whose CRC-64 is not the combination of the parts'
// is deleted: no object that lies is left.
func TestFaultWrongObjectCRCDeletesObject(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: faults.CompleteMultipart, Kind: faults.RewriteResponse, Rewrite: func(h http.Header) { h.Set("x-cos-hash-crc64ecma", "1") }})
	data := faults.RandBytes(blob.MinPartSize + 10)
	if _, err := faults.Upload(faults.Context(t), s, "mp", data); !errors.Is(err, blob.ErrBadDigest) {
		t.Fatalf("upload with a wrong completed CRC: %v, want ErrBadDigest", err)
	}
	blobtest.AssertAbsentOrEqual(t, s, "mp", nil)
}

// A whole-object download whose bytes do not match the stored CRC-64 fails
// at the end instead of returning wrong data silently.
func TestFaultDownloadCRCMismatch(t *testing.T) {
	s, p := faultStore(t)
	data := faults.RandBytes(10_000)
	if _, err := s.Put(faults.Context(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Add(faults.Rule{Match: faults.Method("GET", ""), Times: 1, Kind: faults.RewriteResponse, Rewrite: func(h http.Header) { h.Set("x-cos-hash-crc64ecma", "7") }})
	rc, _, err := s.Get(faults.Context(t), "k")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, blob.ErrBadDigest) {
		t.Errorf("Get with a wrong CRC: %v, want ErrBadDigest", err)
	}
}

// A Put carries Content-MD5 (COS refuses a bad body before storing it);
// parts carry it only with checksum md5 (default crc64: the SDK compares
// the CRC-64 COS answers).
func TestContentMD5AndSSEHeaders(t *testing.T) {
	var p *faults.Proxy
	f := cosfake.Start(t, func(h http.Handler) http.Handler { p = faults.New(h); return p })
	cfg := fakeConfig(f, f.NewBucket(t))
	cfg.SSE = SSE{Type: SSEKMS, KMSKeyID: "kms-key-1", KMSContext: map[string]string{"a": "b"}}
	s, err := New(cfg, Options{DialContext: f.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	data := faults.RandBytes(blob.MinPartSize + 10)
	if _, err := s.Put(faults.Context(t), "k", bytes.NewReader(data[:100]), 100, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := faults.Upload(faults.Context(t), s, "mp", data); err != nil {
		t.Fatal(err)
	}
	puts, inits := 0, 0
	for _, r := range p.Requests() {
		if r.Method == "PUT" {
			puts++
			if part := r.Query.Has("partNumber"); (r.Header.Get("Content-MD5") == "") != part {
				t.Errorf("PUT %s?%s: Content-MD5 %q (want one on Puts only)", r.Path, r.Query.Encode(), r.Header.Get("Content-MD5"))
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
	if a, err := s.Head(faults.Context(t), "k"); err != nil || a.Size != 100 {
		t.Errorf("Head = %+v, %v", a, err)
	}
}

// In both checksum modes a part whose body is corrupted on the way is
// caught and resent (crc64: COS stores it, answers the CRC-64 of what it
// got, the SDK sees that it is not the CRC-64 of what it sent, and the
// resend replaces the part; md5: COS refuses it), and a part corrupted on
// every attempt fails the upload with ErrBadDigest, leaving no object and
// no upload.
func TestChecksumModesCatchCorruptParts(t *testing.T) {
	for _, mode := range []string{ChecksumCRC64, ChecksumMD5} {
		t.Run(mode, func(t *testing.T) {
			var p *faults.Proxy
			f := cosfake.Start(t, func(h http.Handler) http.Handler { p = faults.New(h); return p })
			cfg := fakeConfig(f, f.NewBucket(t))
			cfg.Checksum = mode
			s, err := New(cfg, Options{DialContext: f.DialContext})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range faults.CorruptParts(t, s, p) {
				if (r.Header.Get("Content-MD5") != "") != (mode == ChecksumMD5) {
					t.Errorf("part %s: Content-MD5 %q in mode %s", r.Query.Get("partNumber"), r.Header.Get("Content-MD5"), mode)
				}
			}
		})
	}
}

func TestConfigChecksum(t *testing.T) {
	c := Config{Bucket: "b-1250000000", Region: "ap-guangzhou"}.WithDefaults()
	if c.Checksum != ChecksumCRC64 {
		t.Errorf("default checksum %q, want crc64", c.Checksum)
	}
	c.Checksum = "crc32c"
	if err := c.Validate(); err == nil || err.Error() != `cos: config key checksum must be "crc64" or "md5", got "crc32c"` {
		t.Errorf("checksum crc32c: %v", err)
	}
	c.Checksum = ChecksumMD5
	if err := c.Validate(); err != nil {
		t.Errorf("checksum md5: %v", err)
	}
}
