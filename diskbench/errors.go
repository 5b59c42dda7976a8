package diskbench

import "errors"

// Sentinel errors. Every error diskbench returns wraps one of these or an
// os/syscall error (fs.ErrNotExist, fs.ErrPermission, syscall.ENOSPC ...), so
// callers can branch with errors.Is.
var (
	// ErrUnsupportedFS is returned by Check (and every Run*) when the target
	// directory is on tmpfs, ramfs or overlayfs: a figure measured there says
	// nothing about the bookie's disk. Options.AllowAnyFS overrides it.
	ErrUnsupportedFS = errors.New("diskbench: unsupported filesystem")
	// ErrBookieData is returned when the target directory holds BookKeeper
	// data (a current/VERSION cookie, *.txn journal files or *.log entry
	// logs). Options.Force overrides it.
	ErrBookieData = errors.New("diskbench: directory holds bookie data")
	// ErrNotDirectory is returned when the target exists but is not a
	// directory.
	ErrNotDirectory = errors.New("diskbench: not a directory")
	// ErrInsufficientSpace is returned before any write when the filesystem
	// has less free space than the run may use (MaxBytes plus a reserve).
	ErrInsufficientSpace = errors.New("diskbench: not enough free space")
	// ErrNoSpace wraps syscall.ENOSPC (or EDQUOT) hit during a run.
	ErrNoSpace = errors.New("diskbench: filesystem full")
	// ErrBudgetExhausted is returned when the byte or time budget ran out
	// before a point measured anything.
	ErrBudgetExhausted = errors.New("diskbench: budget exhausted before measuring")
	// ErrInvalidOptions is returned for option values that cannot run
	// (zero writers, block size not a multiple of 512, ...).
	ErrInvalidOptions = errors.New("diskbench: invalid options")
	// ErrSync wraps a failed fdatasync: the device lost writes or went away.
	ErrSync = errors.New("diskbench: fdatasync failed")
)
