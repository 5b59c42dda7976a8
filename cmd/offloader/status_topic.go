package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	mlstatus "github.com/tierkeeper/tierkeeper/pulsar/mledger/status"
)

// This file is `offloader status TOPIC`: a topic's ledgers from the
// managed-ledger metadata (status.go has the command).

// statusDoc is the --output json document.
type statusDoc struct {
	Topic          string          `json:"topic"`
	ManagedLedgers []statusMLDoc   `json:"managedLedgers"`
	Totals         mlstatus.Totals `json:"totals"`
	ReadAt         time.Time       `json:"readAt"`
}

type statusMLDoc struct {
	mlstatus.ManagedLedger
	Ledgers []statusLedgerDoc `json:"ledgers"`
	// BrokerError says why the broker's view is missing (--admin-url).
	BrokerError string `json:"brokerError,omitempty"`
}

type statusLedgerDoc struct {
	mlstatus.Ledger
	// ReadsFrom is "bookkeeper" or "object store" (see Source).
	ReadsFrom string `json:"readsFrom"`
	// Source is "metadata" (from the stored state) or "broker"
	// (internalStats).
	Source string `json:"readsFromSource"`
	// BookKeeper is "present", "deleted" or "" (not checked: open ledger).
	BookKeeper string `json:"bookkeeper,omitempty"`
	// Objects is the attempt's objects in --store.
	Objects *objectsDoc `json:"objects,omitempty"`
}

type objectsDoc struct {
	Store     string `json:"store"`
	DataKey   string `json:"dataKey"`
	Data      bool   `json:"data"`
	DataBytes int64  `json:"dataBytes,omitempty"`
	Index     bool   `json:"index"`
	// Elsewhere is set when the recorded bucket is not the --store one.
	Elsewhere string `json:"recordedBucket,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (o *statusOptions) runTopic(cmd *cobra.Command, g *globalOptions, topic string) error {
	ctx := cmd.Context()
	o.env.needBlob = o.env.store.path != ""
	e, err := openEnv(cmd, g, &o.env)
	if err != nil {
		return err
	}
	defer e.close()
	rep, err := mlstatus.Read(ctx, e.ml, mlstatus.Selector{Topics: []string{topic}}, mlstatus.ReadOptions{Chroot: o.env.ml.chroot})
	if err != nil {
		return zkFailed(e.zk, err)
	}
	doc := statusDoc{Topic: topic, Totals: rep.Totals, ReadAt: rep.ReadAt, ManagedLedgers: []statusMLDoc{}}
	bucket := ""
	if e.store != nil {
		if d, err := pipeline.DriverForStore(e.storeCfg, "aws-s3"); err == nil {
			bucket = d.Bucket
		}
	}
	for _, m := range rep.ManagedLedgers {
		md := statusMLDoc{ManagedLedger: m}
		var stats *brokeradmin.InternalStats
		if e.admin != nil {
			if tn, err := mledger.ParseMLName(m.Name); err == nil {
				stats, err = e.admin.InternalStats(ctx, tn)
				if err != nil {
					md.BrokerError = err.Error()
				}
			}
		}
		for i, l := range m.Ledgers {
			ld := statusLedgerDoc{Ledger: l, ReadsFrom: "bookkeeper", Source: "metadata"}
			if l.Offload != nil && l.Offload.Complete {
				ld.ReadsFrom = "object store"
				if l.Offload.Bucket != "" {
					ld.ReadsFrom = "object store (bucket " + l.Offload.Bucket + ")"
				}
			}
			if stats != nil {
				if bl, ok := stats.Ledger(l.LedgerID); ok {
					ld.Source = "broker"
					if bl.Offloaded {
						ld.ReadsFrom = "object store"
					} else {
						ld.ReadsFrom = "bookkeeper"
					}
				}
			}
			if i < len(m.Ledgers)-1 || l.Offload != nil {
				_, err := e.ledgers.ReadLedger(ctx, l.LedgerID)
				switch {
				case err == nil:
					ld.BookKeeper = "present"
				case errors.Is(err, metadata.ErrNoSuchLedger):
					ld.BookKeeper = "deleted"
				default:
					return zkFailed(e.zk, err)
				}
			}
			if e.store != nil && l.Offload != nil && l.Offload.UUID != "" {
				ld.Objects = objectsOf(ctx, e.store, l, bucket)
			}
			md.Ledgers = append(md.Ledgers, ld)
		}
		doc.ManagedLedgers = append(doc.ManagedLedgers, md)
	}
	if err := printResult(cmd.OutOrStdout(), g, doc, func(w io.Writer) error { printStatus(w, doc); return nil }); err != nil {
		return err
	}
	if len(rep.Errors) > 0 {
		return fmt.Errorf("%d managed ledgers could not be read: %s", len(rep.Errors), rep.Errors[0].Error)
	}
	return nil
}

func objectsOf(ctx context.Context, st blob.Store, l mlstatus.Ledger, bucket string) *objectsDoc {
	id, err := uuid.Parse(l.Offload.UUID)
	if err != nil {
		return &objectsDoc{Store: st.Name(), Error: err.Error()}
	}
	od := &objectsDoc{Store: st.Name(), DataKey: format.DataKey(id, l.LedgerID)}
	if l.Offload.Bucket != "" && bucket != "" && l.Offload.Bucket != bucket {
		od.Elsewhere = l.Offload.Bucket
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if a, err := st.Head(ctx, od.DataKey); err == nil {
		od.Data, od.DataBytes = true, a.Size
	} else if !errors.Is(err, blob.ErrNotFound) {
		od.Error = err.Error()
	}
	if _, err := st.Head(ctx, format.IndexKey(id, l.LedgerID)); err == nil {
		od.Index = true
	} else if !errors.Is(err, blob.ErrNotFound) && od.Error == "" {
		od.Error = err.Error()
	}
	return od
}

func printStatus(w io.Writer, doc statusDoc) {
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
			if l.Source == "broker" {
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
