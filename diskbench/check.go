package diskbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Filesystem magic numbers from statfs(2) that Check names or refuses.
const (
	magicTmpfs   = 0x01021994
	magicRamfs   = 0x858458f6
	magicOverlay = 0x794c7630
)

var fsNames = map[int64]string{
	magicTmpfs:             "tmpfs",
	magicRamfs:             "ramfs",
	magicOverlay:           "overlayfs",
	unix.EXT4_SUPER_MAGIC:  "ext4",
	unix.XFS_SUPER_MAGIC:   "xfs",
	unix.BTRFS_SUPER_MAGIC: "btrfs",
	unix.NFS_SUPER_MAGIC:   "nfs",
	unix.FUSE_SUPER_MAGIC:  "fuse",
	unix.F2FS_SUPER_MAGIC:  "f2fs",
	0x5346544e:             "ntfs",
	0x4d44:                 "vfat",
	0x6165676c:             "pstorefs",
	0xf15f:                 "ecryptfs",
	0x01161970:             "gfs2",
	0x47504653:             "gpfs",
	0xff534d42:             "cifs",
	0x2fc12fc1:             "zfs",
}

// refusedFS are the filesystems whose figures say nothing about a disk.
var refusedFS = map[int64]bool{magicTmpfs: true, magicRamfs: true, magicOverlay: true}

// FSName returns a filesystem's name from its statfs magic, or "0x…" when
// unknown.
func FSName(magic int64) string {
	if n, ok := fsNames[magic]; ok {
		return n
	}
	return fmt.Sprintf("0x%x", uint64(magic))
}

// ReserveBytes is the free space Check keeps untouched on top of MaxBytes.
const ReserveBytes = 256 * MiB

// Target is what Check found about a directory.
type Target struct {
	Dir string `json:"dir"`
	// FSType is the filesystem's name; FSMagic its statfs magic.
	FSType  string `json:"fs_type"`
	FSMagic int64  `json:"fs_magic"`
	// Device is the backing block device ("vda", "nvme0n1") when found.
	Device string `json:"device,omitempty"`
	// FreeBytes (available to unprivileged users) and TotalBytes from statfs.
	FreeBytes  uint64 `json:"free_bytes"`
	TotalBytes uint64 `json:"total_bytes"`
	// MaxBytes is the resolved byte budget: Options.MaxBytes or
	// min(2 GiB, 10% of FreeBytes).
	MaxBytes int64 `json:"max_bytes"`
	// BookieData lists the bookie files found (empty unless Force was set,
	// since Check refuses such a directory otherwise).
	BookieData []string `json:"bookie_data,omitempty"`
	// Warnings lists reasons to distrust figures measured here (NFS, FUSE…).
	Warnings []string `json:"warnings,omitempty"`
}

// Check is the preflight every Run* does first: dir must exist and be a
// writable directory, on a real disk filesystem (not tmpfs, ramfs or
// overlayfs unless opts.AllowAnyFS), hold no bookie data (unless
// opts.Force), and have room for opts.MaxBytes plus ReserveBytes. Only
// opts.Dir, AllowAnyFS, Force and MaxBytes are read. The returned Target is
// non-nil whenever statfs worked, also when the error is a refusal.
//
// Errors wrap fs.ErrNotExist, ErrNotDirectory, fs.ErrPermission,
// ErrUnsupportedFS, ErrBookieData or ErrInsufficientSpace.
func Check(ctx context.Context, opts Options) (*Target, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		return nil, fmt.Errorf("%w: no directory given", ErrInvalidOptions)
	}
	if opts.MaxBytes < 0 {
		return nil, fmt.Errorf("%w: MaxBytes %d is negative", ErrInvalidOptions, opts.MaxBytes)
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
	if err := unix.Access(abs, unix.W_OK|unix.X_OK); err != nil {
		return nil, fmt.Errorf("directory %s is not writable: %w", abs, &os.PathError{Op: "access", Path: abs, Err: err})
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(abs, &sfs); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", abs, err)
	}
	t := &Target{
		Dir:        abs,
		FSMagic:    int64(sfs.Type),
		FSType:     FSName(int64(sfs.Type)),
		Device:     blockDevice(abs),
		FreeBytes:  sfs.Bavail * uint64(sfs.Bsize),
		TotalBytes: sfs.Blocks * uint64(sfs.Bsize),
	}
	switch t.FSType {
	case "nfs", "fuse", "cifs", "gpfs", "gfs2":
		t.Warnings = append(t.Warnings, fmt.Sprintf("%s is a network or userspace filesystem: figures are not comparable with a local disk", t.FSType))
	}
	if refusedFS[t.FSMagic] && !opts.AllowAnyFS {
		return t, fmt.Errorf("%w: %s is on %s, which measures memory, not a disk (use --allow-any-fs to run anyway)", ErrUnsupportedFS, abs, t.FSType)
	}
	found, err := findBookieData(abs)
	if err != nil {
		return t, err
	}
	t.BookieData = found
	if len(found) > 0 && !opts.Force {
		return t, fmt.Errorf("%w: %s contains %s (use --force to run anyway)", ErrBookieData, abs, strings.Join(found, ", "))
	}
	t.MaxBytes = opts.MaxBytes
	if t.MaxBytes == 0 {
		t.MaxBytes = min(DefaultMaxBytesCap, int64(t.FreeBytes/10))
	}
	if uint64(t.MaxBytes)+uint64(ReserveBytes) > t.FreeBytes {
		return t, fmt.Errorf("%w: %s has %s free, the run may use %s plus a %s reserve", ErrInsufficientSpace, abs,
			units.HumanBytes(t.FreeBytes), units.HumanBytes(t.MaxBytes), units.FormatBytes(ReserveBytes))
	}
	return t, nil
}

var (
	journalFileRE  = regexp.MustCompile(`^[0-9a-fA-F]+\.txn$`)
	entryLogFileRE = regexp.MustCompile(`^[0-9a-fA-F]+\.log$`)
)

// findBookieData looks for a bookie's cookie, journal files and entry logs
// in dir, dir/current and dir/*/current (a bookie's parent data directory).
// It lists at most a few hits.
func findBookieData(dir string) ([]string, error) {
	var found []string
	look := func(d string) error {
		if _, err := os.Stat(filepath.Join(d, "current", "VERSION")); err == nil {
			found = append(found, filepath.Join(d, "current", "VERSION"))
		}
		for _, sub := range []string{d, filepath.Join(d, "current")} {
			f, err := os.Open(sub)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
					continue
				}
				return fmt.Errorf("scan %s for bookie data: %w", sub, err)
			}
			names, err := f.Readdirnames(4096)
			f.Close()
			if err != nil && len(names) == 0 && !errors.Is(err, io.EOF) {
				return fmt.Errorf("scan %s for bookie data: %w", sub, err)
			}
			for _, n := range names {
				if journalFileRE.MatchString(n) || entryLogFileRE.MatchString(n) {
					found = append(found, filepath.Join(sub, n))
					if len(found) >= 5 {
						return nil
					}
				}
			}
		}
		return nil
	}
	if err := look(dir); err != nil {
		return nil, err
	}
	if len(found) > 0 {
		return found, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("scan %s for bookie data: %w", dir, err)
	}
	for i, e := range entries {
		if i >= 1000 {
			break
		}
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "current", "VERSION")); err == nil {
			found = append(found, filepath.Join(dir, e.Name(), "current", "VERSION"))
		}
	}
	return found, nil
}

// blockDevice returns the name of the block device holding path, from
// /sys/dev/block/MAJ:MIN/uevent, or "" when there is none (tmpfs, overlay).
func blockDevice(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/uevent", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "DEVNAME="); ok {
			return v
		}
	}
	return ""
}
