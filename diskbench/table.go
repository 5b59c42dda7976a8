package diskbench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// WriteTable renders rep as an aligned text table: one block per result,
// one line per latency kind (add, write, sync, commit, read), followed by
// the warnings. A bookkeeper-model journal point shows "bk if=N" (N
// entries in flight per journal) in the sync column.
func WriteTable(w io.Writer, rep *Report) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "diskbench  dir=%s  fs=%s", rep.Dir, rep.FSType)
	if rep.Device != "" {
		fmt.Fprintf(ew, "  device=%s", rep.Device)
	}
	fmt.Fprintf(ew, "  free=%s  written=%s\n\n", units.HumanBytes(rep.FreeBytes), units.HumanBytes(rep.BytesWritten))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\twriters\tdepth\tblock\tsync\tthroughput\tIOPS\tcv\top\tp50\tp90\tp99\tp99.9\tmax\t")
	var notes []string
	for i, r := range rep.Results {
		sync := "-"
		switch {
		case r.Model == JournalModelBookKeeper:
			sync = fmt.Sprintf("bk if=%d", r.InFlight)
		case r.SyncEvery > 0:
			sync = fmt.Sprintf("%dw", r.SyncEvery)
		case r.FlushEveryBytes > 0:
			sync = units.FormatBytes(r.FlushEveryBytes)
		}
		lats := []struct {
			name string
			l    *Latency
		}{{"add", r.AddLatency}, {"write", r.WriteLatency}, {"sync", r.SyncLatency}, {"commit", r.CommitLatency}, {"read", r.ReadLatency}}
		first := true
		for _, l := range lats {
			if l.l == nil {
				continue
			}
			if first {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t", r.Workload, dash(r.Writers), dash(r.Depth),
					units.FormatBytes(r.BlockSize), sync, units.HumanRate(r.BytesPerSec), r.IOPS, pct(r.StdevOverMean, len(r.SamplesBytesPerSec)))
				first = false
			} else {
				fmt.Fprint(tw, "\t\t\t\t\t\t\t\t")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", l.name, FormatNs(l.l.P50Ns), FormatNs(l.l.P90Ns),
				FormatNs(l.l.P99Ns), FormatNs(l.l.P999Ns), FormatNs(l.l.MaxNs))
		}
		for _, w := range r.Warnings {
			notes = append(notes, fmt.Sprintf("[%d] %s %s: %s", i+1, r.Workload, pointLabel(r), w))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, w := range rep.Warnings {
		notes = append(notes, "run: "+w)
	}
	if len(notes) > 0 {
		fmt.Fprintf(ew, "\nwarnings:\n  %s\n", strings.Join(notes, "\n  "))
	}
	return ew.err
}

func pointLabel(r Result) string {
	if r.Workload == WorkloadRandRead {
		return fmt.Sprintf("depth=%d bs=%s", r.Depth, units.FormatBytes(r.BlockSize))
	}
	return fmt.Sprintf("writers=%d bs=%s", r.Writers, units.FormatBytes(r.BlockSize))
}

func dash(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func pct(v float64, samples int) string {
	if samples < 2 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
