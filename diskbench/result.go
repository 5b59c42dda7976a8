package diskbench

import "time"

// Workload names a benchmark pattern.
type Workload string

// The workloads diskbench runs; each mirrors one way a bookie uses its disks.
const (
	// WorkloadJournal is N journals written the way a BookKeeper bookie
	// writes its journal directories (JournalModelBookKeeper), or N writers
	// each appending and calling fdatasync every SyncEvery writes
	// (JournalModelPlain).
	WorkloadJournal Workload = "journal"
	// WorkloadEntryLog is buffered sequential appends with an fdatasync every
	// FlushEveryBytes (the entry logger of DbLedgerStorage).
	WorkloadEntryLog Workload = "entrylog"
	// WorkloadRandRead is O_DIRECT random reads at a queue depth (catch-up reads).
	WorkloadRandRead Workload = "randread"
)

// Latency summarises one latency distribution. All values are nanoseconds.
// A nil *Latency means the workload has no such operation.
type Latency struct {
	Count  int64   `json:"count"`
	MinNs  int64   `json:"min_ns"`
	MeanNs float64 `json:"mean_ns"`
	P50Ns  int64   `json:"p50_ns"`
	P90Ns  int64   `json:"p90_ns"`
	P99Ns  int64   `json:"p99_ns"`
	P999Ns int64   `json:"p999_ns"`
	MaxNs  int64   `json:"max_ns"`
	// Buckets, with Options.LatencyBuckets, are the histogram the
	// quantiles come from: [lowest value in ns, count] of each non-empty
	// bucket, in ascending order (buckets as described at PoolLatencies).
	// Runs are pooled with PoolLatencies.
	Buckets [][2]int64 `json:"buckets,omitempty"`
}

// Result is one point of a sweep: one workload at one (writers|depth,
// block size) setting. Its JSON form is part of diskbench's public output
// (`diskbench ... --output json`) and is read back by the bookie agent, so
// fields are only ever added, never renamed.
type Result struct {
	Workload Workload `json:"workload"`
	// Writers is the number of parallel writer files (journal, entrylog).
	Writers int `json:"writers,omitempty"`
	// Depth is the number of reads in flight (randread).
	Depth int `json:"depth,omitempty"`
	// BlockSize is the size of each write or read in bytes.
	BlockSize int64 `json:"block_size"`
	// SyncEvery is the group-commit size in writes (journal).
	SyncEvery int `json:"sync_every,omitempty"`
	// FlushEveryBytes is the fdatasync interval in bytes (entrylog).
	FlushEveryBytes int64 `json:"flush_every_bytes,omitempty"`
	// FileSize is the size of the file read (randread), or of each writer's
	// file (journal, entrylog).
	FileSize int64 `json:"file_size,omitempty"`
	// Prealloc is how writer files were prepared: "fallocate", "sparse" or
	// "none" (plain journal, entry log); "bookkeeper" for the BookKeeper
	// journal model (sparse, a zero block at each window's end).
	Prealloc string `json:"prealloc,omitempty"`
	// Model is the journal model: "bookkeeper" or "plain" (journal only).
	Model JournalModel `json:"model,omitempty"`
	// JournalSettings are the BookKeeper settings a bookkeeper-model point
	// ran with.
	JournalSettings *JournalSettings `json:"journal_settings,omitempty"`
	// InFlight is the number of entries each journal's client kept
	// outstanding (bookkeeper model).
	InFlight int `json:"in_flight,omitempty"`

	// DurationSec is the measured time, warm-up excluded.
	DurationSec float64 `json:"duration_sec"`
	// WarmupSec is the time discarded before measuring.
	WarmupSec float64 `json:"warmup_sec"`
	// Bytes and Ops are the totals in the measured window.
	Bytes int64 `json:"bytes"`
	Ops   int64 `json:"ops"`
	// Syncs is the number of fdatasync calls in the measured window.
	Syncs int64 `json:"syncs,omitempty"`
	// BytesWritten counts every byte this point wrote, warm-up and file
	// layout included (what it cost the disk, as opposed to Bytes).
	BytesWritten int64 `json:"bytes_written,omitempty"`
	// StopReason says what ended the point: "duration", "byte budget" or
	// "file full".
	StopReason string `json:"stop_reason,omitempty"`

	BytesPerSec float64 `json:"bytes_per_sec"`
	IOPS        float64 `json:"iops"`

	// WriteLatency covers each write(2) call; SyncLatency each fdatasync;
	// CommitLatency one group (plain model: its writes plus the sync;
	// bookkeeper model: from the group's flush to the end of the fdatasync
	// that made it durable). ReadLatency covers each read. AddLatency
	// (bookkeeper model) is each entry's time from being queued to the
	// journal to its acknowledgement — what a bookie add waits for in the
	// journal; Bytes, Ops and BytesPerSec then count acknowledged entries.
	WriteLatency  *Latency `json:"write_latency,omitempty"`
	SyncLatency   *Latency `json:"sync_latency,omitempty"`
	CommitLatency *Latency `json:"commit_latency,omitempty"`
	ReadLatency   *Latency `json:"read_latency,omitempty"`
	AddLatency    *Latency `json:"add_latency,omitempty"`
	// JournalIO counts what the bookkeeper model wrote in the measured
	// window.
	JournalIO *JournalIO `json:"journal_io,omitempty"`

	// SamplesBytesPerSec holds one throughput sample per second of the
	// measured window; StdevOverMean is their coefficient of variation.
	SamplesBytesPerSec []float64 `json:"samples_bytes_per_sec,omitempty"`
	StdevOverMean      float64   `json:"stdev_over_mean"`

	// Settle describes the warm-up when it ran under Options.Settle.
	Settle *SettleInfo `json:"settle,omitempty"`

	// Alternation marks one count's figures over one batch of an
	// alternating journal point (JournalParams.Alternate); the other
	// figures (Writers, Bytes, BytesPerSec, AddLatency, SyncLatency, ...)
	// are that count's turns in that batch, less their settle time.
	// JournalIO is the whole point's.
	Alternation *AlternationInfo `json:"alternation,omitempty"`

	// DirectIO reports whether reads used O_DIRECT (randread).
	DirectIO bool `json:"direct_io,omitempty"`
	// Warnings lists conditions that make the figure less trustworthy
	// (buffered fallback, high variance, cache effects, ...).
	Warnings []string `json:"warnings,omitempty"`
}

// JournalIO describes the I/O of a bookkeeper-model journal point in the
// measured window.
type JournalIO struct {
	// Groups is the number of flushed groups; MeanGroupEntries and
	// MeanGroupBytes their average size (bytes include the 4-byte record
	// lengths and the padding).
	Groups           int64   `json:"groups"`
	MeanGroupEntries float64 `json:"mean_group_entries"`
	MeanGroupBytes   float64 `json:"mean_group_bytes"`
	// Writes and WriteBytes count every write to the journal files
	// (records, padding, headers, pre-allocation zero blocks);
	// FullBufferWrites those of exactly JournalWriteBufferSizeKB.
	Writes           int64 `json:"writes"`
	WriteBytes       int64 `json:"write_bytes"`
	FullBufferWrites int64 `json:"full_buffer_writes"`
	// PaddingBytes are the alignment padding records' bytes.
	PaddingBytes int64 `json:"padding_bytes"`
	// PreallocWrites counts the zero blocks written at window ends.
	PreallocWrites int64 `json:"prealloc_writes"`
	// Files is the number of journal files started (rolls + 1 per journal).
	Files int64 `json:"files"`
	// FlushedByWait, FlushedBySize and FlushedEmpty count the window's
	// groups by what made them due (BookKeeper's Journal counts the same as
	// JOURNAL_NUM_FLUSH_MAX_WAIT, _MAX_OUTSTANDING_BYTES, _EMPTY_QUEUE): the
	// oldest entry waited journalMaxGroupWaitMSec, the group passed
	// journalBufferedWritesThreshold (or the entries threshold), the queue
	// was empty with journalFlushWhenQueueEmpty.
	FlushedByWait int64 `json:"flushed_by_wait,omitempty"`
	FlushedBySize int64 `json:"flushed_by_size,omitempty"`
	FlushedEmpty  int64 `json:"flushed_empty,omitempty"`
}

// Report is the document `--output json` prints: every result of one run
// plus where and how it was measured.
type Report struct {
	Tool      string    `json:"tool"`
	Version   string    `json:"version,omitempty"`
	StartedAt time.Time `json:"started_at"`
	Host      string    `json:"host,omitempty"`
	Dir       string    `json:"dir"`
	// FSType is the filesystem name from statfs (ext4, xfs, ...).
	FSType string `json:"fs_type"`
	// Device is the backing block device when it could be found.
	Device string `json:"device,omitempty"`
	// FreeBytes and TotalBytes are the filesystem's available and total size
	// at the start of the run.
	FreeBytes    uint64   `json:"free_bytes"`
	TotalBytes   uint64   `json:"total_bytes"`
	BytesWritten int64    `json:"bytes_written"`
	Results      []Result `json:"results"`
	// TimeBudgetSec and MaxBytes are the budgets the run was given.
	TimeBudgetSec float64 `json:"time_budget_sec,omitempty"`
	MaxBytes      int64   `json:"max_bytes,omitempty"`
	// ElapsedSec is the run's wall time.
	ElapsedSec float64 `json:"elapsed_sec,omitempty"`
	// Warnings lists run-level problems (points skipped for lack of time,
	// filesystem caveats); per-point ones are in each Result.
	Warnings []string `json:"warnings,omitempty"`
}
