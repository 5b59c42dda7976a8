package diskbench

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testDir returns a fresh directory and registers a check, run after the
// test, that diskbench left no file in it.
func testDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { assertClean(t, dir) })
	return dir
}

func assertClean(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Errorf("read %s: %v", dir, err)
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".diskbench-") {
			t.Errorf("benchmark file left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
}

// quick returns options for a fast run in dir.
func quick(dir string) Options {
	return Options{
		Dir:        dir,
		Duration:   300 * time.Millisecond,
		Warmup:     50 * time.Millisecond,
		MaxBytes:   64 * MiB,
		AllowAnyFS: true, // t.TempDir may be tmpfs on some machines
		Seed:       1,
	}
}

// faultFS wraps OpenOSFile and injects errors. It records every path it
// opened so a test can check they are all gone.
type faultFS struct {
	mu     sync.Mutex
	paths  map[string]bool
	writes atomic.Int64

	// failOpen, when it returns non-nil, fails that open.
	failOpen func(name string, flag int) error
	// failWriteAfter fails every write after this many (0: never) with writeErr.
	failWriteAfter int64
	writeErr       error
	// syncErr fails every Datasync.
	syncErr error
	// syncDelay, when set, makes every Datasync a sleep this long instead
	// of a real one: a disk of known, steady sync latency.
	syncDelay time.Duration
	// allocErr fails every Allocate.
	allocErr error
}

func (fs *faultFS) open(name string, flag int, perm os.FileMode) (File, error) {
	if fs.failOpen != nil {
		if err := fs.failOpen(name, flag); err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
	f, err := OpenOSFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	if fs.paths == nil {
		fs.paths = map[string]bool{}
	}
	fs.paths[name] = true
	fs.mu.Unlock()
	return &faultFile{File: f, fs: fs, name: name}, nil
}

func (fs *faultFS) assertGone(t *testing.T) {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.paths) == 0 {
		t.Errorf("fault opener never opened a file")
	}
	for p := range fs.paths {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists (err %v)", p, err)
		}
	}
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	n := f.fs.writes.Add(1)
	if f.fs.failWriteAfter > 0 && n > f.fs.failWriteAfter {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: f.fs.writeErr}
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Datasync() error {
	if f.fs.syncErr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.name, Err: f.fs.syncErr}
	}
	if f.fs.syncDelay > 0 {
		time.Sleep(f.fs.syncDelay)
		return nil
	}
	return f.File.Datasync()
}

func (f *faultFile) Allocate(off, size int64) error {
	if f.fs.allocErr != nil {
		return &os.PathError{Op: "fallocate", Path: f.name, Err: f.fs.allocErr}
	}
	return f.File.Allocate(off, size)
}
