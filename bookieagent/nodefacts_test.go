package bookieagent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The first source given wins: JVM options, a size, then the environment
// variables in order (unset or blank ones are skipped and named when none
// is left).
func TestResolveDirectMemory(t *testing.T) {
	env := map[string]string{"BOOKIE_MEM": " ", "PULSAR_MEM": "-Xmx2g -XX:MaxDirectMemorySize=4g"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	spec := DirectMemorySpec{JVMOptionsName: "--mem", SizeName: "--max-direct-memory", Env: []string{"BOOKIE_MEM", "PULSAR_MEM"}, LookupEnv: lookup}
	m, err := ResolveDirectMemory(spec)
	if err != nil || m.Bytes != 4*GiB || m.HeapBytes != 2*GiB || m.Source != "PULSAR_MEM -XX:MaxDirectMemorySize" {
		t.Errorf("from the environment: %+v %v", m, err)
	}
	s := spec
	s.Size = "1g"
	if m, err := ResolveDirectMemory(s); err != nil || m.Bytes != GiB || m.Source != "--max-direct-memory 1g" || m.HeapBytes != 0 {
		t.Errorf("from the size: %+v %v", m, err)
	}
	s.JVMOptions = "-Xmx3g"
	if m, err := ResolveDirectMemory(s); err != nil || m.Bytes != 3*GiB || !strings.HasPrefix(m.Source, "--mem -Xmx") {
		t.Errorf("from the JVM options: %+v %v", m, err)
	}
	for _, bad := range []DirectMemorySpec{{Size: "0", SizeName: "--max-direct-memory"}, {Size: "lots", SizeName: "--max-direct-memory"}} {
		if _, err := ResolveDirectMemory(bad); !errors.Is(err, ErrBadSize) || !strings.HasPrefix(err.Error(), "--max-direct-memory: ") {
			t.Errorf("size %q: %v", bad.Size, err)
		}
	}
	delete(env, "PULSAR_MEM")
	if _, err := ResolveDirectMemory(spec); !errors.Is(err, ErrNoDirectMemory) || !strings.Contains(err.Error(), "set one of BOOKIE_MEM, PULSAR_MEM") {
		t.Errorf("nothing given: %v", err)
	}
}

func TestResolveMemoryLimit(t *testing.T) {
	if l, src, err := ResolveMemoryLimit(HostFS{}, "16g", "--memory-limit"); err != nil || l != 16*GiB || src != "--memory-limit 16g" {
		t.Errorf("16g: %d %q %v", l, src, err)
	}
	if l, src, err := ResolveMemoryLimit(HostFS{}, MemoryLimitNone, "--memory-limit"); err != nil || l != 0 || src != "" {
		t.Errorf("none: %d %q %v", l, src, err)
	}
	if _, _, err := ResolveMemoryLimit(HostFS{}, "-1g", "--memory-limit"); err == nil || !strings.Contains(err.Error(), "want a size like 16g, or none") {
		t.Errorf("negative: %v", err)
	}
}

// WriteInput's file reads back; a document with fields Input lacks is
// refused.
func TestReadWriteInput(t *testing.T) {
	dir := t.TempDir()
	in := Input{CPUs: 8, CPUsSource: "--cpus", DirectMemoryBytes: 4 * GiB, EntrySizeBytes: 4096}
	var b bytes.Buffer
	if err := WriteInput(&b, in); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "in.json")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadInput(p)
	if err != nil || got.CPUs != 8 || got.DirectMemoryBytes != 4*GiB || got.EntrySizeBytes != 4096 {
		t.Errorf("read back %+v %v", got, err)
	}
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"cpus": 2, "mounts": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadInput(other); err == nil || !strings.Contains(err.Error(), other) {
		t.Errorf("unknown field: %v", err)
	}
}
