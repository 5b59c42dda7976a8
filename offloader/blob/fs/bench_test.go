package fs

import (
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
)

// BenchmarkUploadStream measures multipart upload to the local directory
// (fsync on), 64 MiB in 8 MiB parts, 4 in flight.
func BenchmarkUploadStream(b *testing.B) {
	s, err := New(Config{Dir: b.TempDir()}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	blobtest.BenchUploadStream(b, s, 4)
}
