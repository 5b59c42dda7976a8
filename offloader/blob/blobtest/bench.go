package blobtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"

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

// BenchUploadCPU stores an object of size bytes per iteration through
// blob.Parts (partSize parts, two in flight) and reports, besides MB/s
// and allocations, the CPU cost per GiB stored: "cpu-s/GiB" is the user +
// system CPU seconds of this process (getrusage, not wall time) divided by
// the GiB uploaded, so it counts the client and whatever else runs in the
// test process (not a server in another process).
func BenchUploadCPU(b *testing.B, s blob.Store, size, partSize int) {
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{byte(size >> 20)}).Read(data)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	u0, s0 := CPUSplit(b)
	for i := 0; i < b.N; i++ {
		if _, err := UploadParts(context.Background(), s, "bench-cpu", data, partSize, 2); err != nil {
			b.Fatal(err)
		}
	}
	u1, s1 := CPUSplit(b)
	b.StopTimer()
	g := float64(b.N) * float64(size) / (1 << 30)
	b.ReportMetric((u1-u0+s1-s0)/g, "cpu-s/GiB")
	b.ReportMetric((u1-u0)/g, "user-s/GiB")
	b.ReportMetric((s1-s0)/g, "sys-s/GiB")
}

// CPUSeconds is the user + system CPU time this process has used
// (getrusage RUSAGE_SELF).
func CPUSeconds(tb testing.TB) float64 {
	u, s := CPUSplit(tb)
	return u + s
}

// CPUSplit is the user and the system CPU time this process has used
// (getrusage RUSAGE_SELF), in seconds.
func CPUSplit(tb testing.TB) (user, system float64) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return float64(ru.Utime.Nano()) / 1e9, float64(ru.Stime.Nano()) / 1e9
}
