package bookieagent

import "github.com/tierkeeper/tierkeeper/internal/hostfs"

// HostFS reads /proc and /sys below configurable roots (ProcPath, SysPath;
// empty means /proc and /sys), so the agent works in a container with the
// host's trees mounted elsewhere and tests run on fixture trees. Every
// /proc and /sys read of the agent goes through it (internal/hostfs:
// mountinfo and diskstats parsed by prometheus/procfs).
type HostFS = hostfs.FS

// Mount is one line of mountinfo.
type Mount = hostfs.Mount

// DiskStats is one device's /proc/diskstats counters in base units.
type DiskStats = hostfs.DiskStats

// BlockDevice describes the block device behind a filesystem, from sysfs.
type BlockDevice = hostfs.BlockDevice
