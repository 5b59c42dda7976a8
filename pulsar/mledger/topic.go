package mledger

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
)

// TopicManagedLedgers returns the managed ledgers of a topic as Pulsar
// users name it ("persistent://t/ns/x", "t/ns/x", a short name "x" for
// public/default, a partition "x-partition-3"): the topic's own managed
// ledger when it has one, else, for a partitioned topic, the managed
// ledger of every partition that has one (sorted). A non-persistent
// topic is ErrInvalidName; a topic with neither, ErrNotFound naming the
// znode looked for.
func (s *Store) TopicManagedLedgers(ctx context.Context, topic string) ([]string, error) {
	tn, err := ParseTopic(topic)
	if err != nil {
		return nil, err
	}
	if !tn.Persistent() {
		return nil, fmt.Errorf("%w: %s: non-persistent topics have no managed ledger", ErrInvalidName, topic)
	}
	ml := tn.MLName()
	_, err = s.Get(ctx, ml)
	if err == nil || !errors.Is(err, ErrNotFound) {
		return []string{ml}, err
	}
	if tn.Partition >= 0 {
		return nil, fmt.Errorf("%w: topic %s (no node %s)", ErrNotFound, tn, s.zpath(Path(ml)))
	}
	all, err := s.ListNamespace(ctx, tn.NamespacePath())
	if err != nil {
		return nil, err
	}
	type part struct {
		name string
		n    int
	}
	var parts []part
	for _, name := range all {
		p, err := ParseMLName(name)
		if err == nil && p.Partition >= 0 && p.PartitionedTopic() == tn {
			parts = append(parts, part{name, p.Partition})
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: topic %s (no node %s and no partitions)", ErrNotFound, tn, s.zpath(Path(ml)))
	}
	slices.SortFunc(parts, func(a, b part) int { return a.n - b.n })
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.name
	}
	return out, nil
}

// TopicSnapshots reads the managed ledgers of a topic (TopicManagedLedgers:
// the topic's own, or each partition's, in partition order), one snapshot
// each: the one query for "which ledgers does this topic have".
func (s *Store) TopicSnapshots(ctx context.Context, topic string) ([]*Snapshot, error) {
	names, err := s.TopicManagedLedgers(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := make([]*Snapshot, 0, len(names))
	for _, name := range names {
		snap, err := s.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, snap)
	}
	return out, nil
}

// Ledger is one ledger of a managed ledger as the commands select and
// report it: its metadata entry, its state and its offload attempt.
type Ledger struct {
	// ML is the managed ledger the ledger belongs to.
	ML      string
	ID      int64
	Entries int64
	Size    int64
	State   LedgerState
	// Attempt is the offload attempt the metadata records, when
	// HasAttempt.
	Attempt    uuid.UUID
	HasAttempt bool
	// Complete: the attempt is committed (the objects are the ledger's).
	Complete bool
	Info     *mlproto.ManagedLedgerInfo_LedgerInfo
}

// Ledgers are the snapshot's ledgers in stored order, the last one open.
func (snap *Snapshot) Ledgers() []Ledger {
	infos := snap.Info.GetLedgerInfo()
	states := States(snap.Info)
	out := make([]Ledger, len(infos))
	for i, li := range infos {
		id, ok := AttemptUUID(li.GetOffloadContext())
		out[i] = Ledger{ML: snap.Name, ID: li.GetLedgerId(), Entries: li.GetEntries(), Size: li.GetSize(), State: states[i],
			Attempt: id, HasAttempt: ok, Complete: li.GetOffloadContext().GetComplete(), Info: li}
	}
	return out
}

// TopicLedgers is the one query for a topic's ledgers: the snapshots of
// its managed ledgers (TopicSnapshots) and all their ledgers, in partition
// then stored order.
func (s *Store) TopicLedgers(ctx context.Context, topic string) ([]*Snapshot, []Ledger, error) {
	snaps, err := s.TopicSnapshots(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	var out []Ledger
	for _, snap := range snaps {
		out = append(out, snap.Ledgers()...)
	}
	return snaps, out, nil
}
