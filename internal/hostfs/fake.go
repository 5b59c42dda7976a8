package hostfs

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// FakeSysfs writes, below root, the sysfs entries that name path's device
// "name" (dev/block/M:m/uevent and block/<name>/queue/*), and returns an FS
// whose SysPath is root. Tests use it to show that a lookup reads the
// configured root rather than /sys.
func FakeSysfs(root, path, name string) (FS, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FS{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	id := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	files := map[string]string{
		filepath.Join("dev", "block", id, "uevent"):                  "MAJOR=0\nDEVNAME=" + name + "\nDEVTYPE=disk\n",
		filepath.Join("block", name, "queue", "physical_block_size"): "4096\n",
		filepath.Join("block", name, "queue", "logical_block_size"):  "512\n",
		filepath.Join("block", name, "queue", "rotational"):          "0\n",
		filepath.Join("block", name, "queue", "scheduler"):           "[none] mq-deadline\n",
	}
	for p, c := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return FS{}, err
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			return FS{}, err
		}
	}
	return FS{SysPath: root}, nil
}
