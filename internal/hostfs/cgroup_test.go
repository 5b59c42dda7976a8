package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cgroupTree writes self/cgroup and the given sysfs files (path → body).
func cgroupTree(t *testing.T, self string, files map[string]string) FS {
	t.Helper()
	h := procTree(t, "self/cgroup", self)
	for p, body := range files {
		f := filepath.Join(h.SysPath, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		name, self string
		files      map[string]string
		want       int64
		ok         bool
		src        string
	}{
		{"v2 pod", "0::/kubepods/pod1/c1\n", map[string]string{
			"fs/cgroup/kubepods/pod1/c1/memory.max": "max\n", "fs/cgroup/kubepods/pod1/memory.max": "4294967296\n"}, 4 << 30, true, "cgroup v2 memory.max"},
		{"v2 namespaced", "0::/\n", map[string]string{"fs/cgroup/memory.max": "2147483648\n"}, 2 << 30, true, "cgroup v2"},
		{"v2 unlimited", "0::/a\n", map[string]string{"fs/cgroup/a/memory.max": "max\n"}, 0, false, "no limit"},
		{"v1", "4:memory:/process_api/x\n0::/\n", map[string]string{
			"fs/cgroup/memory/process_api/x/memory.limit_in_bytes": "1073741824\n", "fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 1 << 30, true, "cgroup v1 memory.limit_in_bytes"},
		{"v1 unlimited", "4:memory:/\n", map[string]string{"fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false, "no limit"},
		{"no files", "0::/x\n", nil, 0, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, src, ok, err := cgroupTree(t, c.self, c.files).MemoryLimit()
			if err != nil || got != c.want || ok != c.ok || !strings.Contains(src, c.src) {
				t.Errorf("MemoryLimit() = %d, %q, %v, %v; want %d, %q, %v", got, src, ok, err, c.want, c.src, c.ok)
			}
		})
	}
	if _, _, _, err := cgroupTree(t, "0::/\n", map[string]string{"fs/cgroup/memory.max": "lots\n"}).MemoryLimit(); !errors.Is(err, ErrBadProcFile) {
		t.Errorf("garbled memory.max: %v, want ErrBadProcFile", err)
	}
	// This machine: whatever it reports, it reports without an error.
	if _, _, _, err := (FS{}).MemoryLimit(); err != nil {
		t.Errorf("real /proc and /sys: %v", err)
	}
}
