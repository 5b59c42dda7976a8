// Package status is the read model of the managed ledgers tierkeeper works
// on: per managed ledger (a persistent topic or one partition) its
// BookKeeper ledgers with entries, size, age and offload state, and totals
// by state. `offloader topics`, `offloader status` and the service's
// /status build it here and only render it; the JSON field names are the
// documented output of `offloader topics -o json`.
//
// Names resolves a Selector (everything, a namespace, or topics, where a
// partitioned topic means all its partitions) to managed-ledger names;
// Build turns mledger.GetMany results into a Report; Read does both.
package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Report is the state of a set of managed ledgers at ReadAt.
type Report struct {
	ManagedLedgers []ManagedLedger `json:"managedLedgers"`
	Totals         Totals          `json:"totals"`
	// States lists every ledger state, in lifecycle order.
	States []string `json:"states"`
	// Errors lists the managed ledgers that could not be read.
	Errors []Error   `json:"errors,omitempty"`
	ReadAt time.Time `json:"readAt"`
	_      struct{}  `json:"-"`
}

// ManagedLedger is one managed ledger as read.
type ManagedLedger struct {
	Name string `json:"name"`
	// Topic is the topic name (persistent://...), when Name decodes.
	Topic       string    `json:"topic,omitempty"`
	Path        string    `json:"path"`
	Version     int32     `json:"version"`
	Codec       string    `json:"codec"`
	StoredBytes int       `json:"storedBytes"`
	Modified    time.Time `json:"modified"`
	Terminated  bool      `json:"terminated,omitempty"`
	Ledgers     []Ledger  `json:"ledgers"`
}

// Ledger is one BookKeeper ledger of a managed ledger.
type Ledger struct {
	LedgerID  int64 `json:"ledgerId"`
	Entries   int64 `json:"entries"`
	Size      int64 `json:"size"`
	Timestamp int64 `json:"timestamp"`
	// AgeSeconds is the time since the ledger was closed (absent for the
	// open ledger).
	AgeSeconds *float64 `json:"ageSeconds,omitempty"`
	State      string   `json:"state"`
	Offload    *Offload `json:"offload,omitempty"`
}

// Offload is a ledger's OffloadContext.
type Offload struct {
	UUID              string `json:"uuid,omitempty"`
	Complete          bool   `json:"complete"`
	BookkeeperDeleted bool   `json:"bookkeeperDeleted"`
	Timestamp         int64  `json:"timestamp,omitempty"`
	Driver            string `json:"driver,omitempty"`
	Provider          string `json:"provider,omitempty"`
	Bucket            string `json:"bucket,omitempty"`
	Region            string `json:"region,omitempty"`
	ServiceEndpoint   string `json:"serviceEndpoint,omitempty"`
}

// Totals sum the managed ledgers read (errors excluded). The by-state maps
// hold every state, zero or not.
type Totals struct {
	ManagedLedgers int64            `json:"managedLedgers"`
	Ledgers        int64            `json:"ledgers"`
	Entries        int64            `json:"entries"`
	Bytes          int64            `json:"bytes"`
	BytesByState   map[string]int64 `json:"bytesByState"`
	LedgersByState map[string]int64 `json:"ledgersByState"`
}

// OffloadedBytes is the size of the ledgers whose data is in the object
// store (offloaded, with or without the BookKeeper copy).
func (t Totals) OffloadedBytes() int64 {
	return t.BytesByState[mledger.StateOffloaded.String()] + t.BytesByState[mledger.StateOffloadedBKDeleted.String()]
}

// BookKeeperOnlyBytes is the size of the ledgers whose data is only in
// BookKeeper (open, not offloaded, or an offload in progress).
func (t Totals) BookKeeperOnlyBytes() int64 {
	return t.BytesByState[mledger.StateBookKeeper.String()] + t.BytesByState[mledger.StateOffloading.String()] +
		t.BytesByState[mledger.StateOpen.String()]
}

// Error is a managed ledger that could not be read.
type Error struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// Summary sums one managed ledger's ledgers.
type Summary struct {
	Ledgers        int
	Entries        int64
	Bytes          int64
	OffloadedBytes int64
	// OldestAgeSeconds is the age of the oldest closed ledger; nil when
	// there is none.
	OldestAgeSeconds *float64
}

// Summary sums m's ledgers.
func (m ManagedLedger) Summary() Summary {
	s := Summary{Ledgers: len(m.Ledgers)}
	for _, l := range m.Ledgers {
		s.Entries += l.Entries
		s.Bytes += l.Size
		if l.State == mledger.StateOffloaded.String() || l.State == mledger.StateOffloadedBKDeleted.String() {
			s.OffloadedBytes += l.Size
		}
		if l.AgeSeconds != nil && (s.OldestAgeSeconds == nil || *l.AgeSeconds > *s.OldestAgeSeconds) {
			s.OldestAgeSeconds = l.AgeSeconds
		}
	}
	return s
}

// TopicOrName is the topic name, or the managed-ledger name when it does
// not decode.
func (m ManagedLedger) TopicOrName() string {
	if m.Topic != "" {
		return m.Topic
	}
	return m.Name
}

// Selector chooses managed ledgers. The zero value means all of them;
// Namespace and Topics are exclusive.
type Selector struct {
	// Namespace is tenant/ns (v2) or tenant/cluster/ns (v1).
	Namespace string
	// Topics are topic names; a partitioned topic means all its
	// partitions. Non-persistent topics have no managed ledger and are
	// refused.
	Topics []string
}

// ErrBadSelector is returned for a Selector that names both a namespace
// and topics, or a topic that cannot have a managed ledger.
var ErrBadSelector = errors.New("bad topic selection")

// Names resolves sel to managed-ledger names, sorted. A topic with neither
// a node of its own nor partitions is mledger.ErrNotFound.
func Names(ctx context.Context, store *mledger.Store, sel Selector) ([]string, error) {
	switch {
	case sel.Namespace != "" && len(sel.Topics) > 0:
		return nil, fmt.Errorf("%w: a namespace and topics are exclusive", ErrBadSelector)
	case sel.Namespace != "":
		return store.ListNamespace(ctx, sel.Namespace)
	case len(sel.Topics) == 0:
		return store.List(ctx)
	}
	var names []string
	for _, t := range sel.Topics {
		mls, err := store.TopicManagedLedgers(ctx, t)
		if errors.Is(err, mledger.ErrInvalidName) {
			return nil, fmt.Errorf("%w: %w", ErrBadSelector, err)
		}
		if errors.Is(err, mledger.ErrNotFound) {
			return nil, err
		}
		if err != nil && len(mls) == 0 {
			return nil, err
		}
		// A managed ledger that exists but cannot be read fails visibly
		// when read.
		names = append(names, mls...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// ReadOptions configure Read.
type ReadOptions struct {
	// Chroot is the metadata store's chroot, prefixed to the paths shown
	// (the Store applies it to its reads). Default: none.
	Chroot string
	// Now is the time ages are computed at. Default time.Now.
	Now func() time.Time
	// Progress, if set, is called with the managed ledgers read so far and
	// the total (never concurrently).
	Progress func(done, total int)
}

// Read resolves sel, reads every selected managed ledger and builds the
// report. Managed ledgers that cannot be read are in Report.Errors; the
// error is set when the selection fails, ctx ends or ZooKeeper becomes
// unavailable (see mledger.Store.GetMany).
func Read(ctx context.Context, store *mledger.Store, sel Selector, opts ReadOptions) (Report, error) {
	names, err := Names(ctx, store, sel)
	if err != nil {
		return Report{}, err
	}
	var progress func(int)
	if opts.Progress != nil {
		progress = func(done int) { opts.Progress(done, len(names)) }
	}
	results, err := store.GetMany(ctx, names, progress)
	if err != nil {
		return Report{}, err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	return Build(results, now(), opts.Chroot), nil
}

// Build turns GetMany results into a Report as of now; chroot is
// prefixed to the znode paths shown.
func Build(results []mledger.Result, now time.Time, chroot string) Report {
	r := Report{
		ManagedLedgers: []ManagedLedger{},
		ReadAt:         now.UTC(),
		Totals:         Totals{BytesByState: map[string]int64{}, LedgersByState: map[string]int64{}},
	}
	for s := mledger.StateOpen; s <= mledger.StateOffloadedBKDeleted; s++ {
		r.States = append(r.States, s.String())
		r.Totals.BytesByState[s.String()] = 0
		r.Totals.LedgersByState[s.String()] = 0
	}
	for _, res := range results {
		if res.Err != nil {
			r.Errors = append(r.Errors, Error{Name: res.Name, Error: res.Err.Error()})
			continue
		}
		snap := res.Snapshot
		m := ManagedLedger{
			Name: snap.Name, Path: strings.TrimRight(chroot, "/") + mledger.Path(snap.Name), Version: snap.Version,
			Codec: snap.Codec.String(), StoredBytes: snap.StoredBytes, Modified: snap.Modified.UTC(),
			Terminated: snap.Info.TerminatedPosition != nil, Ledgers: []Ledger{},
		}
		if tn, err := mledger.ParseMLName(snap.Name); err == nil {
			m.Topic = tn.String()
		}
		states := mledger.States(snap.Info)
		for i, li := range snap.Info.GetLedgerInfo() {
			l := Ledger{
				LedgerID: li.GetLedgerId(), Entries: li.GetEntries(), Size: li.GetSize(),
				Timestamp: li.GetTimestamp(), State: states[i].String(), Offload: offloadOf(li.GetOffloadContext()),
			}
			if ts := li.GetTimestamp(); ts > 0 {
				age := now.Sub(time.UnixMilli(ts)).Seconds()
				l.AgeSeconds = &age
			}
			m.Ledgers = append(m.Ledgers, l)
			r.Totals.Ledgers++
			r.Totals.Entries += li.GetEntries()
			r.Totals.Bytes += li.GetSize()
			r.Totals.BytesByState[l.State] += li.GetSize()
			r.Totals.LedgersByState[l.State]++
		}
		r.Totals.ManagedLedgers++
		r.ManagedLedgers = append(r.ManagedLedgers, m)
	}
	return r
}

func offloadOf(oc *mlproto.OffloadContext) *Offload {
	if oc == nil {
		return nil
	}
	o := &Offload{Complete: oc.GetComplete(), BookkeeperDeleted: oc.GetBookkeeperDeleted(), Timestamp: oc.GetTimestamp()}
	if id, ok := mledger.AttemptUUID(oc); ok {
		o.UUID = id.String()
	}
	if md := oc.GetDriverMetadata(); md != nil {
		d := mledger.DriverFromMetadata(md)
		o.Driver, o.Provider, o.Bucket, o.Region, o.ServiceEndpoint = d.Name, d.Provider, d.Bucket, d.Region, d.ServiceEndpoint
	}
	return o
}

// LedgerOwners returns a reader of every ledger the managed ledgers of
// store list, with its state and topic (TopicOrName), for views outside
// the offloader (the bookie agent's cluster view takes it as a function
// and so imports nothing of the offloader). The reader calls visit for
// each ledger and returns how many managed ledgers it read and, as
// "name: error", those it could not read.
func LedgerOwners(store *mledger.Store) func(ctx context.Context, visit func(ledger int64, state, topic string)) (int, []string, error) {
	return func(ctx context.Context, visit func(ledger int64, state, topic string)) (int, []string, error) {
		rep, err := Read(ctx, store, Selector{}, ReadOptions{})
		if err != nil {
			return 0, nil, err
		}
		for _, ml := range rep.ManagedLedgers {
			for _, l := range ml.Ledgers {
				visit(l.LedgerID, l.State, ml.TopicOrName())
			}
		}
		var errs []string
		for _, e := range rep.Errors {
			errs = append(errs, e.Name+": "+e.Error)
		}
		return len(rep.ManagedLedgers), errs, nil
	}
}
