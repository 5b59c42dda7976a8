package fs

import (
	"bytes"
	"context"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// BenchmarkUploadStream measures multipart upload to the local directory
// (fsync on), 64 MiB in 8 MiB parts, 4 in flight.
func BenchmarkUploadStream(b *testing.B) {
	s, err := New(Config{Dir: b.TempDir()}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 64<<20)
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		if _, err := blob.UploadStream(context.Background(), s, "bench", bytes.NewReader(data), blob.UploadOptions{PartSize: 8 << 20, Concurrency: 4}); err != nil {
			b.Fatal(err)
		}
	}
}
