// Package bookiedir decides whether a directory may be benchmarked: that it
// is a real directory on a disk filesystem (not memory, a container layer or
// a kernel pseudo-filesystem), and whether it holds an Apache BookKeeper
// bookie's data, which nothing of tierkeeper ever writes into. diskbench's
// preflight (diskbench.Check) and the bookie agent (bookieagent.PrepareBench
// and its bench-on-start) both use it, so they refuse the same directories.
//
// # Bookie data
//
// A bookie keeps everything below <dir>/current/: the cookie VERSION, journal
// files <hex>.txn, entry logs <hex>.log (and .log.compacted while compacting),
// lastMark, and DbLedgerStorage's RocksDB directories ledgers/ and
// locations/. FindBookieData looks in dir itself, in dir/current and in every
// dir/*/current (a parent of several bookie directories, as the agent
// recommends for several directories per disk). It is the union of the
// detectors diskbench and the agent had: in a current/ directory any *.txn or
// *.log counts (a bookie may have been renamed or use custom names); in dir
// itself, where other programs keep logs, only hex-named ones do.
package bookiedir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/internal/hostfs"
)

// Sentinel errors; callers test with errors.Is.
var (
	// ErrNotDirectory is returned when the path exists but is not a
	// directory.
	ErrNotDirectory = errors.New("not a directory")
	// ErrUnsupportedFS is returned for a directory whose filesystem is not a
	// disk: tmpfs, ramfs, overlayfs, a kernel pseudo-filesystem (proc,
	// sysfs, cgroup ...) or one that reports no capacity.
	ErrUnsupportedFS = errors.New("unsupported filesystem")
	// ErrNotWritable is returned when the directory cannot be written. It
	// is joined with the access(2) error, so fs.ErrPermission matches too.
	ErrNotWritable = errors.New("directory not writable")
	// ErrBookieData is returned by callers that refuse a directory holding
	// bookie data (FindBookieData found some).
	ErrBookieData = errors.New("directory holds bookie data")
)

// Dir is what Stat found about a directory.
type Dir struct {
	// Path is the absolute path.
	Path string
	// FSType is the filesystem's name ("ext4", "tmpfs", "0x…" when unknown);
	// FSMagic its statfs magic.
	FSType  string
	FSMagic int64
	// FreeBytes (available to unprivileged users, f_bavail) and TotalBytes.
	FreeBytes, TotalBytes uint64
	// Device is the block device holding the filesystem, nil when it has
	// none (tmpfs, overlayfs, network filesystems) or sysfs does not say.
	Device *hostfs.BlockDevice
}

// Stat resolves dir to an absolute path, checks that it is an existing
// directory (fs.ErrNotExist, ErrNotDirectory), statfs-es it and looks up its
// block device through host's sysfs root.
func Stat(ctx context.Context, dir string, host hostfs.FS) (*Dir, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("directory %s does not exist: %w", abs, err)
		}
		return nil, fmt.Errorf("stat %s: %w", abs, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s", ErrNotDirectory, abs)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(abs, &sfs); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", abs, &os.PathError{Op: "statfs", Path: abs, Err: err})
	}
	d := &Dir{
		Path:       abs,
		FSMagic:    int64(sfs.Type),
		FSType:     FSName(int64(sfs.Type)),
		FreeBytes:  sfs.Bavail * uint64(sfs.Bsize),
		TotalBytes: sfs.Blocks * uint64(sfs.Bsize),
	}
	if dev, err := host.DeviceOf(abs); err == nil {
		d.Device = &dev
	}
	return d, nil
}

// Filesystem magic numbers from statfs(2).
const (
	magicTmpfs   = 0x01021994
	magicRamfs   = 0x858458f6
	magicOverlay = 0x794c7630
)

var fsNames = map[int64]string{
	magicTmpfs:               "tmpfs",
	magicRamfs:               "ramfs",
	magicOverlay:             "overlayfs",
	unix.EXT4_SUPER_MAGIC:    "ext4",
	unix.XFS_SUPER_MAGIC:     "xfs",
	unix.BTRFS_SUPER_MAGIC:   "btrfs",
	unix.NFS_SUPER_MAGIC:     "nfs",
	unix.FUSE_SUPER_MAGIC:    "fuse",
	unix.F2FS_SUPER_MAGIC:    "f2fs",
	0x5346544e:               "ntfs",
	0x4d44:                   "vfat",
	0xf15f:                   "ecryptfs",
	0x01161970:               "gfs2",
	0x47504653:               "gpfs",
	0xff534d42:               "cifs",
	0xfe534d42:               "smb2",
	0x00c36400:               "ceph",
	0x2fc12fc1:               "zfs",
	unix.PROC_SUPER_MAGIC:    "proc",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.DEVPTS_SUPER_MAGIC:  "devpts",
	unix.CGROUP_SUPER_MAGIC:  "cgroup",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.BPF_FS_MAGIC:        "bpf",
	unix.PSTOREFS_MAGIC:      "pstorefs",
	unix.EFIVARFS_MAGIC:      "efivarfs",
	unix.HUGETLBFS_MAGIC:     "hugetlbfs",
	unix.NSFS_MAGIC:          "nsfs",
	unix.AUTOFS_SUPER_MAGIC:  "autofs",
	unix.SELINUX_MAGIC:       "selinuxfs",
	unix.BINFMTFS_MAGIC:      "binfmt_misc",
	0x19800202:               "mqueue",
	0x62656570:               "configfs",
	0x65735543:               "fusectl",
}

// pseudoFS are kernel filesystems that hold no data of their own: a figure
// measured there is meaningless, whatever the caller allows.
var pseudoFS = map[int64]bool{
	unix.PROC_SUPER_MAGIC: true, unix.SYSFS_MAGIC: true, unix.DEVPTS_SUPER_MAGIC: true, unix.CGROUP_SUPER_MAGIC: true,
	unix.CGROUP2_SUPER_MAGIC: true, unix.DEBUGFS_MAGIC: true, unix.TRACEFS_MAGIC: true, unix.SECURITYFS_MAGIC: true,
	unix.BPF_FS_MAGIC: true, unix.PSTOREFS_MAGIC: true, unix.EFIVARFS_MAGIC: true, unix.HUGETLBFS_MAGIC: true,
	unix.NSFS_MAGIC: true, unix.AUTOFS_SUPER_MAGIC: true, unix.SELINUX_MAGIC: true, unix.BINFMTFS_MAGIC: true,
	0x19800202: true, 0x62656570: true, 0x65735543: true,
}

// FSName returns a filesystem's name from its statfs magic, or "0x…" when
// unknown.
func FSName(magic int64) string {
	if n, ok := fsNames[magic]; ok {
		return n
	}
	return fmt.Sprintf("0x%x", uint64(magic))
}

// IsNetworkFS reports whether the filesystem is a network or userspace one,
// whose figures are not comparable with a local disk's.
func (d *Dir) IsNetworkFS() bool {
	switch d.FSType {
	case "nfs", "fuse", "cifs", "smb2", "ceph", "gpfs", "gfs2":
		return true
	}
	return false
}

// CheckFS refuses a filesystem that is not a disk with ErrUnsupportedFS.
// Kernel pseudo-filesystems (proc, sysfs, cgroup ...) are always refused.
// tmpfs, ramfs, overlayfs and filesystems that report no capacity are
// refused unless allowMemory; override, when not empty, is appended to
// those refusals to say how to allow them ("use --allow-any-fs ...").
func (d *Dir) CheckFS(allowMemory bool, override string) error {
	if pseudoFS[d.FSMagic] {
		return fmt.Errorf("%w: %s is on %s, a kernel pseudo-filesystem, not a disk", ErrUnsupportedFS, d.Path, d.FSType)
	}
	if allowMemory {
		return nil
	}
	var why string
	switch d.FSMagic {
	case magicTmpfs, magicRamfs:
		why = "which is memory, not a disk"
	case magicOverlay:
		why = "a container layer, not a disk"
	default:
		if d.TotalBytes > 0 {
			return nil
		}
		why = "which reports no capacity: not a disk"
	}
	if override != "" {
		why += " (" + override + ")"
	}
	return fmt.Errorf("%w: %s is on %s, %s", ErrUnsupportedFS, d.Path, d.FSType, why)
}

// CheckWritable checks that the directory can be written and searched by
// this process (access(2) W_OK|X_OK).
func (d *Dir) CheckWritable() error {
	if err := unix.Access(d.Path, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotWritable, d.Path, &os.PathError{Op: "access", Path: d.Path, Err: err})
	}
	return nil
}

// Scan bounds: names read per directory, sub-directories looked into, hits
// reported.
const (
	maxNames   = 4096
	maxSubdirs = 1000
	maxHits    = 5
)

var hexDataRE = regexp.MustCompile(`^[0-9a-fA-F]+\.(txn|log)$`)

// isBookieFile reports whether name, found in a current/ directory, is a
// bookie's: a journal (*.txn), an entry log (*.log, *.log.compacted), the
// lastMark, or DbLedgerStorage's RocksDB directories.
func isBookieFile(name string) bool {
	switch {
	case strings.HasSuffix(name, ".txn"), strings.HasSuffix(name, ".log"), strings.HasSuffix(name, ".log.compacted"):
		return true
	}
	switch name {
	case "VERSION", "lastMark", "ledgers", "locations":
		return true
	}
	return false
}

// FindBookieData returns up to a few paths of bookie data in dir, dir/current
// or dir/*/current (see the package doc), sorted; none means the directory
// holds no bookie. A directory that cannot be read is an error, not "no
// bookie": the caller cannot know.
func FindBookieData(dir string) ([]string, error) {
	var found []string
	add := func(p string) bool {
		found = append(found, p)
		return len(found) >= maxHits
	}
	names, err := readNames(dir)
	if err != nil {
		return nil, err
	}
	var subdirs []string
	for _, n := range names {
		if hexDataRE.MatchString(n) && add(filepath.Join(dir, n)) {
			return sorted(found), nil
		}
	}
	for _, n := range names {
		if len(subdirs) >= maxSubdirs {
			break
		}
		if n == "current" {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.IsDir() {
			subdirs = append(subdirs, filepath.Join(dir, n))
		}
	}
	for _, d := range append([]string{dir}, subdirs...) {
		cur := filepath.Join(d, "current")
		names, err := readNames(cur)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if isBookieFile(n) && add(filepath.Join(cur, n)) {
				return sorted(found), nil
			}
		}
	}
	return sorted(found), nil
}

// CookiePaths returns every cookie (current/VERSION) in dir and its direct
// sub-directories, sorted. A missing dir has none.
func CookiePaths(dir string) ([]string, error) {
	var paths []string
	if st, err := os.Stat(filepath.Join(dir, "current", "VERSION")); err == nil && st.Mode().IsRegular() {
		paths = append(paths, filepath.Join(dir, "current", "VERSION"))
	}
	names, err := readNames(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return paths, nil
	}
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == "current" {
			continue
		}
		p := filepath.Join(dir, n, "current", "VERSION")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			paths = append(paths, p)
		}
	}
	return sorted(paths), nil
}

// readNames lists up to maxNames entries of dir.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("scan %s for bookie data: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(maxNames)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("scan %s for bookie data: %w", dir, err)
	}
	return names, nil
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
