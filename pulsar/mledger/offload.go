package mledger

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
)

// UUIDToBits splits u like Java's UUID.getMostSignificantBits /
// getLeastSignificantBits: the two big-endian 8-byte halves as signed
// int64, as stored in OffloadContext.uidMsb/uidLsb.
func UUIDToBits(u uuid.UUID) (msb, lsb int64) {
	return int64(binary.BigEndian.Uint64(u[:8])), int64(binary.BigEndian.Uint64(u[8:]))
}

// UUIDFromBits is the inverse of UUIDToBits (Java's new UUID(msb, lsb)).
func UUIDFromBits(msb, lsb int64) uuid.UUID {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[:8], uint64(msb))
	binary.BigEndian.PutUint64(u[8:], uint64(lsb))
	return u
}

// StoredUUID returns the UUID recorded in oc as it is stored. Like the
// broker (offloadContext.hasUidMsb()), a context has one when uidMsb is
// set; a missing uidLsb reads as 0. For tierkeeper's prepared attempts it
// is the prepare UUID, which names no object (ObjectUUID): use AttemptUUID
// for anything that reads, writes or compares objects.
func StoredUUID(oc *mlproto.OffloadContext) (uuid.UUID, bool) {
	if oc == nil || oc.UidMsb == nil {
		return uuid.Nil, false
	}
	return UUIDFromBits(oc.GetUidMsb(), oc.GetUidLsb()), true
}

// AttemptUUID returns the offload attempt recorded in oc as its objects are
// named (<uuid>-ledger-<id>): ObjectUUID of the stored UUID. For a complete
// context, and for any attempt of the broker's own offloader, that is the
// stored UUID itself.
func AttemptUUID(oc *mlproto.OffloadContext) (uuid.UUID, bool) {
	id, ok := StoredUUID(oc)
	if !ok {
		return uuid.Nil, false
	}
	return ObjectUUID(id), true
}

// Driver describes the tiered-storage location recorded in a ledger's
// OffloadContext.driverMetadata; the broker reads the objects back from it.
type Driver struct {
	// Name is the driver as configured in the broker
	// (managedLedgerOffloadDriver): "aws-s3", "S3", "google-cloud-storage",
	// "azureblob", "aliyun-oss", "transient". Stored as
	// driverMetadata.name.
	Name string
	// Provider is the Java enum constant of the jcloud provider stored as
	// property managedLedgerOffloadDriver (JCloudBlobStoreProvider.toString(),
	// e.g. "AWS_S3"). Empty means derived from Name.
	Provider string
	// Bucket, Region and ServiceEndpoint are stored as properties of the
	// same names; unset values are stored as "".
	Bucket, Region, ServiceEndpoint string
}

// providerOf maps a driver name (case-insensitively, like
// JCloudBlobStoreProvider.getProvider) to its enum constant. "s3" (the
// generic S3 driver, PR #15710) is assumed to be the constant S3; its
// source was not read.
func providerOf(driver string) (string, bool) {
	switch strings.ToLower(driver) {
	case "aws-s3":
		return "AWS_S3", true
	case "google-cloud-storage":
		return "GOOGLE_CLOUD_STORAGE", true
	case "azureblob":
		return "AZURE_BLOB", true
	case "aliyun-oss":
		return "ALIYUN_OSS", true
	case "transient":
		return "TRANSIENT", true
	case "s3":
		return "S3", true
	}
	return "", false
}

// Driver metadata property keys (TieredStorageConfiguration).
const (
	PropDriver   = "managedLedgerOffloadDriver"
	PropBucket   = "bucket"
	PropRegion   = "region"
	PropEndpoint = "serviceEndpoint"
)

// Metadata returns the OffloadDriverMetadata Pulsar's jcloud offloader
// records: name = Name, properties exactly (in this order, from
// TieredStorageConfiguration.getOffloadDriverMetadata's ImmutableMap)
// managedLedgerOffloadDriver = provider enum constant, bucket, region,
// serviceEndpoint.
func (d Driver) Metadata() (*mlproto.OffloadDriverMetadata, error) {
	if d.Name == "" {
		return nil, fmt.Errorf("%w: empty driver name", ErrUnknownDriver)
	}
	prov := d.Provider
	if prov == "" {
		var ok bool
		if prov, ok = providerOf(d.Name); !ok {
			return nil, fmt.Errorf("%w: %q (set Driver.Provider to its Java enum constant)", ErrUnknownDriver, d.Name)
		}
	}
	kv := func(k, v string) *mlproto.KeyValue {
		return &mlproto.KeyValue{Key: proto.String(k), Value: proto.String(v)}
	}
	return &mlproto.OffloadDriverMetadata{
		Name: proto.String(d.Name),
		Properties: []*mlproto.KeyValue{
			kv(PropDriver, prov),
			kv(PropBucket, d.Bucket),
			kv(PropRegion, d.Region),
			kv(PropEndpoint, d.ServiceEndpoint),
		},
	}, nil
}

// DriverFromMetadata reads back the fields of a stored OffloadDriverMetadata
// (other properties are ignored).
func DriverFromMetadata(m *mlproto.OffloadDriverMetadata) Driver {
	d := Driver{Name: m.GetName()}
	for _, kv := range m.GetProperties() {
		switch kv.GetKey() {
		case PropDriver:
			d.Provider = kv.GetValue()
		case PropBucket:
			d.Bucket = kv.GetValue()
		case PropRegion:
			d.Region = kv.GetValue()
		case PropEndpoint:
			d.ServiceEndpoint = kv.GetValue()
		}
	}
	return d
}

// LedgerState summarizes where a ledger's data lives.
type LedgerState int

// Ledger states, from LedgerInfo and its OffloadContext.
const (
	// StateOpen is the last ledger of the managed ledger (the one being
	// written, or recovered and replaced on the next open); never offloaded.
	StateOpen LedgerState = iota
	// StateBookKeeper: closed, data only in BookKeeper.
	StateBookKeeper
	// StateOffloading: an attempt UUID is recorded but not complete (an
	// upload in progress, or a crashed attempt whose objects are orphans).
	StateOffloading
	// StateOffloaded: complete; the broker reads from the object store, and
	// the BookKeeper ledger still exists.
	StateOffloaded
	// StateOffloadedBKDeleted: complete and the BookKeeper ledger deleted.
	StateOffloadedBKDeleted
)

func (s LedgerState) String() string {
	switch s {
	case StateOpen:
		return "open"
	case StateBookKeeper:
		return "bookkeeper"
	case StateOffloading:
		return "offloading"
	case StateOffloaded:
		return "offloaded"
	case StateOffloadedBKDeleted:
		return "offloaded-bk-deleted"
	}
	return fmt.Sprintf("LedgerState(%d)", int(s))
}

// States returns the state of every ledger of info, in order.
func States(info *mlproto.ManagedLedgerInfo) []LedgerState {
	out := make([]LedgerState, len(info.GetLedgerInfo()))
	for i, li := range info.GetLedgerInfo() {
		oc := li.GetOffloadContext()
		_, hasUUID := AttemptUUID(oc)
		switch {
		case i == len(out)-1:
			out[i] = StateOpen
		case oc.GetComplete() && oc.GetBookkeeperDeleted():
			out[i] = StateOffloadedBKDeleted
		case oc.GetComplete():
			out[i] = StateOffloaded
		case hasUUID:
			out[i] = StateOffloading
		default:
			out[i] = StateBookKeeper
		}
	}
	return out
}

// PrepareOffload records attempt id and the driver location in the ledger's
// OffloadContext before any object is uploaded (docs/design.md invariant 4; the
// broker's prepareLedgerInfoForOffloaded), so a crash leaves objects the
// sweeper can find. It returns the UUID of a previous unfinished attempt
// that this one replaces (uuid.Nil if none): its objects are orphans for the
// caller to delete, as the broker does.
//
// Idempotent: recording the same id again writes nothing. It refuses the
// last ledger (ErrLastLedger), a ledger without entries (ErrEmptyLedger)
// and an offloaded one (ErrAlreadyOffloaded). complete, timestamp and
// bookkeeperDeleted are left as they are.
func (s *Store) PrepareOffload(ctx context.Context, ml string, ledgerID int64, id uuid.UUID, d Driver) (prev uuid.UUID, res *UpdateResult, err error) {
	e, err := PrepareEdit(ledgerID, id, d)
	if err != nil {
		return uuid.Nil, nil, err
	}
	res, err = s.UpdateOffloadContext(ctx, ml, ledgerID, e.Fn)
	if err != nil {
		return uuid.Nil, nil, err
	}
	return Superseded(res.Before, id), res, nil
}

// PrepareEdit is PrepareOffload as an edit of a batch
// (UpdateOffloadContexts); Superseded(LedgerUpdate.Before, id) is the
// attempt it replaces.
func PrepareEdit(ledgerID int64, id uuid.UUID, d Driver) (Edit, error) {
	md, err := d.Metadata()
	if err != nil {
		return Edit{}, err
	}
	if id == uuid.Nil {
		return Edit{}, fmt.Errorf("prepare offload: nil attempt UUID")
	}
	return Edit{LedgerID: ledgerID, Fn: func(oc *mlproto.OffloadContext, li *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
		if oc.GetComplete() {
			return false, ErrAlreadyOffloaded
		}
		if li.GetEntries() <= 0 || li.GetSize() <= 0 {
			return false, fmt.Errorf("%w (entries %d, size %d)", ErrEmptyLedger, li.GetEntries(), li.GetSize())
		}
		old, had := StoredUUID(oc)
		if had && old == id && proto.Equal(oc.GetDriverMetadata(), md) {
			return false, nil
		}
		oc.UidMsb, oc.UidLsb = bitsOf(id)
		oc.DriverMetadata = proto.Clone(md).(*mlproto.OffloadDriverMetadata)
		return true, nil
	}}, nil
}

// Superseded is the unfinished attempt a prepare of id replaced, given the
// context before it (uuid.Nil: none, or id itself), as its objects are
// named (AttemptUUID).
func Superseded(before *mlproto.OffloadContext, id uuid.UUID) uuid.UUID {
	if old, had := AttemptUUID(before); had && !SameAttempt(old, id) && !before.GetComplete() {
		return old
	}
	return uuid.Nil
}

// CompleteOffload marks the ledger offloaded by attempt id: complete = true
// and timestamp = now (ms), after the objects are written and verified
// (docs/design.md invariant 2); the same write replaces a prepare UUID by
// the objects' UUID (ObjectUUID). The stored attempt must be id, else
// ErrOffloadConflict (not retried, like the broker's OffloadConflict), and
// PrepareOffload must have recorded the driver metadata. Completing again
// with the same id writes nothing and keeps the first timestamp.
func (s *Store) CompleteOffload(ctx context.Context, ml string, ledgerID int64, id uuid.UUID) (*UpdateResult, error) {
	return s.UpdateOffloadContext(ctx, ml, ledgerID, s.CompleteEdit(ledgerID, id).Fn)
}

// CompleteEdit is CompleteOffload as an edit of a batch.
func (s *Store) CompleteEdit(ledgerID int64, id uuid.UUID) Edit {
	return Edit{LedgerID: ledgerID, Fn: func(oc *mlproto.OffloadContext, _ *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
		if err := checkAttempt(oc, id); err != nil {
			return false, err
		}
		if oc.GetComplete() {
			return false, nil
		}
		if oc.GetDriverMetadata() == nil {
			return false, fmt.Errorf("%w: no driver metadata recorded for attempt %s", ErrOffloadConflict, id)
		}
		oc.UidMsb, oc.UidLsb = bitsOf(ObjectUUID(id))
		oc.Complete = proto.Bool(true)
		oc.Timestamp = proto.Int64(s.opts.Now().UnixMilli())
		return true, nil
	}}
}

// MarkBookkeeperDeleted sets bookkeeperDeleted = true for a ledger offloaded
// by attempt id, to be committed before the BookKeeper ledger is deleted
// (docs/design.md invariant 5; the deletion lag is the caller's policy). It refuses
// a different attempt (ErrOffloadConflict) and an incomplete offload
// (ErrNotOffloaded); a second call writes nothing.
func (s *Store) MarkBookkeeperDeleted(ctx context.Context, ml string, ledgerID int64, id uuid.UUID) (*UpdateResult, error) {
	return s.UpdateOffloadContext(ctx, ml, ledgerID, MarkBookkeeperDeletedEdit(ledgerID, id).Fn)
}

// MarkBookkeeperDeletedEdit is MarkBookkeeperDeleted as an edit of a batch.
func MarkBookkeeperDeletedEdit(ledgerID int64, id uuid.UUID) Edit {
	return Edit{LedgerID: ledgerID, Fn: func(oc *mlproto.OffloadContext, _ *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
		if err := checkAttempt(oc, id); err != nil {
			return false, err
		}
		if !oc.GetComplete() {
			return false, ErrNotOffloaded
		}
		if oc.GetBookkeeperDeleted() {
			return false, nil
		}
		oc.BookkeeperDeleted = proto.Bool(true)
		return true, nil
	}}
}

// AbandonOffload undoes PrepareOffload of attempt id after an upload that
// left nothing in the store (or whose objects the caller removes once this
// write has landed): the ledger's OffloadContext becomes before again
// (nil: none at all), but only while attempt id is stored and not
// complete; otherwise nothing is written. It returns whether it wrote.
//
// An attempt named in before is never restored: the prepare of id replaced
// it and its writer deleted its objects (as PrepareOffload's caller does),
// so restoring it would let that attempt's own writer complete it with its
// objects gone. Its fields (uidMsb, uidLsb, driverMetadata, complete=false)
// are cleared and the rest of before kept (an emptied context is removed).
func (s *Store) AbandonOffload(ctx context.Context, ml string, ledgerID int64, id uuid.UUID, before *mlproto.OffloadContext) (bool, error) {
	res, err := s.UpdateOffloadContext(ctx, ml, ledgerID, AbandonEdit(ledgerID, id, before).Fn)
	if err != nil {
		return false, err
	}
	return res.Written, nil
}

// AbandonEdit is AbandonOffload as an edit of a batch.
func AbandonEdit(ledgerID int64, id uuid.UUID, before *mlproto.OffloadContext) Edit {
	return Edit{LedgerID: ledgerID, Fn: func(oc *mlproto.OffloadContext, _ *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
		if stored, ok := AttemptUUID(oc); !ok || !SameAttempt(stored, id) || oc.GetComplete() {
			return false, nil
		}
		proto.Reset(oc)
		if before != nil {
			proto.Merge(oc, before)
		}
		if _, named := AttemptUUID(oc); named || oc.UidLsb != nil || oc.DriverMetadata != nil {
			oc.UidMsb, oc.UidLsb, oc.DriverMetadata = nil, nil, nil
			if !oc.GetComplete() {
				oc.Complete = nil // the replaced attempt's state
			}
		}
		return true, nil
	}}
}

// bitsOf is UUIDToBits as the two optional fields of an OffloadContext.
func bitsOf(u uuid.UUID) (msb, lsb *int64) {
	m, l := UUIDToBits(u)
	return proto.Int64(m), proto.Int64(l)
}

func checkAttempt(oc *mlproto.OffloadContext, id uuid.UUID) error {
	stored, ok := AttemptUUID(oc)
	if !ok {
		return fmt.Errorf("%w: no attempt recorded, want %s", ErrOffloadConflict, id)
	}
	if !SameAttempt(stored, id) {
		return fmt.Errorf("%w: stored %s, want %s", ErrOffloadConflict, stored, id)
	}
	return nil
}
