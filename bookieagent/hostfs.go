package bookieagent

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// HostFS reads /proc and /sys below configurable roots, the way
// node_exporter's --path.procfs and --path.sysfs do, so the agent works in a
// container with the host's trees mounted elsewhere and tests run on fixture
// trees (testdata/).
type HostFS struct {
	// ProcPath is the procfs root. Empty means "/proc".
	ProcPath string
	// SysPath is the sysfs root. Empty means "/sys".
	SysPath string
}

func (h HostFS) proc(p ...string) string {
	root := h.ProcPath
	if root == "" {
		root = "/proc"
	}
	return filepath.Join(append([]string{root}, p...)...)
}

func (h HostFS) sys(p ...string) string {
	root := h.SysPath
	if root == "" {
		root = "/sys"
	}
	return filepath.Join(append([]string{root}, p...)...)
}

// Mount is one line of /proc/self/mountinfo.
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2)(3)   (4)   (5)      (6)       (7)  (8) (9)    (10)        (11)
//
// (3) is major:minor of the device, (5) the mount point (octal-escaped),
// (7) optional fields ended by "-", (9) the filesystem type, (10) the
// source.
type Mount struct {
	Major, Minor int
	Root         string
	MountPoint   string
	FSType       string
	Source       string
	Options      string
}

// DevID returns "major:minor".
func (m Mount) DevID() string { return fmt.Sprintf("%d:%d", m.Major, m.Minor) }

// ParseMountInfo parses /proc/<pid>/mountinfo. Lines are bounded to 64 KiB;
// a malformed line returns ErrBadProcFile naming its number.
func ParseMountInfo(r io.Reader) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 7 || sep < 0 || sep+2 >= len(f) {
			return nil, fmt.Errorf("mountinfo line %d: %w: %q", n, ErrBadProcFile, line)
		}
		maj, min, ok := splitDevID(f[2])
		if !ok {
			return nil, fmt.Errorf("mountinfo line %d: %w: device %q", n, ErrBadProcFile, f[2])
		}
		m := Mount{
			Major: maj, Minor: min,
			Root:       unescapeOctal(f[3]),
			MountPoint: unescapeOctal(f[4]),
			Options:    f[5],
			FSType:     f[sep+1],
			Source:     unescapeOctal(f[sep+2]),
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mountinfo: %w: %v", ErrBadProcFile, err)
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
// newlines and backslashes in mountinfo fields.
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

// Mounts reads <procfs>/self/mountinfo.
func (h HostFS) Mounts() ([]Mount, error) {
	f, err := os.Open(h.proc("self", "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	return ParseMountInfo(f)
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

// DiskStats is one line of /proc/diskstats, in base units.
//
//	major minor name reads merged sectors ms_reading writes merged sectors
//	ms_writing in_flight ms_io ms_weighted [discards ...] [flushes ms_flush]
//
// Sectors are always 512 bytes, whatever the device's block size.
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
}

// ParseDiskstats parses /proc/diskstats (kernels ≥ 2.6 with 14, 18 or 20
// fields per line).
func ParseDiskstats(r io.Reader) ([]DiskStats, error) {
	var out []DiskStats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64*1024)
	n := 0
	for sc.Scan() {
		n++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 14 {
			return nil, fmt.Errorf("diskstats line %d: %w: %d fields", n, ErrBadProcFile, len(f))
		}
		var v [11]uint64
		for i := range v {
			x, err := strconv.ParseUint(f[3+i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("diskstats line %d field %d: %w: %q", n, 4+i, ErrBadProcFile, f[3+i])
			}
			v[i] = x
		}
		maj, err1 := strconv.Atoi(f[0])
		min, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("diskstats line %d: %w: device %s:%s", n, ErrBadProcFile, f[0], f[1])
		}
		out = append(out, DiskStats{
			Major: maj, Minor: min, Name: f[2],
			ReadsCompleted: v[0], ReadsMerged: v[1], ReadBytes: v[2] * 512, ReadTimeSeconds: float64(v[3]) / 1000,
			WritesCompleted: v[4], WritesMerged: v[5], WrittenBytes: v[6] * 512, WriteTimeSeconds: float64(v[7]) / 1000,
			IOsInProgress: v[8], IOTimeSeconds: float64(v[9]) / 1000, IOTimeWeightedSecond: float64(v[10]) / 1000,
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("diskstats: %w: %v", ErrBadProcFile, err)
	}
	return out, nil
}

// Diskstats reads <procfs>/diskstats.
func (h HostFS) Diskstats() ([]DiskStats, error) {
	b, err := os.ReadFile(h.proc("diskstats"))
	if err != nil {
		return nil, fmt.Errorf("read diskstats: %w", err)
	}
	return ParseDiskstats(bytes.NewReader(b))
}

// BlockDevice describes the block device behind a mount, from sysfs.
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

// BlockDevice looks up the device major:minor in sysfs:
// <sysfs>/dev/block/M:m/uevent for its name, <sysfs>/block/*/<name> for the
// disk holding a partition, <sysfs>/block/<disk>/slaves/ for the leaves,
// and their queue/ attributes.
func (h HostFS) BlockDevice(major, minor int) (BlockDevice, error) {
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
	if name == "" || strings.ContainsAny(name, "/\x00") || name == ".." {
		return BlockDevice{}, fmt.Errorf("block device %s: %w: uevent has no DEVNAME", id, ErrBadProcFile)
	}
	d := BlockDevice{Name: name, Disk: h.diskOf(name)}
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

// diskOf returns the whole disk holding name: name itself when
// <sysfs>/block/<name> exists, else the disk with a <name> sub-directory
// (a partition), else name.
func (h HostFS) diskOf(name string) string {
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

func (h HostFS) leaves(disk string, depth int) []string {
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
		for _, l := range h.leaves(h.diskOf(e.Name()), depth+1) {
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
