package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
)

// This file is `offloader status TOPIC`: a topic's ledgers from the
// managed-ledger metadata (status.go has the command; offloader.InspectTopic
// reads them).

func (o *statusOptions) runTopic(cmd *cobra.Command, g *globalOptions, topic string) error {
	o.env.needBlob = o.env.store.path != ""
	e, err := openEnv(cmd, g, &o.env)
	if err != nil {
		return err
	}
	defer e.close()
	doc, err := offloader.InspectTopic(cmd.Context(), e.peers, topic)
	if err != nil {
		return e.peers.ZKFailed(err)
	}
	if err := printResult(cmd.OutOrStdout(), g, doc, func(w io.Writer) error { printStatus(w, doc); return nil }); err != nil {
		return err
	}
	if len(doc.Errors) > 0 {
		return fmt.Errorf("%d managed ledgers could not be read: %s", len(doc.Errors), doc.Errors[0].Error)
	}
	return nil
}

func printStatus(w io.Writer, doc *offloader.Inspection) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MANAGED LEDGER\tLEDGER\tSTATE\tENTRIES\tSIZE\tAGE\tREADS FROM\tBK\tUUID\tOBJECTS")
	for _, m := range doc.ManagedLedgers {
		for _, l := range m.Ledgers {
			age := "-"
			if l.AgeSeconds != nil {
				age = (time.Duration(*l.AgeSeconds) * time.Second).Round(time.Second).String()
			}
			id, objs := "-", "-"
			if l.Offload != nil && l.Offload.UUID != "" {
				id = l.Offload.UUID
			}
			if ob := l.Objects; ob != nil {
				switch {
				case ob.Error != "":
					objs = "error: " + ob.Error
				case ob.Data && ob.Index:
					objs = "data+index " + units.HumanBytes(ob.DataBytes)
				case ob.Data:
					objs = "data only (no index)"
				case ob.Index:
					objs = "index only (no data)"
				default:
					objs = "missing"
				}
				if ob.Elsewhere != "" {
					objs += " (recorded bucket " + ob.Elsewhere + ")"
				}
			}
			src := l.ReadsFrom
			if l.Source == offloader.SourceBroker {
				src += " [broker]"
			}
			bk := l.BookKeeper
			if bk == "" {
				bk = "-"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, l.LedgerID, l.State, l.Entries, units.HumanBytes(l.Size),
				age, src, bk, id, objs)
		}
		if m.BrokerError != "" {
			fmt.Fprintf(tw, "%s\t\t\t\t\t\tbroker view unavailable: %s\n", m.Name, m.BrokerError)
		}
	}
	tw.Flush()
	t := doc.Totals
	fmt.Fprintf(w, "%d managed ledgers, %d ledgers, %s: %s offloaded, %s only in BookKeeper\n", t.ManagedLedgers, t.Ledgers,
		units.HumanBytes(t.Bytes), units.HumanBytes(t.OffloadedBytes()), units.HumanBytes(t.BookKeeperOnlyBytes()))
}
