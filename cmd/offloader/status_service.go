package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
)

// watchService renders the status every o.watch until ctx ends: in place
// on a terminal (cut to its height), else each rendering after a
// separator; with -o json one compact document per line.
func (o *statusOptions) watchService(ctx context.Context, g *globalOptions, out io.Writer) error {
	tick := time.NewTicker(o.watch)
	defer tick.Stop()
	var screen *cli.Screen // in-place redraws on a terminal
	if !g.json() && cli.IsTerminal(out) {
		screen = cli.NewScreen(out)
	}
	rate := cli.RateWindow{Span: 30 * time.Second} // of the replica's offloaded bytes
	for {
		st, raw, err := offloader.FetchStatus(ctx, o.service, o.timeout)
		if ctx.Err() != nil {
			return nil
		}
		var b bytes.Buffer
		switch {
		case g.json() && err != nil:
			_ = writeJSONLine(&b, map[string]string{"at": time.Now().Format(time.RFC3339), "error": err.Error()})
		case g.json():
			if cerr := json.Compact(&b, raw); cerr != nil {
				return cerr
			}
			b.WriteByte('\n')
		case err != nil:
			fmt.Fprintf(&b, "%s  %v\n", time.Now().Format(time.TimeOnly), err)
		default:
			r, over := rate.Add(time.Now(), st.Done.OffloadedBytes)
			fmt.Fprintln(&b, watchProgress(st, r, over))
			names := 0
			if screen != nil {
				names = max(24, cli.TerminalWidth(out)/3)
			}
			if err := printServiceStatus(&b, st, o.all, names); err != nil {
				return err
			}
		}
		switch {
		case screen != nil:
			screen.Draw(b.String())
		case g.json():
			_, _ = out.Write(b.Bytes())
		default:
			fmt.Fprintf(out, "--- %s\n%s", time.Now().Format(time.TimeOnly), b.String())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// watchProgress is the watch's first line: the share of the policy's
// work done (offloaded / offloaded + lag), a bar, the replica's offload rate
// (bytes/s over the last span) and the time left at it.
func watchProgress(st *offloader.Status, rate float64, over time.Duration) string {
	t := st.Totals
	done, all := t.OffloadedBytes, t.OffloadedBytes+t.LagBytes
	if all <= 0 {
		done, all = 1, 1 // nothing for the policy to do: all done
	}
	return fmt.Sprintf("offloaded %s  lag %s  %s over %s  ETA %s",
		cli.Bar(done, all, 16), units.HumanBytes(t.LagBytes), units.HumanRate(rate), over.Round(time.Second), cli.ETA(float64(t.LagBytes), rate))
}

// printServiceStatus renders a service status for people. nameWidth > 0
// shortens topic and managed-ledger names in the tables to that many
// characters (the watch on a terminal, so the tables fit its width).
func printServiceStatus(w io.Writer, st *offloader.Status, all bool, nameWidth int) error {
	ready := "ready"
	if !st.Ready {
		ready = "NOT READY"
	}
	t := st.Totals
	fmt.Fprintf(w, "replica %s: %s, up %s, evaluated %s ago\n", st.Replica, ready,
		time.Since(st.StartedAt).Round(time.Second), time.Since(st.EvaluatedAt).Round(time.Second))
	if st.LastError != "" {
		fmt.Fprintf(w, "last error (%s): %s\n", st.LastErrorAt.Format(time.RFC3339), st.LastError)
	}
	fmt.Fprintf(w, "%d topics; on BookKeeper %s, offloaded %s; lag %s in %d ledgers (oldest %s); trim due %s\n",
		t.Topics, units.HumanBytes(t.BKBytes), units.HumanBytes(t.OffloadedBytes), units.HumanBytes(t.LagBytes), t.LagLedgers,
		(time.Duration(t.LagSeconds) * time.Second).String(), units.HumanBytes(t.TrimBytes))
	fmt.Fprintf(w, "ledgers: %d running, %d backing off, %d parked; last scan %d managed ledgers in %.1fs\n",
		t.RunningLedgers, t.BackoffLedgers, t.ParkedLedgers, st.Scan.ManagedLedgers, st.Scan.Seconds)
	if t.RefusedTopics > 0 {
		fmt.Fprintf(w, "%d topics left to the broker's own offloader (it offloads them itself; see NEXT)\n", t.RefusedTopics)
	}
	d := st.Done
	rate := "-"
	if d.CopySeconds > 0 {
		rate = units.DecimalRate(float64(d.CopiedBytes) / d.CopySeconds)
	}
	fmt.Fprintf(w, "done since start: %d ledgers offloaded (%s; copy %s), %d trimmed (%s freed on BookKeeper), %d failed runs\n\n",
		d.OffloadedLedgers, units.HumanBytes(d.OffloadedBytes), rate, d.TrimmedLedgers, units.HumanBytes(d.FreedBytes), d.FailedLedgers)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tRULE\tON BK\tOFFLOADED\tLAG\tLAG AGE\tNEXT\tLAST ERROR")
	for _, ts := range st.TopicsByLag(all) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cli.CutLeft(ts.Topic, nameWidth), ts.Rule, units.HumanBytes(ts.BKBytes),
			units.HumanBytes(ts.OffloadedBytes), units.HumanBytes(ts.LagBytes), (time.Duration(ts.LagSeconds) * time.Second).String(),
			ts.NextAction, ts.LastError)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Ledgers) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "MANAGED LEDGER\tLEDGER\tSTATE\tSTEP\tFAILURES\tNEXT TRY\tLAST ERROR")
		for _, l := range st.Ledgers {
			next := "-"
			if !l.NextTry.IsZero() {
				next = l.NextTry.Format(time.RFC3339)
			}
			step := l.LastStep
			if step == "" && l.State == scheduler.StateRunning {
				step = "waiting (its job is on another ledger)"
			}
			if l.StepTotalBytes > 0 {
				step = fmt.Sprintf("%s, %.0f%% of %s read", step, 100*float64(l.StepBytes)/float64(l.StepTotalBytes), units.HumanBytes(l.StepTotalBytes))
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\n", cli.CutLeft(l.ML, nameWidth), l.LedgerID, l.State, step, l.Failures, next, l.LastErr)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(st.LeasedElsewhere) > 0 {
		fmt.Fprintf(w, "\n%d topics leased by other replicas\n", len(st.LeasedElsewhere))
	}
	if s := st.Sweeper; s != nil {
		fmt.Fprintf(w, "\nlast sweep %s: %d objects, %d uploads; removed %s; kept %s", s.At.Format(time.RFC3339), s.Objects, s.Uploads,
			counts(s.Removed), counts(s.Kept))
		if s.Err != "" {
			fmt.Fprintf(w, "; error: %s", s.Err)
		}
		fmt.Fprintln(w)
	}
	if s := st.Scrub; s != nil {
		renderScrub(w, s)
	}
	printWarnings(w, st.Warnings)
	return nil
}

// renderScrub prints the scrubber's line of a service status, and every
// lost or pending ledger.
func renderScrub(w io.Writer, s *offloader.ScrubStatus) {
	switch {
	case s.By != "":
		fmt.Fprintf(w, "\nscrub: by replica %s", s.By)
	case s.Pass != nil:
		what := "last scrub pass"
		if s.Running {
			what = "scrub pass running"
		}
		fmt.Fprintf(w, "\n%s (from %s): %d ledgers in %d topics, %s", what, s.Pass.Started.Format(time.RFC3339), s.Pass.Ledgers,
			s.Pass.Topics, verdictCounts(s.Pass.Verdicts))
	default:
		fmt.Fprint(w, "\nscrub: no pass yet")
	}
	if s.Err != "" {
		fmt.Fprintf(w, "; error: %s", s.Err)
	}
	fmt.Fprintf(w, "; %d lost, %d pending\n", len(s.Lost), len(s.Pending))
	for _, f := range append(append([]scrub.Finding(nil), s.Lost...), s.Pending...) {
		fmt.Fprintf(w, "  %-13s %s ledger %d (%s): %s\n", f.Verdict, f.ML, f.LedgerID, f.UUID, f.Detail)
	}
}
