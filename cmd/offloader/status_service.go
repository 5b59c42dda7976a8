package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
)

// fetchServiceStatus reads a running service's /status, bounded by timeout.
func fetchServiceStatus(ctx context.Context, base string, timeout time.Duration) (*offloader.Status, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := strings.TrimRight(base, "/") + "/status"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("--service %q: %w", base, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("GET %s: no answer within %s", u, timeout)
		}
		return nil, nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var st offloader.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, nil, fmt.Errorf("GET %s: not an offloader status document: %w", u, err)
	}
	return &st, body, nil
}

// printServiceStatus renders a service status for people.
func printServiceStatus(w io.Writer, st *offloader.Status, all bool) error {
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
	fmt.Fprintf(w, "ledgers: %d running, %d backing off, %d parked; last scan %d managed ledgers in %.1fs\n\n",
		t.RunningLedgers, t.BackoffLedgers, t.ParkedLedgers, st.Scan.ManagedLedgers, st.Scan.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tRULE\tON BK\tOFFLOADED\tLAG\tLAG AGE\tNEXT\tLAST ERROR")
	topics := append([]offloader.TopicStatus(nil), st.Topics...)
	sort.SliceStable(topics, func(i, j int) bool { return topics[i].LagBytes > topics[j].LagBytes })
	for _, ts := range topics {
		if !all && ts.LagBytes == 0 && ts.LastError == "" {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ts.Topic, ts.Rule, units.HumanBytes(ts.BKBytes),
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
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\n", l.ML, l.LedgerID, l.State, l.LastStep, l.Failures, next, l.LastErr)
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
	for _, wn := range st.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	return nil
}
