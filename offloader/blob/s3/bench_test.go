package s3

import (
	"bytes"
	"context"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/offloader/blob/internal/faults"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// BenchmarkParts measures multipart upload throughput to versitygw
// on 127.0.0.1 (MB/s = what the client side and the loopback server can
// do, not a cloud figure).
func BenchmarkParts(b *testing.B) {
	srv := testenv.StartS3(b)
	s, err := New(context.Background(), staticConfig(srv, srv.NewBucket(b)), Options{})
	if err != nil {
		b.Fatal(err)
	}
	blobtest.BenchParts(b, s, 1, 4)
	data := faults.RandBytes(1 << 20)
	b.Run("Put1MiB", func(b *testing.B) {
		b.SetBytes(1 << 20)
		for i := 0; i < b.N; i++ {
			if _, err := s.Put(context.Background(), "small", bytes.NewReader(data), 1<<20, blob.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUploadCPU gives MB/s and the client's CPU seconds per GiB
// (versitygw runs in its own process) of a 256 MiB multipart upload in
// 10 MiB parts (the offloader's default block) over plain http, for each
// part checksum and payload signing: md5+signed is what every part cost
// before the checksum option (the SDK signs the SHA-256 over http),
// crc32c+unsigned the cheapest. The https case is crc32c over TLS with the
// default payload signing (no payload hash over TLS), as a production
// store is reached.
func BenchmarkUploadCPU(b *testing.B) {
	srv := testenv.StartS3(b)
	bucket := srv.NewBucket(b)
	for _, mode := range []struct{ checksum, signing string }{
		{ChecksumMD5, PayloadSigningSigned},
		{ChecksumMD5, PayloadSigningUnsigned},
		{ChecksumCRC32C, PayloadSigningSigned},
		{ChecksumCRC32C, PayloadSigningUnsigned},
	} {
		b.Run("checksum="+mode.checksum+"/signing="+mode.signing, func(b *testing.B) {
			cfg := staticConfig(srv, bucket)
			cfg.Checksum, cfg.PayloadSigning = mode.checksum, mode.signing
			s, err := New(context.Background(), cfg, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			blobtest.BenchUploadCPU(b, s, 256<<20, 10<<20)
		})
	}
	b.Run("https/checksum="+ChecksumCRC32C+"/signing="+PayloadSigningAuto, func(b *testing.B) {
		tls := testenv.StartPrivateS3TLS(b, testenv.NewCA(b, "bench"))
		b.Setenv("AWS_CA_BUNDLE", tls.CAFile)
		cfg := staticConfig(tls, tls.NewBucket(b))
		cfg.Checksum = ChecksumCRC32C
		s, err := New(context.Background(), cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		blobtest.BenchUploadCPU(b, s, 256<<20, 10<<20)
	})
}
