// Package diskbench measures a disk the way an Apache BookKeeper bookie uses
// it, so the bookie agent can size journal and ledger directories with
// evidence. It is the engine under the `diskbench` command.
//
// Seastar's iotune measures sequential and random O_DIRECT I/O but never
// fsync, so it cannot size a bookie journal, where every journal directory
// is one thread appending and calling fdatasync per group commit. diskbench
// measures three patterns:
//
//   - journal (RunJournal): N journals written the way BookKeeper 4.17's
//     Journal writes a journal directory (JournalModelBookKeeper: group
//     commit by its settings, write buffer, alignment padding, sparse
//     pre-allocation windows, roll; see docs/diskbench.md), or N writers
//     each appending BlockSize writes and calling fdatasync every SyncEvery
//     writes (JournalModelPlain, what fio can express).
//   - entry log (RunEntryLog): buffered sequential appends with an fdatasync
//     every FlushEveryBytes (DbLedgerStorage's entry logger).
//   - random reads (RunRandRead): O_DIRECT preads at random block-aligned
//     offsets, Depth goroutines in flight (catch-up reads).
//
// Each (writers|depth, block size) pair is one point, reported as a Result:
// bytes/s, IOPS, latency percentiles (p50/p90/p99/p99.9, in ns) of every
// write, fdatasync, group commit, journal add or read, per-second
// throughput samples and their stdev/mean. A warm-up (default max(1 s, 5% of the duration)) runs
// first and is discarded. Latencies go into log-linear histograms (buckets
// within 1.6% of their value), not a slice of samples; with
// Options.LatencyBuckets each Latency carries its buckets and
// PoolLatencies merges several runs into one distribution.
//
// # API
//
//	Check(ctx, Options) (*Target, error)              preflight only
//	RunJournal(ctx, JournalOptions) ([]Result, error)  one sweep
//	RunEntryLog(ctx, EntryLogOptions) ([]Result, error)
//	RunRandRead(ctx, RandReadOptions) ([]Result, error)
//	Sweep(ctx, Plan) (*Report, error)                 all three, one time and byte budget
//	DefaultPlan(dir) Plan                              the agent's default (≤ 60 s, ≤ 2 GiB)
//	NewReport(*Target) *Report                         a report around Run* results
//	WriteTable(w, *Report) / WriteSVG(w, *Report)       human outputs
//	PoolLatencies(...*Latency) (*Latency, error)       runs' histograms as one
//
// Options fields state their defaults; the zero value means "default".
// Progress is reported through Options.Progress (a callback; the library
// never prints) and logs through Options.Logger (default: discard).
//
// # Safety
//
// Every Run* and Sweep starts with Check, which refuses (with the bookie
// agent's rules: both use internal/bookiedir):
//   - a missing directory (fs.ErrNotExist), a file (ErrNotDirectory) or an
//     unwritable one (fs.ErrPermission);
//   - a kernel pseudo-filesystem such as /proc or /sys, always, and tmpfs,
//     ramfs, overlayfs or a filesystem reporting no capacity unless
//     AllowAnyFS (ErrUnsupportedFS);
//   - a directory holding bookie data — a current/VERSION cookie, journals,
//     entry logs, lastMark or RocksDB indexes in its current/ or any
//     */current/, hex-named *.txn/*.log in it — (ErrBookieData) unless Force;
//   - less free space than MaxBytes plus ReserveBytes (ErrInsufficientSpace).
//
// MaxBytes (default min(2 GiB, 10% of the free space)) caps every byte
// written, layout and warm-up included; a point whose share is spent stops
// early and says so in its Warnings. Files are named ".diskbench-<pid>-*";
// writer files keep their names while measured (as fio's and a bookie's
// do), the random-read file is unlinked right after its layout, and all are
// removed before return, also on error and when ctx is cancelled (wire
// SIGINT/SIGTERM to ctx). Files left by a run killed with SIGKILL are
// removed by the next run in the same directory (their pid is gone).
// ENOSPC surfaces as ErrNoSpace (also matching syscall.ENOSPC), a failed
// fdatasync as ErrSync.
//
// # Examples
//
// The journal sweep the bookie agent uses to pick journal directories:
//
//	res, err := diskbench.RunJournal(ctx, diskbench.JournalOptions{
//		Options: diskbench.Options{Dir: "/mnt/ssd0/tmp", Duration: 5 * time.Second},
//		JournalParams: diskbench.JournalParams{
//			Writers:    []int{1, 2, 4},
//			BlockSizes: []int64{4 * diskbench.KiB, 64 * diskbench.KiB},
//		},
//	})
//	for _, r := range res {
//		fmt.Println(r.Writers, r.BlockSize, r.BytesPerSec, r.SyncLatency.P99Ns)
//	}
//
// A whole sweep within the agent's budget, with progress:
//
//	plan := diskbench.DefaultPlan("/mnt/ssd0/tmp")
//	plan.TimeBudget = 60 * time.Second
//	plan.MaxBytes = 2 * diskbench.GiB
//	plan.Progress = func(ev diskbench.ProgressEvent) { log.Println(ev.Label, ev.Phase) }
//	rep, err := diskbench.Sweep(ctx, plan)
//	switch {
//	case errors.Is(err, diskbench.ErrUnsupportedFS), errors.Is(err, diskbench.ErrBookieData):
//		// refused: report it, do not retry
//	case err != nil:
//		// rep holds the points measured before the error
//	}
//	_ = json.NewEncoder(os.Stdout).Encode(rep)
//
// # Caveats
//
// Buffered writes go through the page cache, like the bookie's, and are
// charged to the caller's memory cgroup: a small agent pod may see lower
// buffered throughput than a large bookie. Random reads use O_DIRECT and
// bypass it. Run on the bookie's own mount (hostPath/PV), not the
// container's overlay root. Results on network or FUSE filesystems carry a
// warning in Report.Warnings.
package diskbench
