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
