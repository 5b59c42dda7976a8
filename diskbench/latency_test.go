package diskbench

import "testing"

func TestFormatNs(t *testing.T) {
	for in, want := range map[int64]string{850: "850ns", 12300: "12.3µs", 4560000: "4.56ms", 1200000000: "1.20s"} {
		if got := FormatNs(in); got != want {
			t.Errorf("FormatNs(%d) = %q, want %q", in, got, want)
		}
	}
}
