package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

type reportOptions struct {
	dirs       dirOptions
	output     string
	sampleFor  time.Duration
	interval   time.Duration
	thresholds thresholdFlags
}

func newReportCmd() *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report --journal-dir D... --ledger-dir D... [--output table|json]",
		Short: "One-shot capacity report of the bookie's mounts",
		Long: `report prints size, used, available and usage (1 - avail/size, as BookKeeper computes
it) of every mount holding a journal or ledger directory, against diskUsageWarnThreshold
(0.90) and diskUsageThreshold (0.95). With --sample-for it samples that long and
also prints growth and the time to the warn and read-only thresholds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	fs := cmd.Flags()
	o.dirs.addFlags(fs)
	fs.StringVarP(&o.output, "output", "o", "table", "table or json")
	fs.DurationVar(&o.sampleFor, "sample-for", 0, "sample for this long to fit growth (0: one sample)")
	fs.DurationVar(&o.interval, "interval", time.Second, "sampling interval with --sample-for")
	o.thresholds.addFlags(fs)
	return cmd
}

func (o *reportOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("--output %q: want table or json", o.output)
	}
	if err := o.dirs.validate(false); err != nil {
		return err
	}
	if o.sampleFor < 0 || (o.sampleFor > 0 && o.interval <= 0) {
		return fmt.Errorf("--sample-for and --interval must be positive")
	}
	if err := o.thresholds.validate(); err != nil {
		return err
	}
	s, err := bookieagent.NewSampler(bookieagent.SamplerOptions{Dirs: o.dirs.dirRoles(), Host: o.dirs.host(),
		Interval: o.interval, Window: max(o.sampleFor, o.interval), Threshold: o.thresholds.threshold, WarnThreshold: o.thresholds.warn, LWMThreshold: o.thresholds.lwm})
	if err != nil {
		return err
	}
	if err := s.SampleFor(ctx, o.sampleFor); err != nil {
		return err
	}
	r := s.Report()
	return cli.Print(cmd.OutOrStdout(), o.output == "json", r, func(w io.Writer) error { return writeReportTable(w, r) })
}

func writeReportTable(w io.Writer, r bookieagent.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MOUNT\tDEVICE\tDIRS\tSIZE\tUSED\tAVAIL\tUSAGE\tSTATE\tGROWTH\tTO WARN\tTO READ-ONLY")
	for _, m := range r.Mounts {
		var dirs []string
		for _, d := range m.Dirs {
			dirs = append(dirs, string(d.Role)+":"+d.Dir)
		}
		state := m.State()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%s\t%s\t%s\t%s\n", m.MountPoint, dash(m.Device), strings.Join(dirs, ","),
			units.HumanBytes(m.SizeBytes), units.HumanBytes(m.UsedBytes), units.HumanBytes(m.AvailBytes), m.Usage*100, state,
			rate(m.GrowthBytesPerSec), dur(m.GrowthBytesPerSec, m.SecondsToWarn), dur(m.GrowthBytesPerSec, m.SecondsToReadOnly))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "thresholds: lwm %.2f, warn %.2f, full %.2f (usage = 1 - avail/size; they apply to ledger dirs)\n", r.LWMThreshold, r.WarnThreshold, r.Threshold)
	fmt.Fprintf(w, "ledger mounts: %s used, %s before the full threshold\n", units.HumanBytes(r.LedgerUsedBytes), units.HumanBytes(r.LedgerHeadroomBytes))
	if r.ReadOnly {
		fmt.Fprintf(w, "bookie: READ-ONLY (every ledger dir is full); writable again after freeing %s (usage over all ledger filesystems below %.2f)", units.HumanBytes(r.WritableAgainBytes), r.LWMThreshold)
		if r.SecondsToWritable != nil {
			fmt.Fprintf(w, ", in %s at the current shrink rate", dur(r.LedgerGrowthBytesPerSec, r.SecondsToWritable))
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "bookie: first ledger dir reaches warn in %s, full in %s (minimum over ledger dirs: DbLedgerStorage pins each ledger to one dir)\n",
			dur(r.LedgerGrowthBytesPerSec, r.SecondsToWarn), dur(r.LedgerGrowthBytesPerSec, r.SecondsToReadOnly))
	}
	for _, e := range r.SampleErrors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func rate(p *float64) string {
	if p == nil {
		return "-"
	}
	return units.HumanRate(*p)
}

// dur renders a time to threshold: "-" without a growth fit (one sample),
// "never" when usage is not growing.
func dur(growth, p *float64) string {
	if growth == nil {
		return "-"
	}
	if p == nil {
		return "never"
	}
	d := time.Duration(*p * float64(time.Second))
	switch {
	case *p >= 2*86400:
		return fmt.Sprintf("%.1fd", *p/86400)
	case *p >= 7200:
		return fmt.Sprintf("%.1fh", *p/3600)
	default:
		return d.Round(time.Second).String()
	}
}
