package bookieagent

import (
	"errors"
	"testing"
)

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

// FuzzJVMDirectMemory: any option string gives a positive size or an
// error, never a panic.
func FuzzJVMDirectMemory(f *testing.F) {
	for _, s := range []string{"-Xmx4g", "-XX:MaxDirectMemorySize=1.5GiB -Xmx2g", "-Xmx", "", "-Xmx-1", "-XX:MaxDirectMemorySize=1e3m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := JVMDirectMemory(s)
		if err == nil && (m.DirectBytes <= 0 || m.HeapBytes < 0) {
			t.Fatalf("%q → %+v", s, m)
		}
	})
}
