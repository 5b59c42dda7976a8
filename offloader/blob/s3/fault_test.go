package s3

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/offloader/blob/internal/faults"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

const attempts = 4

// faultStore is a store with the default checksum and signing talking to
// versitygw through a fault injector.
func faultStore(t *testing.T) (*Store, *faults.Proxy) {
	t.Helper()
	return modeStore(t, testenv.StartS3(t), "", "")
}

func TestFaults(t *testing.T) {
	faults.Common(t, func(t *testing.T) (faults.Store, *faults.Proxy) { return faultStore(t) }, attempts)
}

func TestFaultSlowDownExhausted(t *testing.T) {
	s, p := faultStore(t)
	p.Add(faults.Rule{Match: faults.PutObject, Kind: faults.Status, Status: 503, Code: "SlowDown"})
	data := faults.RandBytes(1000)
	_, err := s.Put(faults.Context(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{})
	if err == nil || !strings.Contains(err.Error(), "SlowDown") {
		t.Fatalf("Put against permanent SlowDown: %v", err)
	}
	if n := p.Count(func(r faults.Request) bool { return r.Method == "PUT" }); n != attempts {
		t.Errorf("PUT attempts = %d, want %d", n, attempts)
	}
	blobtest.AssertAbsentOrEqual(t, s, "k", nil)
}

// By default a Put carries Content-MD5 and every part x-amz-checksum-crc32c.
func TestChecksumOnEveryUpload(t *testing.T) {
	s, p := faultStore(t)
	data := faults.RandBytes(blob.MinPartSize + 10)
	if _, err := s.Put(faults.Context(t), "k", bytes.NewReader(data[:100]), 100, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := faults.Upload(faults.Context(t), s, "mp", data); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range p.Requests() {
		if r.Method == "PUT" {
			n++
			want := "Content-MD5"
			if r.Query.Has("partNumber") {
				want = "X-Amz-Checksum-Crc32c"
			}
			if r.Header.Get(want) == "" {
				t.Errorf("PUT %s?%s without %s", r.Path, r.Query.Encode(), want)
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
		s.Put(faults.Context(t), "k", strings.NewReader("x"), 1, blob.PutOptions{})
		s.CreateMultipart(faults.Context(t), "k", blob.PutOptions{})
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
