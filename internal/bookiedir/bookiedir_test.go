package bookiedir

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tierkeeper/tierkeeper/internal/hostfs"
)

func tree(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFindBookieData: the union of diskbench's and the agent's detectors.
// The comments name the detector that missed a case.
func TestFindBookieData(t *testing.T) {
	for name, c := range map[string]struct {
		files []string
		want  []string
	}{
		"cookie":                     {[]string{"current/VERSION"}, []string{"current/VERSION"}},
		"hex journal":                {[]string{"current/1a2b.txn"}, []string{"current/1a2b.txn"}},
		"hex entry log":              {[]string{"current/0.log"}, []string{"current/0.log"}},
		"top-level hex journal":      {[]string{"17.txn"}, []string{"17.txn"}}, // agent
		"parent of a bookie":         {[]string{"journal/current/VERSION"}, []string{"journal/current/VERSION"}},
		"entry log, other name":      {[]string{"current/entries.log"}, []string{"current/entries.log"}},         // diskbench
		"sub-dir entry logs":         {[]string{"l0/current/5.log"}, []string{"l0/current/5.log"}},               // diskbench
		"rocksdb locations":          {[]string{"current/locations/"}, []string{"current/locations"}},            // diskbench
		"rocksdb ledgers in sub-dir": {[]string{"1/current/ledgers/CURRENT"}, []string{"1/current/ledgers"}},     // diskbench
		"lastMark":                   {[]string{"current/lastMark"}, []string{"current/lastMark"}},               // both
		"compacted entry log":        {[]string{"current/3.log.compacted"}, []string{"current/3.log.compacted"}}, // both
		"names that only look alike": {[]string{"app.log", "notes.txn.bak", "current/gc.log.1", "logs/app.log", "x.txn/"}, nil},
		"empty":                      {nil, nil},
	} {
		t.Run(name, func(t *testing.T) {
			dir := tree(t, c.files...)
			got, err := FindBookieData(dir)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range c.want {
				want = append(want, filepath.Join(dir, w))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("found %v, want %v", got, want)
			}
		})
	}
	// Bounded: a directory full of journals reports a few.
	var many []string
	for i := 0; i < 50; i++ {
		many = append(many, "current/"+string(rune('a'+i%6))+strings.Repeat("0", i/6+1)+".txn")
	}
	if got, err := FindBookieData(tree(t, many...)); err != nil || len(got) != maxHits {
		t.Errorf("many journals: %d hits, %v", len(got), err)
	}
	// current/ as a plain file is no bookie; a missing dir is an error.
	if got, err := FindBookieData(tree(t, "current")); err != nil || len(got) != 0 {
		t.Errorf("current is a file: %v, %v", got, err)
	}
	if _, err := FindBookieData(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
	if os.Geteuid() != 0 {
		dir := tree(t, "current/")
		os.Chmod(filepath.Join(dir, "current"), 0)
		t.Cleanup(func() { os.Chmod(filepath.Join(dir, "current"), 0o755) })
		if _, err := FindBookieData(dir); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("unreadable current/: %v, want an error (unknown is not empty)", err)
		}
	}
}

func TestCookiePaths(t *testing.T) {
	dir := tree(t, "current/VERSION", "b/current/VERSION", "a/current/VERSION", "c/current/", "d/current/VERSION/")
	got, err := CookiePaths(dir)
	want := []string{filepath.Join(dir, "a/current/VERSION"), filepath.Join(dir, "b/current/VERSION"), filepath.Join(dir, "current/VERSION")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("CookiePaths = %v, %v; want %v", got, err, want)
	}
	if got, err := CookiePaths(filepath.Join(dir, "missing")); err != nil || len(got) != 0 {
		t.Errorf("missing dir: %v, %v", got, err)
	}
}

func TestStatAndCheckFS(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o600)
	if _, err := Stat(ctx, filepath.Join(dir, "missing"), hostfs.FS{}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing: %v", err)
	}
	if _, err := Stat(ctx, file, hostfs.FS{}); !errors.Is(err, ErrNotDirectory) {
		t.Errorf("file: %v", err)
	}
	d, err := Stat(ctx, dir, hostfs.FS{SysPath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if d.Path != dir || d.FSType == "" || d.TotalBytes == 0 || d.Device != nil {
		t.Errorf("dir %+v (an empty sysfs root has no device)", d)
	}
	if err := d.CheckWritable(); err != nil {
		t.Errorf("writable temp dir: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Stat(cctx, dir, hostfs.FS{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// /proc is never a disk, whatever the caller allows (diskbench
	// used to say "0B free").
	if p, err := Stat(ctx, "/proc", hostfs.FS{}); err == nil {
		for _, allow := range []bool{false, true} {
			err := p.CheckFS(allow, "use --allow-any-fs")
			if !errors.Is(err, ErrUnsupportedFS) || !strings.Contains(err.Error(), "/proc is on proc, a kernel pseudo-filesystem, not a disk") {
				t.Errorf("/proc allow=%v: %v", allow, err)
			}
		}
	}
	if s, err := Stat(ctx, "/dev/shm", hostfs.FS{}); err == nil && s.FSType == "tmpfs" {
		err := s.CheckFS(false, "use --allow-any-fs to run anyway")
		if !errors.Is(err, ErrUnsupportedFS) || !strings.Contains(err.Error(), "on tmpfs, which is memory, not a disk (use --allow-any-fs to run anyway)") {
			t.Errorf("tmpfs: %v", err)
		}
		if err := s.CheckFS(true, ""); err != nil {
			t.Errorf("tmpfs allowed: %v", err)
		}
	}
	// A filesystem that reports no capacity is not a disk either.
	zero := &Dir{Path: "/x", FSType: "0x1234", FSMagic: 0x1234}
	if err := zero.CheckFS(false, ""); !errors.Is(err, ErrUnsupportedFS) || !strings.Contains(err.Error(), "no capacity") {
		t.Errorf("no capacity: %v", err)
	}
	if FSName(0xef53) != "ext4" || FSName(magicOverlay) != "overlayfs" || FSName(0x1234) != "0x1234" {
		t.Error("FSName")
	}
}
