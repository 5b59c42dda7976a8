package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

type recommendOptions struct {
	dirs      dirOptions
	mem       memOptions
	bench     benchFlags
	format    string
	entrySize string
	input     string
	saveInput string
	quiet     bool
	// guardConf is diff's --conf, the disk guard's fallback.
	guardConf string
}

func newRecommendCmd() *cobra.Command {
	o := &recommendOptions{}
	cmd := &cobra.Command{
		Use:   "recommend --journal-dir D... --ledger-dir D... [--max-direct-memory SIZE]",
		Short: "Benchmark the bookie's disks and print settings with their evidence",
		Long: `recommend benchmarks every journal and ledger directory with diskbench (default at
most 2 minutes and 512 GiB written in total) and prints a bookkeeper.conf fragment
(--format conf), an entry_location_rocksdb.conf fragment (rocksdb), Helm values for
the Pulsar chart (helm) or JSON. Each value is preceded by its rule and evidence.

Measurement: a probe per disk first (warmed up until its throughput settles, past the
page cache, a virtual disk's host cache or an SSD's fast region); it only sizes the plan
and warms the disk up, and is never a round of a comparison. The plan is fitted to the
budget with the probed rates and short fixed warm-ups. The directory counts are measured
in turns within one run per disk (1, 2 and 4 journals take turns of 250 ms; 1 and 2
entry-log writers turns of 1 s), so every count meets the disk in the same seconds; the
turns form 8 batches, the paired rounds of the count comparisons. The points that decide
writeBufferSizeBytes run exactly --rounds times each, interleaved (the measurement is
shortened to fit them; no run adds or drops rounds, so every run decides on the same
number of paired rounds). A value changes from the current one (a live bookie's
cookie, else Pulsar's) only when the 95% confidence interval of the paired per-round
ratio lies beyond the rule's margin on at least 3 paired rounds; the evidence gives the
ratio and interval.

The benchmark runs in a scratch directory .bookieagent-scratch-<pid> and stops if a
bookie starts using a directory meanwhile. A directory that holds a bookie (a cookie in
current/VERSION, journal or entry-log files) is refused unless --allow-live-bookie;
then the scratch directory is beside it on the same filesystem and the bookie's files
are never touched. Directory counts are marked "new or re-formatted bookies only" and a
live bookie's current values stay active.

Memory rules use the JVM's direct memory: --max-direct-memory, or the
-XX:MaxDirectMemorySize (else -Xmx) in $BOOKIE_MEM / $PULSAR_MEM, and the container's
memory limit (--memory-limit, else this process's cgroup), split between heap, direct
memory, RocksDB's native memory and the page cache; without the JVM flags direct memory
is derived from the limit, without either the settings that are shares of it are listed
with what they need, and the rest is given.

No benchmark run may take a journal or ledger filesystem past the bookie's lowest
disk-usage threshold (diskUsageThreshold, diskUsageWarnThreshold, diskUsageLwmThreshold
from --bookie-conf or --bookie-http, else BookKeeper's defaults) less --disk-margin; a
disk already there is refused, and shrunk or skipped runs are reported.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	fs := cmd.Flags()
	o.dirs.addFlags(fs)
	o.mem.addFlags(fs)
	o.bench.addFlags(fs)
	fs.StringVar(&o.format, "format", "conf", "output: conf, rocksdb, helm or json")
	fs.StringVar(&o.entrySize, "entry-size", "", "median entry size, if known (sets readBufferSizeBytes, rounded up to 4 KiB, at most 16 KiB)")
	fs.StringVar(&o.input, "input", "", "skip the benchmark: read measurements from this JSON (as written by --save-input)")
	fs.StringVar(&o.saveInput, "save-input", "", "also write the measurements and node facts as JSON to this file")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

func (o *recommendOptions) run(cmd *cobra.Command) error {
	format, err := bookieagent.ParseFormat(o.format)
	if err != nil {
		return err
	}
	m, err := o.measure(cmd, o.quiet || format == bookieagent.FormatJSON)
	if err != nil {
		return err
	}
	rec, err := bookieagent.Recommend(m.in)
	if err != nil {
		return errors.Join(err, m.saveErr)
	}
	var out bytes.Buffer
	if err := bookieagent.Render(&out, rec, format); err != nil {
		return errors.Join(err, m.saveErr)
	}
	_, err = io.Copy(cmd.OutOrStdout(), &out)
	return errors.Join(err, m.saveErr)
}

// measured is measure's result: the Input, and the error of writing
// --save-input (reported after the output).
type measured struct {
	in      bookieagent.Input
	saveErr error
}

// measure returns the recommendation's Input: read from --input, or
// measured by the benchmark. --save-input is opened before the benchmark
// (a path that cannot be written must not cost a whole run) and written
// before the rules run, so a recommendation that fails (too little direct
// memory, say) can be replayed with --input after fixing the flags; its
// error comes back separately.
func (o *recommendOptions) measure(cmd *cobra.Command, quiet bool) (measured, error) {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	var in bookieagent.Input
	var entrySize int64
	var err error
	if o.entrySize != "" {
		if entrySize, err = units.ParseSize(o.entrySize); err != nil {
			return measured{}, fmt.Errorf("--entry-size: %w", err)
		}
	}
	var save *cli.OutputFile
	if o.saveInput != "" {
		if save, err = cli.OpenOutput("--save-input", o.saveInput); err != nil {
			return measured{}, err
		}
		defer save.Discard()
	}
	if o.input != "" {
		if in, err = bookieagent.ReadInput(o.input); err != nil {
			return measured{}, fmt.Errorf("--input: %w", err)
		}
		if o.mem.given() {
			if in.DirectMemoryBytes, in.DirectMemorySource, err = o.mem.resolve(); err != nil {
				return measured{}, err
			}
			in.HeapBytes = o.mem.heap
		}
		if cmd.Flags().Changed("memory-limit") {
			if in.MemoryLimitBytes, in.MemoryLimitSource, err = o.mem.memoryLimit(o.dirs.host()); err != nil {
				return measured{}, err
			}
		}
		// --cpus overrides the recorded count only when given (it used to
		// be ignored without a word).
		switch {
		case cmd.Flags().Changed("cpus"):
			if o.bench.cpus < 1 {
				return measured{}, fmt.Errorf("--cpus %d: want at least 1", o.bench.cpus)
			}
			if in.CPUs != o.bench.cpus && !quiet {
				fmt.Fprintf(stderr, "--cpus %d overrides the %d CPUs recorded in %s\n", o.bench.cpus, in.CPUs, o.input)
			}
			in.CPUs, in.CPUsSource = o.bench.cpus, "--cpus (overriding the recorded count)"
		case !quiet:
			fmt.Fprintf(stderr, "using the %d CPUs recorded in %s (give --cpus to override)\n", in.CPUs, o.input)
		}
	} else {
		if err := o.dirs.validate(true); err != nil {
			return measured{}, err
		}
		budget, maxBytes, err := o.bench.parse()
		if err != nil {
			return measured{}, err
		}
		limit, limitSrc, err := o.mem.memoryLimit(o.dirs.host())
		if err != nil {
			return measured{}, err
		}
		direct, source, err := o.mem.resolve()
		if errors.Is(err, bookieagent.ErrNoDirectMemory) {
			// Not fatal: derived from the container limit when there is
			// one, else the settings that need it say so.
			if !quiet {
				if limit > 0 {
					fmt.Fprintf(stderr, "warning: %v; direct memory will be derived from the %s container limit\n", err, units.FormatBytes(limit))
				} else {
					fmt.Fprintf(stderr, "warning: %v; the write and read cache sizes will be left out\n", err)
				}
			}
			direct, source, err = 0, "", nil
		}
		if err != nil {
			return measured{}, err
		}
		guard, err := o.bench.guard(ctx, o.guardConf, nil)
		if err != nil {
			return measured{}, err
		}
		bo := o.bench.options(&o.dirs, guard, budget, maxBytes)
		bo.Progress = progressPrinter(stderr, quiet)
		prep, err := bookieagent.PrepareBench(ctx, bo)
		if err != nil {
			return measured{}, err
		}
		if !quiet {
			for _, d := range prep.Disks {
				where := d.Disk.BenchDir
				if d.Live {
					where += " (beside the live bookie in " + d.Disk.Dir + ")"
				}
				fmt.Fprintf(stderr, "%s disk %s: benchmarking in %s\n", d.Role, d.Disk.Dir, where)
			}
			for _, g := range prep.Guard.Disks {
				fmt.Fprintf(stderr, "%s disk %s: usage %.1f%%; the benchmark writes at most %s at a time, keeping it ≤ %.0f%%: %s\n",
					g.Role, g.Dir, 100*g.UsageAtStart, units.HumanBytes(float64(g.RoomAtStart)), 100*prep.Guard.Ceiling, prep.Guard.Rule)
			}
		}
		res, err := prep.Run(ctx)
		if err != nil {
			return measured{}, err
		}
		if !quiet {
			fmt.Fprintf(stderr, "benchmark done: %s written in %s; %.0f s measured per run, rounds %v\n", units.HumanBytes(res.BytesWritten),
				res.Elapsed.Round(100*time.Millisecond), res.Plan.MeasureSec, res.Plan.Rounds)
			for _, s := range res.Plan.Dropped {
				fmt.Fprintf(stderr, "left out to fit the budget: %s\n", s)
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(stderr, "warning: %s\n", w)
			}
		}
		in = res.Input(bookieagent.NodeFacts{CPUs: o.bench.cpus, CPUsSource: o.bench.cpusSource(cmd.Flags()), DirectMemoryBytes: direct,
			DirectMemorySource: source, HeapBytes: o.mem.heap, MemoryLimitBytes: limit, MemoryLimitSource: limitSrc})
	}
	if entrySize > 0 {
		in.EntrySizeBytes = entrySize
	}
	var saveErr error
	if save != nil {
		saveErr = save.Write(func(w io.Writer) error { return bookieagent.WriteInput(w, in) })
		if saveErr != nil {
			saveErr = fmt.Errorf("--save-input: %w", saveErr)
		}
	}
	return measured{in: in, saveErr: saveErr}, nil
}

// progressPrinter prints one line per finished point; on a terminal it
// also keeps a live status line with the rate and ETA.
func progressPrinter(w io.Writer, quiet bool) func(string, diskbench.ProgressEvent) {
	if quiet {
		return nil
	}
	line := cli.NewLine(w, true)
	last := ""
	return func(step string, ev diskbench.ProgressEvent) {
		if step != last {
			line.Println(step, true)
			last = step
		}
		switch {
		case ev.Phase == diskbench.PhaseDone && ev.Result != nil:
			r := ev.Result
			extra := ""
			switch {
			case r.AddLatency != nil && r.AddLatency.Count > 0:
				extra = fmt.Sprintf(", p99 add %s", diskbench.FormatNs(r.AddLatency.P99Ns))
				if io := r.JournalIO; io != nil && io.Groups > 0 {
					extra += fmt.Sprintf(", groups of %s", units.HumanBytes(io.MeanGroupBytes))
				}
			case r.CommitLatency != nil && r.CommitLatency.Count > 0:
				extra = fmt.Sprintf(", p99 commit %s", diskbench.FormatNs(r.CommitLatency.P99Ns))
			}
			if r.Workload == diskbench.WorkloadRandRead {
				extra = fmt.Sprintf(", %.0f IOPS", r.IOPS)
			}
			line.Println(fmt.Sprintf("  %s %s%s", ev.Label, units.HumanRate(r.BytesPerSec), extra), true)
		default:
			line.Draw(fmt.Sprintf("  %s %s %s, ETA %s", ev.Label, ev.Phase, units.HumanRate(ev.BytesPerSec), cli.Left(ev.Estimate-ev.Elapsed)))
		}
	}
}
