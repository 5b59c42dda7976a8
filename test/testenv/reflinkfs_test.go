package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// ReflinkFS gives an XFS mount on which a file can be cloned (FICLONE
// fails on a file system without reflink), and the clone reads back the
// same bytes.
func TestReflinkFSClones(t *testing.T) {
	mnt := ReflinkFS(t, 512<<20)
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.XFS_SUPER_MAGIC {
		t.Fatalf("%s has file system type %#x, want XFS", mnt, st.Type)
	}
	want := bytes.Repeat([]byte("tierkeeper"), 1<<18)
	src := filepath.Join(mnt, "src")
	if err := os.WriteFile(src, want, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(mnt, "clone"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := unix.IoctlFileClone(int(out.Fd()), int(in.Fd())); err != nil {
		t.Fatalf("FICLONE on %s: %v", mnt, err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(mnt, "clone"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the clone reads %d bytes (equal %v, err %v)", len(got), bytes.Equal(got, want), err)
	}
}
