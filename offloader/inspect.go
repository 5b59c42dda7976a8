package offloader

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	mlstatus "github.com/tierkeeper/tierkeeper/pulsar/mledger/status"
)

// Inspection is a topic's ledgers (every partition of a partitioned
// topic): their offload state, where a broker reads each one, whether its
// BookKeeper copy exists and, with a store, whether the attempt's objects
// are there. Nothing is written.
type Inspection struct {
	Topic          string          `json:"topic"`
	ManagedLedgers []InspectedML   `json:"managedLedgers"`
	Totals         mlstatus.Totals `json:"totals"`
	ReadAt         time.Time       `json:"readAt"`
	// Errors are the managed ledgers that could not be read.
	Errors []mlstatus.Error `json:"-"`
}

// InspectedML is one managed ledger of an Inspection.
type InspectedML struct {
	mlstatus.ManagedLedger
	Ledgers []InspectedLedger `json:"ledgers"`
	// BrokerError says why the broker's view is missing (with an admin
	// client).
	BrokerError string `json:"brokerError,omitempty"`
}

// Where a broker reads a ledger (InspectedLedger.ReadsFrom, Source).
const (
	ReadsFromBookKeeper  = "bookkeeper"
	ReadsFromObjectStore = "object store"
	SourceMetadata       = "metadata"
	SourceBroker         = "broker"
)

// InspectedLedger is one ledger of an Inspection.
type InspectedLedger struct {
	mlstatus.Ledger
	// ReadsFrom is "bookkeeper" or "object store" (with the recorded
	// bucket, from the metadata).
	ReadsFrom string `json:"readsFrom"`
	// Source is "metadata" (from the stored state) or "broker"
	// (internalStats), which differs until the broker reloads the topic.
	Source string `json:"readsFromSource"`
	// BookKeeper is "present", "deleted" or "" (not checked: open ledger).
	BookKeeper string `json:"bookkeeper,omitempty"`
	// Objects is the attempt's objects in the store.
	Objects *LedgerObjects `json:"objects,omitempty"`
}

// LedgerObjects says whether an offload attempt's objects are in a store.
type LedgerObjects struct {
	Store     string `json:"store"`
	DataKey   string `json:"dataKey"`
	Data      bool   `json:"data"`
	DataBytes int64  `json:"dataBytes,omitempty"`
	Index     bool   `json:"index"`
	// Elsewhere is set when the recorded bucket is not the store's.
	Elsewhere string `json:"recordedBucket,omitempty"`
	Error     string `json:"error,omitempty"`
}

// objectsHeadTimeout bounds the two HEAD requests of one ledger's objects.
const objectsHeadTimeout = 30 * time.Second

// InspectTopic reads a topic's ledgers from the metadata and checks each
// one's BookKeeper copy (every ledger but an open last one), the broker's
// view (p.Admin) and the attempt's objects (p.Store). Managed ledgers that
// cannot be read are in Errors; an error reading the ledger metadata fails
// the whole inspection. A broker or store that does not answer is noted in
// the ledger's entry.
func InspectTopic(ctx context.Context, p *Peers, topic string) (*Inspection, error) {
	rep, err := mlstatus.Read(ctx, p.ML, mlstatus.Selector{Topics: []string{topic}}, mlstatus.ReadOptions{Chroot: p.cfg.MLChroot})
	if err != nil {
		return nil, err
	}
	in := &Inspection{Topic: topic, Totals: rep.Totals, ReadAt: rep.ReadAt, ManagedLedgers: []InspectedML{}, Errors: rep.Errors}
	bucket := ""
	if p.Store != nil {
		if d, err := p.Driver("aws-s3"); err == nil {
			bucket = d.Bucket
		}
	}
	for _, m := range rep.ManagedLedgers {
		md := InspectedML{ManagedLedger: m}
		var stats *brokeradmin.InternalStats
		if p.Admin != nil {
			if tn, err := mledger.ParseMLName(m.Name); err == nil {
				if stats, err = p.Admin.InternalStats(ctx, tn); err != nil {
					md.BrokerError = err.Error()
				}
			}
		}
		for i, l := range m.Ledgers {
			ld := InspectedLedger{Ledger: l, ReadsFrom: readsFrom(l), Source: SourceMetadata}
			if stats != nil {
				if bl, ok := stats.Ledger(l.LedgerID); ok {
					ld.Source, ld.ReadsFrom = SourceBroker, ReadsFromBookKeeper
					if bl.Offloaded {
						ld.ReadsFrom = ReadsFromObjectStore
					}
				}
			}
			if i < len(m.Ledgers)-1 || l.Offload != nil {
				_, err := p.Ledgers.ReadLedger(ctx, l.LedgerID)
				switch {
				case err == nil:
					ld.BookKeeper = "present"
				case errors.Is(err, metadata.ErrNoSuchLedger):
					ld.BookKeeper = "deleted"
				default:
					return nil, err
				}
			}
			if p.Store != nil && l.Offload != nil && l.Offload.UUID != "" {
				ld.Objects = objectsOf(ctx, p.Store, l, bucket)
			}
			md.Ledgers = append(md.Ledgers, ld)
		}
		in.ManagedLedgers = append(in.ManagedLedgers, md)
	}
	return in, nil
}

// readsFrom is where the stored state makes a broker read l.
func readsFrom(l mlstatus.Ledger) string {
	switch {
	case l.Offload == nil || !l.Offload.Complete:
		return ReadsFromBookKeeper
	case l.Offload.Bucket != "":
		return ReadsFromObjectStore + " (bucket " + l.Offload.Bucket + ")"
	}
	return ReadsFromObjectStore
}

// objectsOf HEADs the data and index objects of l's offload attempt in st
// (bucket: st's, to tell a recorded bucket elsewhere).
func objectsOf(ctx context.Context, st blob.Store, l mlstatus.Ledger, bucket string) *LedgerObjects {
	id, err := uuid.Parse(l.Offload.UUID)
	if err != nil {
		return &LedgerObjects{Store: st.Name(), Error: err.Error()}
	}
	od := &LedgerObjects{Store: st.Name(), DataKey: format.DataKey(id, l.LedgerID)}
	if l.Offload.Bucket != "" && bucket != "" && l.Offload.Bucket != bucket {
		od.Elsewhere = l.Offload.Bucket
	}
	ctx, cancel := context.WithTimeout(ctx, objectsHeadTimeout)
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
