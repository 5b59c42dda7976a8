package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reflinkCmdTimeout bounds each command ReflinkFS runs (mkfs, losetup,
// mount, umount).
const reflinkCmdTimeout = time.Minute

// ReflinkFS mounts a fresh XFS file system with reflink on a loop device
// and returns its mount point; t's cleanup unmounts it and removes its
// image. The image is a sparse file of size bytes under CacheDir, and the
// loop device reads and writes it with direct I/O, so its pages are not
// cached twice. On it, copy_file_range clones extents instead of copying
// bytes: a versitygw there (S3Options.Dir) completes a multipart upload
// by cloning the parts (and writing back those still dirty), as an object
// store's completion does not copy the object's bytes through the
// client's host again. It needs root (losetup, mount) and mkfs.xfs
// (xfsprogs, which make deps installs); without them the test fails or is
// skipped (Unavailable) saying which.
func ReflinkFS(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "a reflink file system needs root (losetup, mount)")
		return ""
	}
	if _, err := exec.LookPath("mkfs.xfs"); err != nil {
		Unavailable(t, "mkfs.xfs not found (xfsprogs; make deps installs it)")
		return ""
	}
	dir, err := os.MkdirTemp(CacheDir(), "reflinkfs-")
	if err != nil {
		t.Fatal(err)
	}
	img, mnt := filepath.Join(dir, "image"), filepath.Join(dir, "mnt")
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err == nil {
		err = f.Truncate(size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatalf("reflink file system image: %v", err)
	}
	if _, err := runBounded("mkfs.xfs", "-q", "-m", "reflink=1", img); err != nil {
		t.Fatal(err)
	}
	dev, err := runBounded("losetup", "--direct-io=on", "--find", "--show", img)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := runBounded("losetup", "--detach", dev); err != nil {
			t.Logf("reflink file system: %v", err)
		}
	})
	// discard: space freed on it is freed in the image too.
	if _, err := runBounded("mount", "-o", "discard", dev, mnt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := runBounded("umount", mnt); err != nil {
			// Files still open on it (a process that outlived the
			// test): detach it now, freed when they close.
			t.Logf("reflink file system: %v; unmounting lazily", err)
			if _, err := runBounded("umount", "--lazy", mnt); err != nil {
				t.Logf("reflink file system: %v", err)
			}
		}
	})
	return mnt
}

// runBounded runs a command through RunTool, for at most
// reflinkCmdTimeout, and returns its trimmed standard output.
func runBounded(name string, args ...string) (string, error) {
	out, err := RunTool(context.Background(), reflinkCmdTimeout, exec.Command(name, args...))
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
