package testenv

import (
	"slices"
	"testing"
)

// The client tool's JVMs are capped at AVX2 only where JDK 17's SHA-256
// stub can meet dirty 512-bit state: x86-64 with the SHA extensions and
// AVX-512.
func TestSHAStubFlags(t *testing.T) {
	const both = "processor\t: 0\nflags\t\t: fpu sse4_2 avx2 avx512f sha_ni vaes\n"
	for _, c := range []struct {
		goarch, cpuinfo string
		want            []string
	}{
		{"amd64", both, []string{"-XX:UseAVX=2"}},
		{"arm64", both, nil},
		{"amd64", "flags\t\t: fpu sse4_2 avx2 sha_ni\n", nil},
		{"amd64", "flags\t\t: fpu sse4_2 avx2 avx512f\n", nil},
		{"amd64", "", nil},
	} {
		if got := shaStubFlags(c.goarch, c.cpuinfo); !slices.Equal(got, c.want) {
			t.Errorf("shaStubFlags(%s, %q) = %v, want %v", c.goarch, c.cpuinfo, got, c.want)
		}
	}
}
