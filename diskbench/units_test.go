package diskbench

import (
	"errors"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"4096", 4096}, {"4k", 4096}, {"4K", 4096}, {"4KiB", 4096}, {"4kb", 4096}, {"64k", 65536},
		{"1m", MiB}, {"1MiB", MiB}, {"32MiB", 32 * MiB}, {"8m", 8 * MiB}, {"2G", 2 * GiB}, {"1.5k", 1536},
		{" 512 ", 512}, {"1t", 1 << 40}, {"0", 0},
	} {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "k", "-4k", "4x", "1.3", "NaN", "inf", "1e30g", "4 k b"} {
		if v, err := ParseSize(bad); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("ParseSize(%q) = %d, %v; want ErrInvalidOptions", bad, v, err)
		}
	}
	got, err := ParseSizes("4k, 16k,64k")
	if err != nil || len(got) != 3 || got[2] != 64*KiB {
		t.Errorf("ParseSizes = %v, %v", got, err)
	}
	if _, err := ParseSizes(" , "); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("empty list: %v", err)
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[int64]string{512: "512B", 4096: "4KiB", 1536: "1.50KiB", MiB: "1MiB", 32 * MiB: "32MiB", 3 * GiB / 2: "1.50GiB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int64]string{850: "850ns", 12300: "12.3µs", 4560000: "4.56ms", 1200000000: "1.20s"} {
		if got := FormatNs(in); got != want {
			t.Errorf("FormatNs(%d) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4k", "64KiB", "1m", "2G", "1.5k", "", "-1", "1e3", "999999999999T", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSize(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("ParseSize(%q): error %v does not wrap ErrInvalidOptions", s, err)
			}
			return
		}
		if v < 0 {
			t.Fatalf("ParseSize(%q) = %d < 0", s, v)
		}
		// A formatted whole-unit size parses back to itself.
		if back, err := ParseSize(FormatBytes(v)); err == nil && FormatBytes(back) != FormatBytes(v) {
			t.Fatalf("round trip %d -> %q -> %d", v, FormatBytes(v), back)
		}
	})
}
