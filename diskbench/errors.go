package diskbench

import (
	"errors"

	"github.com/tierkeeper/tierkeeper/internal/bookiedir"
)

// Sentinel errors. Every error diskbench returns wraps one of these or an
// os/syscall error (fs.ErrNotExist, fs.ErrPermission, syscall.ENOSPC ...), so
// callers can branch with errors.Is. Their texts carry no "diskbench:"
// prefix: the command prints its name once.
var (
	// ErrUnsupportedFS is returned by Check (and every Run*) when the target
	// directory is not on a disk: on tmpfs, ramfs, overlayfs or a filesystem
	// reporting no capacity (Options.AllowAnyFS overrides these), or on a
	// kernel pseudo-filesystem such as proc or sysfs (always). It is
	// bookiedir.ErrUnsupportedFS, shared with the bookie agent.
	ErrUnsupportedFS = bookiedir.ErrUnsupportedFS
	// ErrBookieData is returned when the target directory holds BookKeeper
	// data (a current/VERSION cookie, journal files, entry logs, lastMark or
	// RocksDB indexes; see internal/bookiedir). Options.Force overrides it.
	ErrBookieData = bookiedir.ErrBookieData
	// ErrNotDirectory is returned when the target exists but is not a
	// directory.
	ErrNotDirectory = bookiedir.ErrNotDirectory
	// ErrInsufficientSpace is returned before any write when the filesystem
	// has less free space than the run may use (MaxBytes plus a reserve).
	ErrInsufficientSpace = errors.New("not enough free space")
	// ErrNoSpace wraps syscall.ENOSPC (or EDQUOT) hit during a run.
	ErrNoSpace = errors.New("filesystem full")
	// ErrBudgetExhausted is returned when the byte or time budget ran out
	// before a point measured anything.
	ErrBudgetExhausted = errors.New("budget exhausted before measuring")
	// ErrInvalidOptions is returned for option values that cannot run
	// (zero writers, block size not a multiple of 512, ...).
	ErrInvalidOptions = errors.New("invalid options")
	// ErrSync wraps a failed fdatasync: the device lost writes or went away.
	ErrSync = errors.New("fdatasync failed")
)
