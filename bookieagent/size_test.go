package bookieagent

import (
	"errors"
	"testing"
)

func TestParseSize(t *testing.T) {
	ok := map[string]int64{
		"4096": 4096, "64k": 64 * KiB, "64KiB": 64 * KiB, "64KB": 64 * KiB, "4g": 4 * GiB, "4G": 4 * GiB,
		"2GiB": 2 * GiB, "512m": 512 * MiB, "1.5GiB": 3 * GiB / 2, " 1t ": TiB, "0": 0, "10B": 10,
	}
	for in, want := range ok {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "g", "-1", "4x", "1e400", "NaN", "9999999999999999999", "99999999999t", "1..2m", "KiB"} {
		if v, err := ParseSize(in); !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseSize(%q) = %d, %v; want ErrBadSize", in, v, err)
		}
	}
}

func TestFormatSizeRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 1000, 4096, 64 * MiB, 3 * GiB, 206150041, 5 * TiB} {
		got, err := ParseSize(FormatSize(n))
		if err != nil || got != n {
			t.Errorf("%d → %q → %d, %v", n, FormatSize(n), got, err)
		}
	}
}

func TestJVMDirectMemory(t *testing.T) {
	for in, want := range map[string]JVMMemory{
		"-Xms2g -Xmx2g -XX:MaxDirectMemorySize=4g":                     {DirectBytes: 4 * GiB, Source: "-XX:MaxDirectMemorySize", HeapBytes: 2 * GiB},
		" -Xms1g -Xmx1g ":                                              {DirectBytes: GiB, Source: "-Xmx (JVM default for direct memory)", HeapBytes: GiB},
		`"-XX:MaxDirectMemorySize=512m" -Xmx4096m`:                     {DirectBytes: 512 * MiB, Source: "-XX:MaxDirectMemorySize", HeapBytes: 4096 * MiB},
		"-XX:MaxDirectMemorySize=1g -XX:MaxDirectMemorySize=2g -Xmx1g": {DirectBytes: 2 * GiB, Source: "-XX:MaxDirectMemorySize", HeapBytes: GiB},
		"-XX:MaxDirectMemorySize=8589934592":                           {DirectBytes: 8 * GiB, Source: "-XX:MaxDirectMemorySize"},
	} {
		got, err := JVMDirectMemory(in)
		if err != nil || got != want {
			t.Errorf("JVMDirectMemory(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if _, err := JVMDirectMemory("-Xms2g -XX:+UseG1GC"); !errors.Is(err, ErrNoDirectMemory) {
		t.Errorf("no flags: %v", err)
	}
	for _, in := range []string{"-XX:MaxDirectMemorySize=4gb", "-Xmx", "-Xmx1.5g", "-XX:MaxDirectMemorySize=0"} {
		if _, err := JVMDirectMemory(in); !errors.Is(err, ErrBadSize) {
			t.Errorf("%q: %v, want ErrBadSize", in, err)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4g", "1.5GiB", "64k", "", "-1", "1e3m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSize(s)
		if err == nil && v < 0 {
			t.Fatalf("%q → negative %d", s, v)
		}
		_, _ = JVMDirectMemory(s)
	})
}
