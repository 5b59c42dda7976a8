package blobtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// BenchParts measures the multipart pipeline (blob.Parts) storing a 64 MiB
// object in 8 MiB parts to s, one sub-benchmark per number of parts in
// flight ("64MiB/parts=8MiB/concurrency=N").
func BenchParts(b *testing.B, s blob.Store, concurrency ...int) {
	data := make([]byte, 64<<20)
	rand.NewChaCha8([32]byte{64}).Read(data)
	for _, conc := range concurrency {
		b.Run(fmt.Sprintf("64MiB/parts=8MiB/concurrency=%d", conc), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				if _, err := UploadParts(context.Background(), s, "bench", data, 8<<20, conc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
