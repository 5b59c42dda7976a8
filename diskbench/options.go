package diskbench

import (
	"log/slog"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Size constants for block sizes and budgets (the binary multiples of
// internal/units, which parses and formats every size).
const (
	KiB = units.KiB
	MiB = units.MiB
	GiB = units.GiB
)

// Defaults applied when an option is left at its zero value.
const (
	// DefaultDuration is the measured time of one point (warm-up excluded).
	DefaultDuration = 10 * time.Second
	// DefaultMinWarmup is the shortest warm-up; the default warm-up is
	// max(DefaultMinWarmup, 5% of the duration), as iotune does.
	DefaultMinWarmup = time.Second
	// DefaultMaxBytesCap caps the default byte budget; the default budget is
	// min(DefaultMaxBytesCap, 10% of the free space).
	DefaultMaxBytesCap = 2 * GiB
	// DefaultTimeBudget is the wall-clock budget of a Sweep.
	DefaultTimeBudget = 60 * time.Second
	// DefaultFlushEvery is the entry-log fdatasync interval (bytes).
	DefaultFlushEvery = 32 * MiB
	// MaxFileSize caps a derived per-writer file size.
	MaxFileSize = 1 * GiB
)

// Options are the settings every workload shares. The zero value of each
// field means "default"; Dir is required.
type Options struct {
	// Dir is the directory to measure. diskbench creates its files there
	// (named ".diskbench-<pid>-*") and removes every one before returning;
	// files left by a killed run are removed by the next one.
	Dir string
	// Duration is the measured time of each point, warm-up excluded.
	// Default DefaultDuration (10 s). Sweep derives it from its TimeBudget
	// when zero.
	Duration time.Duration
	// Warmup is run before each point's measurement and discarded.
	// Default max(1 s, 5% of Duration); a negative value means none.
	Warmup time.Duration
	// MaxBytes caps the bytes written by one call (warm-up, layout and
	// measurement together); a point stops early when its share is spent.
	// Zero means min(2 GiB, 10% of the free space); a negative value is
	// ErrInvalidOptions.
	MaxBytes int64
	// AllowAnyFS lets diskbench run on tmpfs, ramfs and overlayfs.
	AllowAnyFS bool
	// Force lets diskbench run in a directory that holds bookie data.
	Force bool
	// Logger receives debug and warning records. Default: discard.
	Logger *slog.Logger
	// Progress, when set, is called about four times a second and at every
	// phase change. Calls come from one goroutine at a time and must return
	// quickly. Default: none.
	Progress ProgressFunc
	// OpenFile opens benchmark files; tests inject faults through it.
	// Default OpenOSFile.
	OpenFile OpenFunc
	// Seed seeds the data and random offsets; 0 picks one at random.
	Seed uint64
	// KeepGOMAXPROCS stops diskbench from raising GOMAXPROCS to
	// workers+2 while a point runs (it restores the old value after), and
	// from issuing the default file's pwrite/pread/fdatasync as raw system
	// calls. Together they give each worker a P it keeps while blocked in
	// the kernel — no P hand-off, no thread wake-up per I/O — which is what
	// makes goroutines measure what fio's threads measure (10–15% more
	// fdatasync IOPS on a busy 2-core machine). The cost: a garbage
	// collection that starts while a worker is blocked waits for that I/O
	// to return (a slow fdatasync delays the process's other goroutines).
	// Set it when that matters more, or when two diskbench runs share a
	// process.
	KeepGOMAXPROCS bool
}

// Prealloc says how a writer's file is prepared before writing.
type Prealloc int

const (
	// PreallocDefault uses the workload's default: fallocate for the
	// journal, none for the entry log.
	PreallocDefault Prealloc = iota
	// PreallocFallocate reserves FileSize with fallocate(2) mode 0 (unwritten
	// extents, file size set) — fio's fallocate=native.
	PreallocFallocate
	// PreallocNone starts from an empty file: every write appends until the
	// file reaches FileSize — fio's fallocate=none, and what an entry log does.
	PreallocNone
)

// String returns "fallocate", "none" or "default".
func (p Prealloc) String() string {
	switch p {
	case PreallocFallocate:
		return "fallocate"
	case PreallocNone:
		return "none"
	default:
		return "default"
	}
}

// JournalParams describe the journal sweep: every (writers, block size)
// pair is one point.
type JournalParams struct {
	// Writers lists the numbers of parallel journal files. Default 1,2,4,8.
	Writers []int
	// BlockSizes lists the write sizes in bytes. Default 4 KiB, 16 KiB, 64 KiB.
	BlockSizes []int64
	// SyncEvery is the group-commit size: fdatasync after every SyncEvery
	// writes. Default 1.
	SyncEvery int
	// FileSize is each writer's file size in bytes; the point stops when a
	// writer fills its file (StopReason "file full"). Default: 1.5 × the
	// point's share of MaxBytes divided by the writers, at most MaxFileSize.
	FileSize int64
	// Prealloc is how each file is prepared. Default PreallocFallocate.
	Prealloc Prealloc
}

// JournalOptions configure RunJournal.
type JournalOptions struct {
	Options
	JournalParams
}

// EntryLogParams describe the entry-log sweep: buffered sequential writes
// with an fdatasync every FlushEveryBytes.
type EntryLogParams struct {
	// Writers lists the numbers of parallel entry-log files. Default 1.
	Writers []int
	// BlockSizes lists the write sizes in bytes. Default 64 KiB, 1 MiB, 8 MiB.
	BlockSizes []int64
	// FlushEveryBytes is the fdatasync interval. Default 32 MiB.
	FlushEveryBytes int64
	// FileSize is each writer's file size (the point stops when one is
	// full). Default as for the journal.
	FileSize int64
	// Prealloc is how each file is prepared. Default PreallocNone (appends).
	Prealloc Prealloc
}

// EntryLogOptions configure RunEntryLog.
type EntryLogOptions struct {
	Options
	EntryLogParams
}

// RandReadParams describe the random-read sweep: one file laid out once,
// then O_DIRECT reads at random block-aligned offsets, Depth goroutines in
// flight.
type RandReadParams struct {
	// BlockSizes lists the read sizes in bytes. Default 4 KiB, 64 KiB, 1 MiB.
	BlockSizes []int64
	// Depths lists the numbers of reads in flight. Default 1, 16.
	Depths []int
	// FileSize is the size of the file read. Writing it counts against
	// MaxBytes. Default min(1 GiB, MaxBytes/2) (Sweep: min(256 MiB, MaxBytes/4)).
	FileSize int64
}

// RandReadOptions configure RunRandRead.
type RandReadOptions struct {
	Options
	RandReadParams
}

// Plan is a whole sweep under one time and byte budget, as the bookie agent
// runs it. A nil workload is skipped.
type Plan struct {
	// Options apply to every workload. Options.Duration, when zero, is
	// derived per point from TimeBudget; Options.MaxBytes is the byte budget
	// of the whole sweep.
	Options
	// TimeBudget bounds the whole sweep's wall time (checks, layout,
	// warm-ups and measurements). Default DefaultTimeBudget (60 s).
	TimeBudget time.Duration
	Journal    *JournalParams
	EntryLog   *EntryLogParams
	RandRead   *RandReadParams
}

// DefaultPlan returns the sweep the bookie agent runs by default: journal at
// 1, 2, 4 writers × 4 KiB, 64 KiB; entry log at 1 MiB; random reads of 4 KiB
// and 1 MiB at depth 1 and 16; within 60 s and min(2 GiB, 10% of the free
// space).
func DefaultPlan(dir string) Plan {
	return Plan{
		Options:    Options{Dir: dir},
		TimeBudget: DefaultTimeBudget,
		Journal:    &JournalParams{Writers: []int{1, 2, 4}, BlockSizes: []int64{4 * KiB, 64 * KiB}, SyncEvery: 1},
		EntryLog:   &EntryLogParams{Writers: []int{1}, BlockSizes: []int64{1 * MiB}},
		RandRead:   &RandReadParams{BlockSizes: []int64{4 * KiB, 1 * MiB}, Depths: []int{1, 16}},
	}
}

// Phase names what a point is doing.
type Phase string

// The phases reported through ProgressFunc.
const (
	PhaseLayout  Phase = "layout"  // writing the file random reads will read
	PhaseWarmup  Phase = "warmup"  // running, results discarded
	PhaseMeasure Phase = "measure" // running, results kept
	PhaseDone    Phase = "done"    // point finished; Result is set
)

// ProgressEvent is one progress report.
type ProgressEvent struct {
	Workload Workload
	// Point is the 1-based index of the current point among Points.
	Point, Points int
	// Label describes the point ("writers=4 bs=64KiB").
	Label string
	Phase Phase
	// Elapsed is the time since the call started; Estimate is the expected
	// total time of the call (it may change as the run goes).
	Elapsed, Estimate time.Duration
	// BytesWritten counts every byte written so far in the call.
	BytesWritten int64
	// BytesPerSec is the current point's rate over the last interval.
	BytesPerSec float64
	// Result is set when Phase is PhaseDone.
	Result *Result
}

// ProgressFunc receives progress reports. See Options.Progress.
type ProgressFunc func(ProgressEvent)
