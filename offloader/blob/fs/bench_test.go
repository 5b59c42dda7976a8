package fs

import (
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
)

// BenchmarkParts measures multipart upload to the local directory
// (fsync on), 64 MiB in 8 MiB parts, 4 in flight.
func BenchmarkParts(b *testing.B) {
	s, err := New(Config{Dir: b.TempDir()}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	blobtest.BenchParts(b, s, 4)
}
