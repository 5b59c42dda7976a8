package cos

import (
	"hash/crc64"
	"math/rand/v2"
	"testing"
)

func TestCRC64CheckValues(t *testing.T) {
	for in, want := range map[string]uint64{"123456789": 11051210869376104954, "abc": 3231342946509354535, "": 0} {
		if got := crc64.Checksum([]byte(in), crcTable); got != want {
			t.Errorf("crc64(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestCRC64Combine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		a := make([]byte, r.IntN(3000))
		b := make([]byte, r.IntN(3000))
		for j := range a {
			a[j] = byte(r.UintN(256))
		}
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		want := crc64.Checksum(append(append([]byte{}, a...), b...), crcTable)
		got := crc64Combine(crc64.Checksum(a, crcTable), crc64.Checksum(b, crcTable), int64(len(b)))
		if got != want {
			t.Fatalf("combine(%d+%d bytes) = %d, want %d", len(a), len(b), got, want)
		}
	}
}

func FuzzCRC64Combine(f *testing.F) {
	f.Add([]byte("abc"), []byte("defgh"))
	f.Add([]byte{}, []byte{0})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := crc64.Checksum(append(append([]byte{}, a...), b...), crcTable)
		if got := crc64Combine(crc64.Checksum(a, crcTable), crc64.Checksum(b, crcTable), int64(len(b))); got != want {
			t.Fatalf("combine mismatch")
		}
	})
}
