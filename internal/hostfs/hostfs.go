// Package hostfs reads what the bookie agent and diskbench need from /proc
// and /sys — mounts, disk I/O counters and block-device facts — always below
// configurable roots, the way node_exporter's --path.procfs and --path.sysfs
// work: the agent runs in a container with the host's trees mounted
// elsewhere, and tests run on fixture trees (testdata/).
//
// mountinfo and diskstats are parsed by github.com/prometheus/procfs; the
// few sysfs attributes of a block device are read directly.
package hostfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
	"golang.org/x/sys/unix"
)

// Sentinel errors.
var (
	// ErrBadProcFile is returned when a /proc or /sys file has an unexpected
	// format.
	ErrBadProcFile = errors.New("unparseable proc/sys file")
	// ErrMountNotFound is returned when no mount covers a path.
	ErrMountNotFound = errors.New("no mount found for path")
	// ErrNoBlockDevice is returned by DeviceOf when the filesystem holding a
	// path has no block device in sysfs (tmpfs, overlayfs, btrfs subvolumes,
	// network filesystems).
	ErrNoBlockDevice = errors.New("no block device")
)

// FS names the procfs and sysfs roots. The zero value reads the real /proc
// and /sys.
type FS struct {
	// ProcPath is the procfs root. Empty means "/proc".
	ProcPath string
	// SysPath is the sysfs root. Empty means "/sys".
	SysPath string
}

func (h FS) procRoot() string {
	if h.ProcPath == "" {
		return "/proc"
	}
	return h.ProcPath
}

func (h FS) sysRoot() string {
	if h.SysPath == "" {
		return "/sys"
	}
	return h.SysPath
}

func (h FS) sys(p ...string) string { return filepath.Join(append([]string{h.sysRoot()}, p...)...) }

// wrapParse marks procfs's parse errors with ErrBadProcFile and keeps file
// errors (fs.ErrNotExist, permissions) as they are.
func wrapParse(what string, err error) error {
	if errors.Is(err, procfs.ErrFileParse) || errors.Is(err, procfs.ErrFileRead) || !isFileError(err) {
		return fmt.Errorf("%s: %w: %w", what, ErrBadProcFile, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func isFileError(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe)
}

// Mount is one line of <procfs>/self/mountinfo.
type Mount struct {
	// Major and Minor are the device of the mounted filesystem (st_dev).
	Major, Minor int
	// Root is the directory of the filesystem mounted at MountPoint.
	Root string
	// MountPoint, with the kernel's octal escapes (\040 for a space) undone.
	MountPoint string
	// FSType is the filesystem type ("xfs", "ext4", "tmpfs").
	FSType string
	// Source is the mounted device or "none".
	Source string
	// Options are the per-mount options ("rw", "noatime").
	Options map[string]string
}

// DevID returns "major:minor".
func (m Mount) DevID() string { return fmt.Sprintf("%d:%d", m.Major, m.Minor) }

// Mounts reads <procfs>/self/mountinfo. A malformed line is ErrBadProcFile.
func (h FS) Mounts() ([]Mount, error) {
	pfs, err := procfs.NewFS(h.procRoot())
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	ms, err := pfs.GetMounts()
	if err != nil {
		return nil, wrapParse("read mountinfo", err)
	}
	out := make([]Mount, 0, len(ms))
	for _, m := range ms {
		maj, min, ok := splitDevID(m.MajorMinorVer)
		if !ok {
			return nil, fmt.Errorf("read mountinfo: %w: device %q of %s", ErrBadProcFile, m.MajorMinorVer, m.MountPoint)
		}
		out = append(out, Mount{Major: maj, Minor: min, Root: unescapeOctal(m.Root), MountPoint: unescapeOctal(m.MountPoint),
			FSType: m.FSType, Source: unescapeOctal(m.Source), Options: m.Options})
	}
	return out, nil
}

func splitDevID(s string) (int, int, bool) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, false
	}
	maj, err1 := strconv.Atoi(a)
	min, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || maj < 0 || min < 0 {
		return 0, 0, false
	}
	return maj, min, true
}

// unescapeOctal undoes the kernel's \NNN escaping of spaces, tabs,
// newlines and backslashes in mountinfo fields (procfs leaves them).
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountFor returns the mount that holds path: the longest mount point that
// is path or a parent of it (the last such line wins, as later mounts hide
// earlier ones). path must be absolute and should have its symlinks
// resolved by the caller when it names a real file.
func MountFor(mounts []Mount, path string) (Mount, error) {
	path = filepath.Clean(path)
	best, bestLen := -1, -1
	for i, m := range mounts {
		mp := filepath.Clean(m.MountPoint)
		if path == mp || mp == "/" || strings.HasPrefix(path, mp+"/") {
			if l := len(mp); l >= bestLen {
				best, bestLen = i, l
			}
		}
	}
	if best < 0 {
		return Mount{}, fmt.Errorf("%s: %w", path, ErrMountNotFound)
	}
	return mounts[best], nil
}

// DiskStats is one line of <procfs>/diskstats, in base units. Sectors there
// are always 512 bytes, whatever the device's block size.
type DiskStats struct {
	Major, Minor         int
	Name                 string
	ReadsCompleted       uint64
	ReadsMerged          uint64
	ReadBytes            uint64
	ReadTimeSeconds      float64
	WritesCompleted      uint64
	WritesMerged         uint64
	WrittenBytes         uint64
	WriteTimeSeconds     float64
	IOsInProgress        uint64
	IOTimeSeconds        float64
	IOTimeWeightedSecond float64
	// Discards and flushes: zero on kernels before 4.18 and 5.5, whose
	// lines have 14 and 18 fields.
	DiscardsCompleted  uint64
	DiscardedBytes     uint64
	DiscardTimeSeconds float64
	FlushesCompleted   uint64
	FlushTimeSeconds   float64
}

// Diskstats reads <procfs>/diskstats (lines of 14, 18 or 20 fields; procfs
// skips shorter ones). A malformed number is ErrBadProcFile.
func (h FS) Diskstats() ([]DiskStats, error) {
	bfs, err := blockdevice.NewFS(h.procRoot(), h.sysRoot())
	if err != nil {
		return nil, fmt.Errorf("read diskstats: %w", err)
	}
	ds, err := bfs.ProcDiskstats()
	if err != nil {
		return nil, wrapParse("read diskstats", err)
	}
	out := make([]DiskStats, 0, len(ds))
	const sector = procfs.SectorSize
	ms := func(v uint64) float64 { return float64(v) / 1000 }
	for _, d := range ds {
		out = append(out, DiskStats{
			Major: int(d.MajorNumber), Minor: int(d.MinorNumber), Name: d.DeviceName,
			ReadsCompleted: d.ReadIOs, ReadsMerged: d.ReadMerges, ReadBytes: d.ReadSectors * sector, ReadTimeSeconds: ms(d.ReadTicks),
			WritesCompleted: d.WriteIOs, WritesMerged: d.WriteMerges, WrittenBytes: d.WriteSectors * sector, WriteTimeSeconds: ms(d.WriteTicks),
			IOsInProgress: d.IOsInProgress, IOTimeSeconds: ms(d.IOsTotalTicks), IOTimeWeightedSecond: ms(d.WeightedIOTicks),
			DiscardsCompleted: d.DiscardIOs, DiscardedBytes: d.DiscardSectors * sector, DiscardTimeSeconds: ms(d.DiscardTicks),
			FlushesCompleted: d.FlushRequestsCompleted, FlushTimeSeconds: ms(d.TimeSpentFlushing),
		})
	}
	return out, nil
}

// BlockDevice describes the block device behind a filesystem, from sysfs.
type BlockDevice struct {
	// Name is the kernel name of the mounted device (sda1, dm-0, nvme0n1).
	Name string `json:"name"`
	// Disk is the whole device holding Name (sda for sda1), or Name itself.
	Disk string `json:"disk"`
	// Leaves are the physical disks under Disk, following dm/md slaves/;
	// just [Disk] for a plain disk.
	Leaves []string `json:"leaves"`
	// PhysicalBlockSize and LogicalBlockSize are the largest over Leaves
	// (queue/physical_block_size, queue/logical_block_size), in bytes.
	PhysicalBlockSize int64 `json:"physical_block_size"`
	LogicalBlockSize  int64 `json:"logical_block_size"`
	// Rotational is true when any leaf reports queue/rotational = 1.
	// Virtual disks often claim 1; the rules trust measurements first.
	Rotational bool `json:"rotational"`
	// Scheduler is the active I/O scheduler of Disk ("none", "mq-deadline").
	Scheduler string `json:"scheduler,omitempty"`
}

// maxSlaveDepth bounds the dm/md stacking followed in sysfs.
const maxSlaveDepth = 8

// DeviceOf returns the block device of the filesystem holding path, from
// its st_dev: the one device lookup of the repository. A filesystem without
// one (tmpfs, overlayfs, NFS) is ErrNoBlockDevice.
func (h FS) DeviceOf(path string) (BlockDevice, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return BlockDevice{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	maj, min := int(unix.Major(st.Dev)), int(unix.Minor(st.Dev))
	d, err := h.BlockDevice(maj, min)
	if errors.Is(err, os.ErrNotExist) {
		return BlockDevice{}, fmt.Errorf("%s is on device %d:%d: %w", path, maj, min, ErrNoBlockDevice)
	}
	return d, err
}

// BlockDevice looks up the device major:minor in sysfs:
// <sysfs>/dev/block/M:m/uevent for its name, <sysfs>/block/*/<name> for the
// disk holding a partition, <sysfs>/block/<disk>/slaves/ for the leaves,
// and their queue/ attributes.
func (h FS) BlockDevice(major, minor int) (BlockDevice, error) {
	id := fmt.Sprintf("%d:%d", major, minor)
	ue, err := os.ReadFile(h.sys("dev", "block", id, "uevent"))
	if err != nil {
		return BlockDevice{}, fmt.Errorf("block device %s: %w", id, err)
	}
	name := ""
	for _, line := range strings.Split(string(ue), "\n") {
		if v, ok := strings.CutPrefix(line, "DEVNAME="); ok {
			name = strings.TrimSpace(v)
		}
	}
	if name == "" || strings.ContainsAny(name, "/\x00") || name == ".." || name == "." {
		return BlockDevice{}, fmt.Errorf("block device %s: %w: uevent has no usable DEVNAME", id, ErrBadProcFile)
	}
	d := BlockDevice{Name: name, Disk: h.DiskOf(name)}
	d.Leaves = h.leaves(d.Disk, 0)
	for _, l := range d.Leaves {
		q := func(attr string) string {
			b, err := os.ReadFile(h.sys("block", l, "queue", attr))
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(b))
		}
		if v, err := strconv.ParseInt(q("physical_block_size"), 10, 64); err == nil && v > d.PhysicalBlockSize {
			d.PhysicalBlockSize = v
		}
		if v, err := strconv.ParseInt(q("logical_block_size"), 10, 64); err == nil && v > d.LogicalBlockSize {
			d.LogicalBlockSize = v
		}
		if q("rotational") == "1" {
			d.Rotational = true
		}
	}
	if b, err := os.ReadFile(h.sys("block", d.Disk, "queue", "scheduler")); err == nil {
		d.Scheduler = ActiveScheduler(string(b))
	}
	return d, nil
}

// DiskOf returns the whole disk holding name: name itself when
// <sysfs>/block/<name> exists, else the disk with a <name> sub-directory
// (a partition), else name.
func (h FS) DiskOf(name string) string {
	if _, err := os.Stat(h.sys("block", name)); err == nil {
		return name
	}
	ents, err := os.ReadDir(h.sys("block"))
	if err != nil {
		return name
	}
	for _, e := range ents {
		if _, err := os.Stat(h.sys("block", e.Name(), name, "partition")); err == nil {
			return e.Name()
		}
	}
	return name
}

func (h FS) leaves(disk string, depth int) []string {
	if depth >= maxSlaveDepth {
		return []string{disk}
	}
	ents, err := os.ReadDir(h.sys("block", disk, "slaves"))
	if err != nil || len(ents) == 0 {
		return []string{disk}
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range ents {
		for _, l := range h.leaves(h.DiskOf(e.Name()), depth+1) {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ActiveScheduler returns the bracketed entry of a queue/scheduler file
// ("none [mq-deadline] kyber" -> "mq-deadline"), or the only entry.
func ActiveScheduler(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	if f := strings.Fields(s); len(f) == 1 {
		return f[0]
	}
	return s
}
