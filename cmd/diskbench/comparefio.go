package main

import (
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/diskbench/fiocmp"
	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

func newCompareFioCmd() *cobra.Command {
	var (
		dir              string
		duration, warmup time.Duration
		fio              string
		fileSize         = units.Size(2 * units.GiB)
		readSize         = units.Size(units.GiB)
		logSize          = units.Size(8 * units.GiB)
		only             string
		output           string
		allowAnyFS       bool
		force, verbose   bool
		minRatio         float64
		repeat           int
		maxRatio         float64
		journalPrealloc  []string
		printJobs        bool
	)
	cmd := &cobra.Command{
		Use:   "compare-fio --dir DIR",
		Short: "Run fio and diskbench on the same workloads and compare them",
		Long: `Runs each workload with fio, then with diskbench, in the same run: journal
1/2/4 writers × 4k/64k with fdatasync per write (diskbench's plain journal model),
each on a sparse file — the BookKeeper pattern, every write landing in a hole
(fio fallocate=truncate) — and on a preallocated one (fio fallocate=native)
(--journal-prealloc picks), entry log 1 MiB writes with a
flush every 32 MiB, random reads 4k at depth 16 (fio libaio iodepth 16 vs 16
goroutines on O_DIRECT). Each case runs --repeat times per tool, alternating which tool
goes first, and the medians are compared. Prints bytes/s and p99 of both tools and the ratio
diskbench/fio. Exits non-zero when a throughput ratio is outside
[--min-ratio, --max-ratio]. --print-jobs prints the fio job of every case,
labelled, and runs nothing. fio cannot express BookKeeper's group commit;
make bench-journal compares the whole pattern with BookKeeper's own Journal.`,
		Example: "  diskbench compare-fio --dir /var/tmp/bench --duration 5s",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("%w: --dir is required", diskbench.ErrInvalidOptions)
			}
			for name, v := range map[string]units.Size{"file-size": fileSize, "entrylog-file-size": logSize, "read-file-size": readSize} {
				if v <= 0 {
					return fmt.Errorf("%w: --%s %s: must be positive", diskbench.ErrInvalidOptions, name, v.String())
				}
			}
			fs, ls, rs := fileSize.Bytes(), logSize.Bytes(), readSize.Bytes()
			errOut := cmd.ErrOrStderr()
			o := fiocmp.Options{Dir: dir, Duration: duration, Warmup: warmup, Fio: fio, Repeat: repeat, AllowAnyFS: allowAnyFS, Force: force, RaiseGOMAXPROCS: true,
				Logger: cli.Logger(errOut, verboseLevel(verbose))}
			if output != "json" {
				o.OnRow = func(i, n int, r fiocmp.Row) {
					fmt.Fprintf(errOut, "[%d/%d] %-32s fio %10s  diskbench %10s  ratio %.2f\n", i, n, r.Case.Name(),
						units.HumanRate(r.Fio.BytesPerSec), units.HumanRate(r.Diskbench.BytesPerSec), r.ThroughputRatio())
				}
			}
			var pas []diskbench.Prealloc
			for _, v := range journalPrealloc {
				pa, ok := diskbench.ParsePrealloc(v)
				if !ok || pa == diskbench.PreallocDefault {
					return fmt.Errorf("%w: --journal-prealloc %q (want sparse, fallocate or none)", diskbench.ErrInvalidOptions, v)
				}
				pas = append(pas, pa)
			}
			var re *regexp.Regexp
			if only != "" {
				var err error
				if re, err = regexp.Compile(only); err != nil {
					return fmt.Errorf("%w: --only: %v", diskbench.ErrInvalidOptions, err)
				}
			}
			cases := fiocmp.SelectCases(fs, ls, rs, pas, re)
			if len(cases) == 0 {
				return fmt.Errorf("%w: --only %q matches no case", diskbench.ErrInvalidOptions, only)
			}
			if printJobs {
				for _, c := range cases {
					fmt.Fprintln(cmd.OutOrStdout(), fiocmp.JobFile(dir, c, duration, warmup))
				}
				return nil
			}
			rows, err := fiocmp.Run(cmd.Context(), o, cases)
			if len(rows) > 0 {
				eerr := cli.Print(cmd.OutOrStdout(), output == "json", rows, func(w io.Writer) error { return fiocmp.WriteTable(w, rows) })
				if err == nil {
					err = eerr
				}
			}
			if err != nil {
				return err
			}
			if bad := fiocmp.OutsideRatio(rows, minRatio, maxRatio); len(bad) > 0 {
				return fmt.Errorf("throughput ratio outside [%.2f, %.2f]: %v", minRatio, maxRatio, bad)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory both tools write in (required)")
	f.DurationVar(&duration, "duration", 5*time.Second, "measured time of each case in each tool")
	f.DurationVar(&warmup, "warmup", time.Second, "warm-up (fio ramp_time) of each case")
	f.Var(&fileSize, "file-size", "size of each journal writer's file (a case stops when one is full)")
	f.Var(&logSize, "entrylog-file-size", "size of the entry-log file (buffered writes run at memory speed until fdatasync)")
	f.Var(&readSize, "read-file-size", "size of the file random reads read")
	f.StringVar(&fio, "fio", "fio", "fio binary")
	f.IntVar(&repeat, "repeat", 3, "runs per case and tool, alternating which goes first; medians are compared")
	f.StringVar(&output, "output", "table", "table or json")
	f.StringVar(&only, "only", "", `run only the cases whose name matches this regexp (e.g. "journal w=4")`)
	f.BoolVar(&allowAnyFS, "allow-any-fs", false, "run on tmpfs, ramfs or overlayfs too")
	f.BoolVar(&force, "force", false, "run in a directory that holds bookie data")
	f.BoolVarP(&verbose, "verbose", "v", false, "log debug records (fio job files) to stderr")
	f.Float64Var(&minRatio, "min-ratio", 0.85, "lowest acceptable diskbench/fio throughput ratio")
	f.Float64Var(&maxRatio, "max-ratio", 1.15, "highest acceptable diskbench/fio throughput ratio")
	f.StringSliceVar(&journalPrealloc, "journal-prealloc", []string{"sparse", "fallocate"},
		"journal file preparations to run: sparse (the BookKeeper pattern, fio fallocate=truncate), fallocate (fio fallocate=native), none (fio fallocate=none)")
	f.BoolVar(&printJobs, "print-jobs", false, "print the fio job of every selected case (labelled) and exit without running")
	return cmd
}
