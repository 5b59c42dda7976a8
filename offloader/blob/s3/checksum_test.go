package s3

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/offloader/blob/internal/faults"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// modeStore is a store with the given checksum and payload signing,
// talking plain http to versitygw through a fault injector.
func modeStore(t *testing.T, srv *testenv.S3, checksum, signing string) (*Store, *faults.Proxy) {
	t.Helper()
	p, err := faults.NewReverse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(p)
	t.Cleanup(ts.Close)
	cfg := staticConfig(srv, srv.NewBucket(t))
	cfg.Endpoint, cfg.Checksum, cfg.PayloadSigning = ts.URL, checksum, signing
	cfg.Retry = Retry{MaxAttempts: attempts, MaxBackoff: blob.Duration(5 * time.Millisecond)}
	return newTestStore(t, cfg, Options{}), p
}

// Every checksum and signing mode sends what it says on each part, and a
// part whose body is corrupted on the way is refused by versitygw and
// resent; a part corrupted on every attempt fails the upload with
// ErrBadDigest and leaves no object and no upload. With UNSIGNED-PAYLOAD
// the checksum header is the only thing that catches the flipped byte.
// UsesPartCRC32C says true exactly for the mode that sends a CRC-32C.
func TestChecksumModesRefuseCorruptParts(t *testing.T) {
	srv := testenv.StartS3(t)
	for _, tc := range []struct {
		checksum, signing string
		header            string // the part's checksum header
		payload           string // x-amz-content-sha256 ("": a hex SHA-256)
	}{
		{ChecksumCRC32C, PayloadSigningUnsigned, "X-Amz-Checksum-Crc32c", "UNSIGNED-PAYLOAD"},
		{ChecksumMD5, PayloadSigningUnsigned, "Content-Md5", "UNSIGNED-PAYLOAD"},
		{ChecksumCRC32C, PayloadSigningAuto, "X-Amz-Checksum-Crc32c", ""}, // http: signed
		{ChecksumMD5, PayloadSigningSigned, "Content-Md5", ""},
	} {
		t.Run(tc.checksum+"/"+tc.signing, func(t *testing.T) {
			s, p := modeStore(t, srv, tc.checksum, tc.signing)
			// The store says it uses a part CRC-32C exactly when it sends one.
			if got, want := blob.UsesPartCRC32C(s), tc.header == "X-Amz-Checksum-Crc32c"; got != want {
				t.Errorf("UsesPartCRC32C = %v, want %v", got, want)
			}
			for _, r := range faults.CorruptParts(t, s, p) {
				if r.Header.Get(tc.header) == "" {
					t.Errorf("part %s without %s", r.Query.Get("partNumber"), tc.header)
				}
				for _, other := range []string{"Content-Md5", "X-Amz-Checksum-Crc32c"} {
					if other != tc.header && r.Header.Get(other) != "" {
						t.Errorf("part %s carries %s too", r.Query.Get("partNumber"), other)
					}
				}
				got := r.Header.Get("X-Amz-Content-Sha256")
				if tc.payload != "" && got != tc.payload || tc.payload == "" && len(got) != 64 {
					t.Errorf("part %s: x-amz-content-sha256 %q, want %s", r.Query.Get("partNumber"), got, orHex(tc.payload))
				}
			}
		})
	}
}

func orHex(s string) string {
	if s == "" {
		return "a hex SHA-256"
	}
	return s
}

// Single-request Puts keep Content-MD5 in every mode (a corrupted body is
// refused and resent) and follow the payload signing.
func TestPutKeepsContentMD5(t *testing.T) {
	srv := testenv.StartS3(t)
	for signing, payload := range map[string]string{PayloadSigningUnsigned: "UNSIGNED-PAYLOAD", PayloadSigningSigned: ""} {
		s, p := modeStore(t, srv, ChecksumCRC32C, signing)
		p.Add(faults.Rule{Match: faults.PutObject, Times: 1, Kind: faults.CorruptRequestBody})
		data := faults.RandBytes(1000)
		if _, err := s.Put(faults.Context(t), "k", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
			t.Fatalf("%s: Put with one corrupted attempt: %v", signing, err)
		}
		blobtest.AssertStored(t, s, "k", data)
		n := 0
		for _, r := range p.Requests() {
			if r.Method != "PUT" {
				continue
			}
			n++
			got := r.Header.Get("X-Amz-Content-Sha256")
			if r.Header.Get("Content-Md5") == "" || payload != "" && got != payload || payload == "" && len(got) != 64 {
				t.Errorf("%s Put: Content-MD5 %q, x-amz-content-sha256 %q", signing, r.Header.Get("Content-Md5"), got)
			}
		}
		if n != 2 {
			t.Errorf("%s: %d PUTs, want 2 (one corrupted, one resend)", signing, n)
		}
	}
}

func TestConfigChecksumAndSigning(t *testing.T) {
	base := Config{Bucket: "b"}.WithDefaults()
	if base.Checksum != ChecksumCRC32C || base.PayloadSigning != PayloadSigningAuto {
		t.Errorf("defaults: checksum %q, payload_signing %q", base.Checksum, base.PayloadSigning)
	}
	for _, tc := range []struct{ checksum, signing, wantErr string }{
		{"md5", "unsigned", ""},
		{"crc32", "auto", `config key checksum must be "crc32c" or "md5", got "crc32"`},
		{"crc32c", "none", `config key payload_signing must be "auto", "unsigned" or "signed", got "none"`},
	} {
		c := base
		c.Checksum, c.PayloadSigning = tc.checksum, tc.signing
		err := c.Validate()
		if got := fmt.Sprint(err); tc.wantErr == "" && err != nil || tc.wantErr != "" && got != "s3: "+tc.wantErr {
			t.Errorf("checksum %q payload_signing %q: %v, want %q", tc.checksum, tc.signing, err, tc.wantErr)
		}
	}
}

// A part uploaded with a CRC-32C from the caller (blob.WithPartCRC32C, as
// an offload's blocks are) carries that value, and versitygw checks it
// against the bytes: the right one is accepted and the object reads back,
// a wrong one is refused with ErrBadDigest.
func TestCallerPartCRC32CIsVerifiedByTheServer(t *testing.T) {
	srv := testenv.StartS3(t)
	s, _ := modeStore(t, srv, ChecksumCRC32C, PayloadSigningUnsigned)
	ctx := t.Context()
	part := bytes.Repeat([]byte("tierkeeper part "), blob.MinPartSize/16)
	sum := crc32.Checksum(part, crc32.MakeTable(crc32.Castagnoli))
	mp, err := s.CreateMultipart(ctx, "caller-crc", blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := mp.UploadPart(blob.WithPartCRC32C(ctx, sum^1), 1, part); !errors.Is(err, blob.ErrBadDigest) {
		t.Fatalf("part with a wrong CRC-32C: err = %v, want ErrBadDigest", err)
	}
	if err := mp.UploadPart(blob.WithPartCRC32C(ctx, sum), 1, part); err != nil {
		t.Fatalf("part with its CRC-32C: %v", err)
	}
	if _, err := mp.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Get(ctx, "caller-crc")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, part) {
		t.Fatalf("read back %d bytes (%v), want the %d bytes of the part", len(got), err, len(part))
	}
}
