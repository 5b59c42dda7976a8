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
	// SysPath is the sysfs root Check reads the target's block device from
	// (a container with the host's /sys mounted elsewhere). Empty means "/sys".
	SysPath string
	// RaiseGOMAXPROCS raises GOMAXPROCS to workers+2 while a point runs
	// (restoring the old value after) and issues the default file's
	// pwrite/pread/fdatasync as raw system calls. Together they give each
	// worker a P it keeps while blocked in the kernel — no P hand-off, no
	// thread wake-up per I/O — which is what makes goroutines measure what
	// fio's threads measure (10–15% more fdatasync IOPS on a busy 2-core
	// machine). GOMAXPROCS is process-wide, so this is off by default: only
	// a program that owns its process and runs one benchmark at a time
	// should set it (the diskbench and bookieagent commands do). The cost:
	// a garbage collection that starts while a worker is blocked waits for
	// that I/O to return (a slow fdatasync delays the other goroutines).
	RaiseGOMAXPROCS bool
	// Settle, when set, makes each point's warm-up last until its
	// throughput has settled (past caches and bursts), with Warmup as the
	// longest it may take; see Settle. Default (nil): a fixed warm-up.
	Settle *Settle
	// LatencyBuckets makes every Latency of the results carry its
	// histogram's non-empty buckets (Latency.Buckets), so that several
	// runs can be pooled (PoolLatencies). Default: quantiles only.
	LatencyBuckets bool
}

// Prealloc says how a writer's file is prepared before writing (the plain
// journal model and the entry log; the BookKeeper journal model grows its
// files the way BookKeeper does).
type Prealloc int

const (
	// PreallocDefault uses the workload's default: fallocate for the plain
	// journal, none for the entry log.
	PreallocDefault Prealloc = iota
	// PreallocFallocate reserves FileSize with fallocate(2) mode 0 (unwritten
	// extents, file size set) — fio's fallocate=native.
	PreallocFallocate
	// PreallocNone starts from an empty file: every write appends until the
	// file reaches FileSize — fio's fallocate=none, and what an entry log does.
	PreallocNone
	// PreallocSparse sets the file's size with ftruncate(2) and allocates
	// nothing: every write lands in a hole — fio's fallocate=truncate, the
	// closest fio comes to BookKeeper's journal (see JournalModelBookKeeper).
	PreallocSparse
)

// String returns "fallocate", "none", "sparse" or "default".
func (p Prealloc) String() string {
	switch p {
	case PreallocFallocate:
		return "fallocate"
	case PreallocNone:
		return "none"
	case PreallocSparse:
		return "sparse"
	default:
		return "default"
	}
}

// JournalModel selects how the journal workload writes.
type JournalModel string

const (
	// JournalModelBookKeeper (the default) writes the way BookKeeper
	// 4.17's journal does: per writer a journal thread that groups the
	// queued entries into its write buffer, pads each group to
	// journalAlignmentSize, writes it and hands it to a force-write thread
	// that calls fdatasync and then acknowledges the group's entries; files
	// grow sparse, a zero block written at the end of each
	// journalPreAllocSizeMB window, and roll at journalMaxSizeMB. A closed
	// loop keeps InFlight entries outstanding per journal. See
	// docs/diskbench.md, "The BookKeeper journal model", for the source
	// lines each step follows.
	JournalModelBookKeeper JournalModel = "bookkeeper"
	// JournalModelPlain is the pattern fio can express: each writer
	// appends BlockSize writes to its own file (prepared as Prealloc says)
	// and calls fdatasync after every SyncEvery writes, in one thread.
	// `diskbench compare-fio` uses it.
	JournalModelPlain JournalModel = "plain"
)

// JournalSettings are the BookKeeper settings that shape the journal's I/O,
// under BookKeeper's own names (bookkeeper.conf keys, JSON names too).
// DefaultJournalSettings gives Pulsar's shipped conf/bookkeeper.conf values.
type JournalSettings struct {
	// JournalWriteBufferSizeKB is the journal's write buffer: a group's
	// bytes reach the file in writes of this size, the group's last
	// (partial) buffer when the group is flushed.
	JournalWriteBufferSizeKB int `json:"journalWriteBufferSizeKB"`
	// JournalMaxGroupWaitMSec is the longest an entry waits for others to
	// join its group; 0 flushes as soon as the queue is empty.
	JournalMaxGroupWaitMSec int64 `json:"journalMaxGroupWaitMSec"`
	// JournalBufferedWritesThreshold flushes a group once it holds more
	// than this many bytes (and another entry is waiting).
	JournalBufferedWritesThreshold int64 `json:"journalBufferedWritesThreshold"`
	// JournalBufferedEntriesThreshold flushes a group once it holds more
	// than this many entries (and another is waiting); 0 = off.
	JournalBufferedEntriesThreshold int `json:"journalBufferedEntriesThreshold"`
	// JournalFlushWhenQueueEmpty flushes a group as soon as no entry is
	// waiting, instead of waiting up to JournalMaxGroupWaitMSec.
	JournalFlushWhenQueueEmpty bool `json:"journalFlushWhenQueueEmpty"`
	// JournalAlignmentSize: with format ≥ 5 every group is padded to a
	// multiple of it; it is also the size of the zero block that extends a
	// file by one pre-allocation window.
	JournalAlignmentSize int `json:"journalAlignmentSize"`
	// JournalFormatVersionToWrite: 5 and 6 write a 512-byte header and
	// pad groups; 4 writes an 8-byte header and no padding.
	JournalFormatVersionToWrite int `json:"journalFormatVersionToWrite"`
	// JournalPreAllocSizeMB is the pre-allocation window: when a write
	// would cross the window's end, one JournalAlignmentSize block of zeros
	// is written at the end of the next window (the file grows sparse).
	JournalPreAllocSizeMB int `json:"journalPreAllocSizeMB"`
	// JournalMaxSizeMB: a journal file is closed (after its last
	// fdatasync) and a new one started once a flush leaves it larger.
	JournalMaxSizeMB int64 `json:"journalMaxSizeMB"`
	// JournalRemoveFromPageCache calls posix_fadvise(DONTNEED) after each
	// fdatasync for what lies more than 8 MiB behind the synced position.
	JournalRemoveFromPageCache bool `json:"journalRemoveFromPageCache"`
}

// DefaultJournalSettings returns Pulsar's shipped conf/bookkeeper.conf
// journal settings (BookKeeper's own code defaults differ in two:
// journalMaxGroupWaitMSec 2 and journalAlignmentSize 512, and write format
// 6, which writes the same bytes as 5 for adds).
func DefaultJournalSettings() JournalSettings {
	return JournalSettings{
		JournalWriteBufferSizeKB:        64,
		JournalMaxGroupWaitMSec:         1,
		JournalBufferedWritesThreshold:  512 * KiB,
		JournalBufferedEntriesThreshold: 0,
		JournalFlushWhenQueueEmpty:      false,
		JournalAlignmentSize:            4096,
		JournalFormatVersionToWrite:     5,
		JournalPreAllocSizeMB:           16,
		JournalMaxSizeMB:                2048,
		JournalRemoveFromPageCache:      true,
	}
}

// JournalParams describe the journal sweep: every (writers, block size)
// pair is one point.
type JournalParams struct {
	// Model is how the journal writes. Default JournalModelBookKeeper.
	Model JournalModel
	// Writers lists the numbers of parallel journals (journal directories:
	// each its own file, journal thread and force-write thread). Default
	// 1,2,4,8.
	Writers []int
	// BlockSizes lists the entry sizes (BookKeeper model: each journal
	// record is a 4-byte length plus the entry) or write sizes (plain
	// model) in bytes. Default 4 KiB, 16 KiB, 64 KiB.
	BlockSizes []int64

	// Settings are the BookKeeper journal settings (BookKeeper model).
	// Default (nil) DefaultJournalSettings().
	Settings *JournalSettings
	// InFlight is the number of entries each journal's client keeps
	// outstanding (BookKeeper model): a new add is issued when one is
	// acknowledged. Default (0): enough entries for twice
	// JournalBufferedWritesThreshold, at least 1, so groups fill to the
	// threshold while the previous group syncs — a busy bookie.
	InFlight int

	// SyncEvery is the group-commit size of the plain model: fdatasync
	// after every SyncEvery writes. Default 1.
	SyncEvery int
	// FileSize is each writer's file size in bytes (plain model); the
	// point stops when a writer fills its file (StopReason "file full").
	// Default: 1.5 × the point's share of MaxBytes divided by the writers,
	// at most MaxFileSize.
	FileSize int64
	// Prealloc is how each file is prepared (plain model). Default
	// PreallocFallocate.
	Prealloc Prealloc
	// Alternate, when set, measures Writers (at least two distinct counts)
	// in one alternating point per block size instead of a point each: see
	// Alternation. Each count gets one Result per batch.
	Alternate *Alternation
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
	// Alternate, when set, measures Writers (at least two distinct counts)
	// in one alternating point per block size instead of a point each: see
	// Alternation. Each count gets one Result per batch.
	Alternate *Alternation
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
		Journal:    &JournalParams{Writers: []int{1, 2, 4}, BlockSizes: []int64{4 * KiB, 64 * KiB}},
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
