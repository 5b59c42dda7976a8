package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// ownedTempDir creates a directory under os.TempDir() named prefix and a
// random suffix, owned by this process (its pid in owner.pid): it outlives
// the test that made it but not the test binary. Directories of the same
// prefix whose owner has exited are removed first, so what a test binary
// keeps for all its tests (the shared S3 server's data, built commands, JVM
// temporary files) is gone after the next run at the latest.
func ownedTempDir(prefix string) (string, error) {
	removeStale(prefix)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// removeStale removes (at most 200 of) the ownedTempDir directories of
// prefix whose owning process has exited.
func removeStale(prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for i, d := range dirs {
		if i >= 200 {
			return
		}
		b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}

// jvmTemp is the java.io.tmpdir of every JVM the harness starts (RocksDB's
// and the checksum library's extracted native code, Netty's, the
// broker's unpacked offloaders): one ownedTempDir per test binary, instead
// of files left in /tmp by every killed JVM.
var jvmTemp struct {
	once sync.Once
	dir  string
}

// jvmTempDir returns that directory, or "" (the JVM's default) if it
// cannot be made.
func jvmTempDir() string {
	jvmTemp.once.Do(func() {
		jvmTemp.dir, _ = ownedTempDir("tierkeeper-jvm-")
	})
	return jvmTemp.dir
}
