package cos

import (
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/test/cosfake"
)

// BenchmarkParts measures multipart upload throughput through the
// real SDK, cosfake (signature check, MD5, CRC-64) and versitygw, all on
// 127.0.0.1.
func BenchmarkParts(b *testing.B) {
	f := cosfake.Start(b)
	s, err := New(fakeConfig(f, f.NewBucket(b)), Options{DialContext: f.DialContext})
	if err != nil {
		b.Fatal(err)
	}
	blobtest.BenchParts(b, s, 1, 4)
}
