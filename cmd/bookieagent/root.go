package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "bookieagent",
		Short: "Bookie disk tuning with evidence, and capacity reports",
		Long: `bookieagent measures a bookie node's disks with diskbench and derives BookKeeper
settings from the measurements, printing the rule and evidence behind every value.
It also reports disk capacity the way BookKeeper computes it (1 - avail/size) with
the time until the bookie turns read-only, once or as a DaemonSet server.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRecommendCmd(), newDiffCmd(), newServeCmd(), newReportCmd(), newClusterCmd())
	return root
}

// dirOptions are the flags every subcommand shares.
type dirOptions struct {
	journalDirs, ledgerDirs []string
	procfs, sysfs           string
}

func (o *dirOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.journalDirs, "journal-dir", nil, "journal directory, one per journal disk (repeat or comma-separate)")
	fs.StringSliceVar(&o.ledgerDirs, "ledger-dir", nil, "ledger directory, one per ledger disk (repeat or comma-separate)")
	fs.StringVar(&o.procfs, "path.procfs", "/proc", "procfs mount point (the host's, in a container)")
	fs.StringVar(&o.sysfs, "path.sysfs", "/sys", "sysfs mount point (the host's, in a container)")
}

func (o *dirOptions) validate(needBoth bool) error {
	if needBoth && (len(o.journalDirs) == 0 || len(o.ledgerDirs) == 0) {
		return fmt.Errorf("give at least one --journal-dir and one --ledger-dir")
	}
	if len(o.journalDirs)+len(o.ledgerDirs) == 0 {
		return fmt.Errorf("give --journal-dir and/or --ledger-dir")
	}
	return nil
}

func (o *dirOptions) host() bookieagent.HostFS {
	return bookieagent.HostFS{ProcPath: o.procfs, SysPath: o.sysfs}
}

func (o *dirOptions) dirRoles() []bookieagent.DirRole {
	var out []bookieagent.DirRole
	for _, d := range o.journalDirs {
		out = append(out, bookieagent.DirRole{Dir: d, Role: bookieagent.RoleJournal})
	}
	for _, d := range o.ledgerDirs {
		out = append(out, bookieagent.DirRole{Dir: d, Role: bookieagent.RoleLedger})
	}
	return out
}

// memOptions resolve the JVM's direct memory.
type memOptions struct {
	maxDirect string
	mem       string // diff's --mem: the JVM options themselves
	jvmEnv    []string
	limit     string
	// heap is -Xmx from the JVM options resolve read, when there.
	heap int64
}

// given reports whether a direct-memory flag was given.
func (o *memOptions) given() bool { return o.maxDirect != "" || o.mem != "" }

func (o *memOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.maxDirect, "max-direct-memory", "", "the bookie JVM's -XX:MaxDirectMemorySize (e.g. 4g); default: parsed from --jvm-env")
	fs.StringSliceVar(&o.jvmEnv, "jvm-env", []string{"BOOKIE_MEM", "PULSAR_MEM"}, "environment variables holding the bookie's JVM memory options, tried in order")
	fs.StringVar(&o.limit, "memory-limit", "", "the bookie container's memory limit (e.g. 16g), split between heap, direct memory, RocksDB and page cache; \"none\" for unknown; default: this process's cgroup (memory.max, v1 memory.limit_in_bytes) — right when the agent runs in the bookie's pod")
}

// memoryLimit returns the container limit: --memory-limit, else this
// process's cgroup through host; 0 when unknown or unlimited.
func (o *memOptions) memoryLimit(host bookieagent.HostFS) (int64, string, error) {
	return bookieagent.ResolveMemoryLimit(host, o.limit, "--memory-limit")
}

// resolve returns the direct-memory size and where it came from.
func (o *memOptions) resolve() (int64, string, error) {
	if o.mem != "" && o.maxDirect != "" {
		return 0, "", fmt.Errorf("give --mem or --max-direct-memory, not both")
	}
	m, err := bookieagent.ResolveDirectMemory(bookieagent.DirectMemorySpec{JVMOptions: o.mem, JVMOptionsName: "--mem",
		Size: o.maxDirect, SizeName: "--max-direct-memory", Env: o.jvmEnv})
	o.heap = m.HeapBytes
	return m.Bytes, m.Source, err
}

// startCPUs is GOMAXPROCS when the program started: since Go 1.25 the
// runtime sets it from the container's CPU limit (cgroup cpu.max) and the
// CPUs the process may run on, before any benchmark raises it.
var startCPUs = runtime.GOMAXPROCS(0)

// benchFlags are the benchmark flags of recommend and serve.
type benchFlags struct {
	budget    string
	maxBytes  units.Size
	rounds    int
	cpus      int
	allowLive bool
	// The disk guard: where the bookie's disk-usage thresholds come from.
	bookieConf string
	bookieHTTP string
	diskMargin float64
}

func (o *benchFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.budget, "budget", bookieagent.DefaultBenchTime.String(), "wall-time budget of the whole benchmark (a probe per disk runs past its caches; the decisive points are repeated exactly --rounds times, each measured for budget/80, shorter only when the rounds do not fit)")
	o.maxBytes = units.Size(bookieagent.DefaultBenchBytes)
	fs.Var(&o.maxBytes, "max-bytes", "bytes the benchmark may write in total (must be positive; files are removed after every run)")
	fs.IntVar(&o.rounds, "rounds", bookieagent.DefaultRounds, fmt.Sprintf("rounds of each decisive point (writeBufferSizeBytes; the directory counts' turns form max(8, --rounds) batches), the same in every run; a choice changes only when the confidence interval of its paired ratio over the current value clears the margin, on at least %d paired rounds", bookieagent.MinMoveRounds))
	fs.IntVar(&o.cpus, "cpus", startCPUs, "CPUs the bookie may use (evidence; default: this process's CPU limit, cgroup cpu.max — give the bookie pod's)")
	fs.StringVar(&o.bookieConf, "bookie-conf", "", "the bookie's bookkeeper.conf: its diskUsageThreshold / WarnThreshold / LwmThreshold bound what the benchmark writes (default: BookKeeper's 0.95 / 0.90 / = threshold)")
	fs.StringVar(&o.bookieHTTP, "bookie-http", "", "the bookie's HTTP admin address (http://host:8000): its running disk-usage thresholds are read from /api/v1/config/server_config")
	fs.Float64Var(&o.diskMargin, "disk-margin", bookieagent.DefaultDiskMargin, "the benchmark keeps every filesystem this far (a share of its size) below the lowest disk-usage threshold")
	fs.BoolVar(&o.allowLive, "allow-live-bookie", false, "benchmark a disk that holds a live bookie, in a scratch directory beside the bookie's directories (its files are never touched, but its disk carries the load)")
}

// cpusSource says where --cpus came from.
func (o *benchFlags) cpusSource(fs *pflag.FlagSet) string {
	if fs.Changed("cpus") {
		return "--cpus"
	}
	return "GOMAXPROCS at start: this process's CPU limit (cgroup cpu.max) or CPU affinity"
}

// guard returns the disk guard: from --bookie-http, else --bookie-conf,
// else fallbackConf (diff's --conf), else def (nil: BookKeeper's defaults).
func (o *benchFlags) guard(ctx context.Context, fallbackConf string, def *bookieagent.DiskGuard) (*bookieagent.DiskGuard, error) {
	if o.diskMargin < 0 || o.diskMargin >= 0.5 {
		return nil, fmt.Errorf("--disk-margin %v: want 0 ≤ margin < 0.5", o.diskMargin)
	}
	if o.bookieHTTP != "" && o.bookieConf != "" {
		return nil, errors.New("give --bookie-http or --bookie-conf, not both")
	}
	if o.bookieHTTP != "" {
		g, err := bookieagent.DiskGuardFromBookie(ctx, nil, o.bookieHTTP, 10*time.Second, o.diskMargin)
		if err != nil {
			return nil, fmt.Errorf("--bookie-http: %w", err)
		}
		return &g, nil
	}
	path := o.bookieConf
	if path == "" {
		path = fallbackConf
	}
	if path != "" {
		g, err := bookieagent.DiskGuardFromConfFile(path, o.diskMargin)
		if err != nil {
			return nil, fmt.Errorf("--bookie-conf: %w", err)
		}
		return &g, nil
	}
	if def != nil {
		g := *def
		g.Margin = o.diskMargin
		return &g, nil
	}
	g := bookieagent.DefaultDiskGuard()
	g.Margin = o.diskMargin
	return &g, nil
}

// parse returns --budget and --max-bytes as a duration and a byte count.
func (o *benchFlags) parse() (time.Duration, int64, error) {
	budget, err := time.ParseDuration(o.budget)
	if err != nil || budget <= 0 {
		return 0, 0, fmt.Errorf("--budget %q: want a positive duration like 5m", o.budget)
	}
	if o.maxBytes <= 0 {
		// Zero used to mean the 2 GiB default without a word.
		return 0, 0, fmt.Errorf("--max-bytes %s: %w: must be positive", o.maxBytes.String(), bookieagent.ErrBadSize)
	}
	if o.rounds < 1 || o.rounds > 20 {
		return 0, 0, fmt.Errorf("--rounds %d: want 1..20", o.rounds)
	}
	if o.cpus < 1 {
		return 0, 0, fmt.Errorf("--cpus %d: want at least 1", o.cpus)
	}
	return budget, o.maxBytes.Bytes(), nil
}

// options are the benchmark's options from the flags (budget and maxBytes
// from parse), d's directories, with guard. The benchmark owns the
// process's GOMAXPROCS, in recommend and serve alike (serve's /healthz
// tolerates a GC waiting on one I/O), so both measure the same.
func (o *benchFlags) options(d *dirOptions, guard *bookieagent.DiskGuard, budget time.Duration, maxBytes int64) bookieagent.BenchOptions {
	return bookieagent.BenchOptions{Guard: guard, JournalDirs: d.journalDirs, LedgerDirs: d.ledgerDirs, TimeBudget: budget, MaxBytes: maxBytes,
		Rounds: o.rounds, CPUs: o.cpus, AllowLiveBookie: o.allowLive, Host: d.host(), RaiseGOMAXPROCS: true}
}

// thresholdFlags are BookKeeper's disk-usage thresholds (serve, report).
type thresholdFlags struct {
	threshold, warn, lwm float64
}

func (o *thresholdFlags) addFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&o.threshold, "disk-usage-threshold", bookieagent.DefaultDiskUsageThreshold, "the bookies' diskUsageThreshold (a ledger dir past it takes no writes; all past it: read-only)")
	fs.Float64Var(&o.warn, "disk-usage-warn-threshold", bookieagent.DefaultDiskUsageWarnThreshold, "the bookies' diskUsageWarnThreshold (major compaction pauses)")
	fs.Float64Var(&o.lwm, "disk-usage-lwm-threshold", 0, "the bookies' diskUsageLwmThreshold (a read-only bookie turns writable below it; default: BookKeeper's, the threshold)")
}

func (o *thresholdFlags) validate() error {
	if err := bookieagent.CheckThresholds(o.threshold, o.warn, o.lwm); err != nil {
		return fmt.Errorf("--disk-usage-*: %w", err)
	}
	return nil
}
