package bookieagent

import (
	"errors"

	"github.com/tierkeeper/tierkeeper/internal/bookiedir"
	"github.com/tierkeeper/tierkeeper/internal/hostfs"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Sentinel errors. Functions wrap them with context (`fmt.Errorf("...: %w",
// ErrX)`); callers test with errors.Is.
var (
	// ErrBadSize is returned when a size string ("4g", "512MiB", "-Xmx2g")
	// cannot be parsed or is out of range. It is units.ErrBadSize, which
	// every size parser of the repository wraps.
	ErrBadSize = units.ErrBadSize
	// ErrNoDirectory is returned when a configured directory is not a
	// directory (bookiedir.ErrNotDirectory; a missing one is fs.ErrNotExist).
	ErrNoDirectory = bookiedir.ErrNotDirectory
	// ErrNotWritable is returned when a benchmark target directory cannot be
	// written (bookiedir.ErrNotWritable).
	ErrNotWritable = bookiedir.ErrNotWritable
	// ErrUnsupportedFS is returned for directories that are not on a disk:
	// tmpfs, ramfs, overlayfs, kernel pseudo-filesystems (figures measured
	// there say nothing about the bookie's disk). It is
	// bookiedir.ErrUnsupportedFS, as diskbench's is.
	ErrUnsupportedFS = bookiedir.ErrUnsupportedFS
	// ErrBudgetTooSmall is returned when the time or byte budget cannot fit
	// even one measurement per disk.
	ErrBudgetTooSmall = errors.New("benchmark budget too small")
	// ErrNoMeasurements is returned by Recommend when a disk has no usable
	// result for a rule that needs one.
	ErrNoMeasurements = errors.New("no usable measurements")
	// ErrDirectMemoryTooSmall is returned when the JVM's direct memory cannot
	// hold the minimum caches and buffers of a DbLedgerStorage bookie.
	ErrDirectMemoryTooSmall = errors.New("direct memory too small")
	// ErrNoDirectMemory is returned when no direct-memory size was given and
	// none could be found in the JVM options.
	ErrNoDirectMemory = errors.New("direct memory size unknown")
	// ErrLiveBookie is returned when a benchmark would write into a live
	// bookie's directory and no scratch directory can be used instead.
	ErrLiveBookie = errors.New("directory belongs to a live bookie")
	// ErrBadCookie is returned when a cookie (current/VERSION) cannot be
	// parsed.
	ErrBadCookie = errors.New("unparseable bookie cookie")
	// ErrBadProcFile is returned when a /proc or /sys file has an unexpected
	// format (hostfs.ErrBadProcFile).
	ErrBadProcFile = hostfs.ErrBadProcFile
	// ErrMountNotFound is returned when no mount covers a path
	// (hostfs.ErrMountNotFound).
	ErrMountNotFound = hostfs.ErrMountNotFound
)
