package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func check(t *testing.T, a, b []byte) {
	t.Helper()
	ab := append(append([]byte(nil), a...), b...)
	want := crc32.Checksum(ab, crc32.MakeTable(crc32.Castagnoli))
	ca, cb := Checksum(a), Checksum(b)
	if got := Combine(ca, cb, int64(len(b))); got != want {
		t.Fatalf("Combine(len %d, len %d) = %08x, crc32.Checksum of the concatenation = %08x", len(a), len(b), got, want)
	}
	if got := Suffix(want, ca, int64(len(b))); got != cb {
		t.Fatalf("Suffix(len %d, len %d) = %08x, crc32.Checksum of B = %08x", len(a), len(b), got, cb)
	}
	if got := Update(ca, b); got != want {
		t.Fatalf("Update = %08x, want %08x", got, want)
	}
}

func TestCombineAndSuffixAgainstTheConcatenation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 2, 3, 7, 8, 31, 32, 33, 255, 4096, 65535, 65536, 1 << 20, 1<<20 + 12345, 3 << 20}
	for _, na := range []int{0, 1, 12, 32, 4097} {
		for _, nb := range sizes {
			a, b := make([]byte, na), make([]byte, nb)
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			check(t, a, b)
		}
	}
}

// TestShiftOfLongZeroRuns checks shifts past the lengths hashed above
// against the CRC of runs of zero bytes, through the identity
// crc(A||0^n) = Combine(crc(A), crc(0^n), n).
func TestShiftOfLongZeroRuns(t *testing.T) {
	zeros := make([]byte, 64<<20)
	a := []byte("tierkeeper")
	for _, n := range []int{64 << 20, 48<<20 + 3, 1<<25 + 1} {
		want := Update(Checksum(a), zeros[:n])
		if got := Combine(Checksum(a), Checksum(zeros[:n]), int64(n)); got != want {
			t.Fatalf("n=%d: Combine = %08x, want %08x", n, got, want)
		}
	}
}

func FuzzCombine(f *testing.F) {
	f.Add([]byte("header"), []byte("payload"))
	f.Add([]byte{}, []byte{0})
	f.Fuzz(func(t *testing.T, a, b []byte) { check(t, a, b) })
}

func BenchmarkCombine(b *testing.B) {
	for b.Loop() {
		Combine(0x12345678, 0x9abcdef0, 1<<20+12345)
	}
}

// BenchmarkChecksumCache: hashing 1 MiB that is in this core's cache (the
// same buffer again) against 1 MiB last touched 255 MiB ago (a ring of
// 256 buffers): why a bookie frame is hashed as it arrives
// (wire.ReadFrameSum) rather than in a later pass.
func BenchmarkChecksumCache(b *testing.B) {
	for _, c := range []struct {
		name string
		bufs int
	}{{"hot-1MiB", 1}, {"cold-256MiB-ring", 256}} {
		b.Run(c.name, func(b *testing.B) {
			ring := make([][]byte, c.bufs)
			for i := range ring {
				ring[i] = make([]byte, 1<<20)
				for j := range ring[i] {
					ring[i][j] = byte(i + j*7)
				}
			}
			b.SetBytes(1 << 20)
			i := 0
			for b.Loop() {
				Checksum(ring[i%len(ring)])
				i++
			}
		})
	}
}
