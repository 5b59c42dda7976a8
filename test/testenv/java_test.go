package testenv

import (
	"slices"
	"testing"
)

// The client tool's JVMs are capped at AVX2 only where JDK 17's SHA-256
// stub can meet dirty 512-bit state: x86-64 with the SHA extensions and
// AVX-512.
func TestSHAStubFlags(t *testing.T) {
	both := []string{"fpu", "sse4_2", "avx2", "avx512f", "sha_ni", "vaes"}
	for _, c := range []struct {
		goarch string
		flags  []string
		want   []string
	}{
		{"amd64", both, []string{"-XX:UseAVX=2"}},
		{"arm64", both, nil},
		{"amd64", []string{"fpu", "sse4_2", "avx2", "sha_ni"}, nil},
		{"amd64", []string{"fpu", "sse4_2", "avx2", "avx512f"}, nil},
		{"amd64", nil, nil},
	} {
		if got := shaStubFlags(c.goarch, c.flags); !slices.Equal(got, c.want) {
			t.Errorf("shaStubFlags(%s, %q) = %v, want %v", c.goarch, c.flags, got, c.want)
		}
	}
	// On this machine: what gopsutil reads from /proc/cpuinfo decides.
	t.Logf("this machine's client tool JVMs get %q", shaStubWorkaround())
}
