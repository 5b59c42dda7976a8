package cos

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/test/cosfake"
)

// BenchmarkUploadStream measures multipart upload throughput through the
// real SDK, cosfake (signature check, MD5, CRC-64) and versitygw, all on
// 127.0.0.1.
func BenchmarkUploadStream(b *testing.B) {
	f := cosfake.Start(b)
	s, err := New(fakeConfig(f, f.NewBucket(b)), Options{DialContext: f.DialContext})
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
}
