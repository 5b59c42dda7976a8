package mledger

import (
	"crypto/rand"

	"github.com/google/uuid"
)

// Offload attempt UUIDs written by tierkeeper are RFC 9562 version-8
// ("custom") UUIDs with a 12-bit tag after the version nibble:
// xxxxxxxx-xxxx-87Tx-yxxx-xxxxxxxxxxxx (110 random bits). The broker's own
// offloader takes java.util.UUID.randomUUID(), always version 4, so a
// ledger's OffloadContext says who recorded its attempt without any field
// the broker does not write itself: brokers read the objects by the UUID's
// text (<uuid>-ledger-<id>), whatever its version.
//
// An attempt has two UUIDs that differ only in the tag: the prepare UUID
// (tag 0x74d) that the prepare records, and the object UUID (tag 0x74c)
// that names its objects and that the commit records in its place
// (ObjectUUID). No object is ever written under a prepare UUID, so a
// broker that loaded the managed ledger while the attempt was prepared,
// and later runs its own offloader on the ledger (an operator's
// pulsar-admin topics offload on a topic without offload policies, which
// the topic guard cannot refuse), removes nothing of ours with its
// cleanupOffloaded(prepare UUID) before its compare-and-set fails on the
// version the commit wrote (docs/design.md invariant 11). Attempts of
// tierkeeper versions before the split carry tag 0x74b and name their
// objects by the one UUID they record.
const (
	attemptTagHi   = 0x87 // version 8; the tag's first 4 bits 0x7
	tagLegacy      = 0x4b // 0x74b: one UUID for prepare and objects
	tagObjects     = 0x4c // 0x74c: the objects' (and the commit's) UUID
	tagPrepare     = 0x4d // 0x74d: the prepare's UUID, naming no object
	variantMask    = 0xc0
	variantRFC9562 = 0x80
)

// NewAttemptUUID returns the prepare UUID of a fresh offload attempt,
// marked as tierkeeper's (OwnAttempt reports true for it); its objects are
// named by ObjectUUID of it.
func NewAttemptUUID() uuid.UUID {
	var u uuid.UUID
	if _, err := rand.Read(u[:]); err != nil {
		panic("mledger: crypto/rand: " + err.Error()) // never fails on supported platforms
	}
	u[6], u[7] = attemptTagHi, tagPrepare
	u[8] = u[8]&^variantMask | variantRFC9562
	return u
}

// ObjectUUID returns the UUID that names the objects of the attempt id
// records: for a tierkeeper prepare UUID the same bits with the object
// tag; any other UUID (an object UUID, a broker's attempt, an attempt of
// an older tierkeeper) names its objects itself.
func ObjectUUID(id uuid.UUID) uuid.UUID {
	if ownTag(id) && id[7] == tagPrepare {
		id[7] = tagObjects
	}
	return id
}

// SameAttempt reports whether a and b are UUIDs of one attempt (equal, or
// its prepare and object UUIDs).
func SameAttempt(a, b uuid.UUID) bool { return ObjectUUID(a) == ObjectUUID(b) }

// OwnAttempt reports whether attempt id was made by tierkeeper
// (NewAttemptUUID, ObjectUUID, or an older version's tagged UUID) and not
// by the broker's own offloader (or by a tierkeeper version before tagged
// UUIDs, whose attempts look like the broker's).
func OwnAttempt(id uuid.UUID) bool {
	return ownTag(id) && (id[7] == tagLegacy || id[7] == tagObjects || id[7] == tagPrepare)
}

func ownTag(id uuid.UUID) bool {
	return id[6] == attemptTagHi && id[8]&variantMask == variantRFC9562
}
