package diskbench

import (
	"context"
	"fmt"
	"strings"

	"github.com/tierkeeper/tierkeeper/internal/bookiedir"
	"github.com/tierkeeper/tierkeeper/internal/hostfs"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

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
// directory on a disk filesystem — never a kernel pseudo-filesystem such as
// /proc, and not tmpfs, ramfs, overlayfs or one reporting no capacity unless
// opts.AllowAnyFS —, be writable, hold no bookie data (unless opts.Force;
// see internal/bookiedir for what counts) and have room for opts.MaxBytes
// plus ReserveBytes. Only opts.Dir, AllowAnyFS, Force, MaxBytes and SysPath
// are read. The returned Target is non-nil whenever statfs worked, also when
// the error is a refusal.
//
// Errors wrap fs.ErrNotExist, ErrNotDirectory, fs.ErrPermission,
// ErrUnsupportedFS, ErrBookieData, ErrInsufficientSpace or ErrInvalidOptions.
func Check(ctx context.Context, opts Options) (*Target, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		return nil, fmt.Errorf("%w: no directory given", ErrInvalidOptions)
	}
	if opts.MaxBytes < 0 {
		return nil, fmt.Errorf("%w: MaxBytes %d is negative", ErrInvalidOptions, opts.MaxBytes)
	}
	d, err := bookiedir.Stat(ctx, opts.Dir, hostfs.FS{SysPath: opts.SysPath})
	if err != nil {
		return nil, err
	}
	t := &Target{
		Dir:        d.Path,
		FSMagic:    d.FSMagic,
		FSType:     d.FSType,
		FreeBytes:  d.FreeBytes,
		TotalBytes: d.TotalBytes,
	}
	if d.Device != nil {
		t.Device = d.Device.Name
	}
	if d.IsNetworkFS() {
		t.Warnings = append(t.Warnings, fmt.Sprintf("%s is a network or userspace filesystem: figures are not comparable with a local disk", t.FSType))
	}
	if err := d.CheckFS(opts.AllowAnyFS, "use --allow-any-fs to run anyway"); err != nil {
		return t, err
	}
	if err := d.CheckWritable(); err != nil {
		return t, err
	}
	found, err := bookiedir.FindBookieData(d.Path)
	if err != nil {
		return t, err
	}
	t.BookieData = found
	if len(found) > 0 && !opts.Force {
		return t, fmt.Errorf("%w: %s contains %s (use --force to run anyway)", ErrBookieData, d.Path, strings.Join(found, ", "))
	}
	t.MaxBytes = opts.MaxBytes
	if t.MaxBytes == 0 {
		t.MaxBytes = min(DefaultMaxBytesCap, int64(t.FreeBytes/10))
	}
	if uint64(t.MaxBytes)+uint64(ReserveBytes) > t.FreeBytes {
		return t, fmt.Errorf("%w: %s has %s free, the run may use %s plus a %s reserve", ErrInsufficientSpace, d.Path,
			units.HumanBytes(t.FreeBytes), units.HumanBytes(t.MaxBytes), units.FormatBytes(ReserveBytes))
	}
	return t, nil
}
