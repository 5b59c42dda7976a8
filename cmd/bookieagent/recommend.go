package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

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
}

func newRecommendCmd() *cobra.Command {
	o := &recommendOptions{}
	cmd := &cobra.Command{
		Use:   "recommend --journal-dir D... --ledger-dir D... [--max-direct-memory SIZE]",
		Short: "Benchmark the bookie's disks and print settings with their evidence",
		Long: `recommend runs a bounded diskbench sweep (default at most 60 s and 2 GiB written in
total) on every journal and ledger directory and prints a bookkeeper.conf fragment
(--format conf), an entry_location_rocksdb.conf fragment (rocksdb), Helm values for
the Pulsar chart (helm) or JSON. Each value is preceded by its rule and evidence.

A directory that already holds a bookie (a cookie in current/VERSION, journal or
entry-log files) is never written to: the benchmark runs in a scratch directory on
the same filesystem, or recommend refuses. Directory counts are marked "new or
re-formatted bookies only" and the live bookie's current values stay active.

Memory rules use the JVM's direct memory: --max-direct-memory, or the
-XX:MaxDirectMemorySize (else -Xmx) in $BOOKIE_MEM / $PULSAR_MEM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	fs := cmd.Flags()
	o.dirs.addFlags(fs)
	o.mem.addFlags(fs)
	o.bench.addFlags(fs)
	fs.StringVar(&o.format, "format", "conf", "output: conf, rocksdb, helm or json")
	fs.StringVar(&o.entrySize, "entry-size", "", "median entry size, if known (sets readBufferSizeBytes)")
	fs.StringVar(&o.input, "input", "", "skip the benchmark: read measurements from this JSON (as written by --save-input)")
	fs.StringVar(&o.saveInput, "save-input", "", "also write the measurements and node facts as JSON to this file")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

func (o *recommendOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	format, err := bookieagent.ParseFormat(o.format)
	if err != nil {
		return err
	}
	var entrySize int64
	if o.entrySize != "" {
		if entrySize, err = units.ParseSize(o.entrySize); err != nil {
			return fmt.Errorf("--entry-size: %w", err)
		}
	}
	// --save-input is opened before the benchmark: a path that cannot be
	// written must not cost a whole run.
	var save *cli.OutputFile
	if o.saveInput != "" {
		if save, err = cli.OpenOutput("--save-input", o.saveInput); err != nil {
			return err
		}
		defer save.Discard()
	}
	var in bookieagent.Input
	if o.input != "" {
		b, err := os.ReadFile(o.input)
		if err != nil {
			return fmt.Errorf("--input: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return fmt.Errorf("--input %s: %w", o.input, err)
		}
		if o.mem.maxDirect != "" {
			if in.DirectMemoryBytes, in.DirectMemorySource, err = o.mem.resolve(); err != nil {
				return err
			}
		}
	} else {
		if err := o.dirs.validate(true); err != nil {
			return err
		}
		budget, maxBytes, err := o.bench.parse()
		if err != nil {
			return err
		}
		direct, source, err := o.mem.resolve()
		if err != nil {
			return err
		}
		quiet := o.quiet || format == bookieagent.FormatJSON
		prep, err := bookieagent.PrepareBench(ctx, bookieagent.BenchOptions{
			JournalDirs: o.dirs.journalDirs, LedgerDirs: o.dirs.ledgerDirs,
			TimeBudget: budget, MaxBytes: maxBytes, CPUs: o.bench.cpus, Host: o.dirs.host(), RaiseGOMAXPROCS: true,
			Progress: progressPrinter(stderr, quiet),
		})
		if err != nil {
			return err
		}
		if !quiet {
			for _, d := range prep.Disks {
				where := d.Disk.BenchDir
				if d.Scratch {
					where += " (scratch: " + d.Disk.Dir + " holds a live bookie)"
				}
				fmt.Fprintf(stderr, "%s disk %s: benchmarking in %s\n", d.Role, d.Disk.Dir, where)
			}
			for _, s := range prep.Dropped {
				fmt.Fprintf(stderr, "left out to fit the budget: %s\n", s)
			}
		}
		res, err := prep.Run(ctx)
		if err != nil {
			return err
		}
		if !quiet {
			fmt.Fprintf(stderr, "benchmark done: %s written in %s\n", units.HumanBytes(res.BytesWritten), res.Elapsed.Round(100*time.Millisecond))
			for _, w := range res.Warnings {
				fmt.Fprintf(stderr, "warning: %s\n", w)
			}
		}
		in = bookieagent.Input{JournalDisks: res.JournalDisks, LedgerDisks: res.LedgerDisks, CPUs: o.bench.cpus,
			DirectMemoryBytes: direct, DirectMemorySource: source}
	}
	if entrySize > 0 {
		in.EntrySizeBytes = entrySize
	}
	// The measurements are saved before the rules run, so a recommendation
	// that fails (too little direct memory, say) can be replayed with
	// --input after fixing the flags.
	var saveErr error
	if save != nil {
		saveErr = save.Write(func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", " ")
			return enc.Encode(in)
		})
		if saveErr != nil {
			saveErr = fmt.Errorf("--save-input: %w", saveErr)
		}
	}
	rec, err := bookieagent.Recommend(in)
	if err != nil {
		return errors.Join(err, saveErr)
	}
	var out bytes.Buffer
	if err := bookieagent.Render(&out, rec, format); err != nil {
		return errors.Join(err, saveErr)
	}
	_, err = io.Copy(cmd.OutOrStdout(), &out)
	return errors.Join(err, saveErr)
}

// progressPrinter prints one line per finished point; on a terminal it
// also keeps a live status line with the rate and ETA.
func progressPrinter(w io.Writer, quiet bool) func(string, diskbench.ProgressEvent) {
	if quiet {
		return nil
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	last := ""
	return func(step string, ev diskbench.ProgressEvent) {
		if step != last {
			fmt.Fprintf(w, "%s\n", step)
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
			if tty {
				fmt.Fprint(w, "\r\033[K")
			}
			fmt.Fprintf(w, "  %s %s%s\n", ev.Label, units.HumanRate(r.BytesPerSec), extra)
		case tty:
			eta := max(0, ev.Estimate-ev.Elapsed)
			fmt.Fprintf(w, "\r\033[K  %s %s %s, ETA %s", ev.Label, ev.Phase, units.HumanRate(ev.BytesPerSec), eta.Round(time.Second))
		}
	}
}
