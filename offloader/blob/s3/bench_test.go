package s3

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// BenchmarkUploadStream measures multipart upload throughput to versitygw
// on 127.0.0.1 (MB/s = what the client side and the loopback server can
// do, not a cloud figure).
func BenchmarkUploadStream(b *testing.B) {
	srv := testenv.StartS3(b)
	s, err := New(context.Background(), staticConfig(srv, srv.NewBucket(b)), Options{})
	if err != nil {
		b.Fatal(err)
	}
	data := randBytes(64 << 20)
	for _, conc := range []int{1, 4} {
		b.Run(fmt.Sprintf("64MiB/parts=8MiB/concurrency=%d", conc), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				if _, err := blob.UploadStream(context.Background(), s, "bench", bytes.NewReader(data), blob.UploadOptions{PartSize: 8 << 20, Concurrency: conc}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("Put1MiB", func(b *testing.B) {
		b.SetBytes(1 << 20)
		for i := 0; i < b.N; i++ {
			if _, err := s.Put(context.Background(), "small", bytes.NewReader(data[:1<<20]), 1<<20, blob.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
