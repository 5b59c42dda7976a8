package mledger

import (
	"crypto/rand"

	"github.com/google/uuid"
)

// Offload attempt UUIDs written by tierkeeper are RFC 9562 version-8
// ("custom") UUIDs with a fixed 12-bit tag after the version nibble:
// xxxxxxxx-xxxx-874b-yxxx-xxxxxxxxxxxx (110 random bits). The broker's own
// offloader takes java.util.UUID.randomUUID(), always version 4, so a
// ledger's OffloadContext says who recorded its attempt without any field
// the broker does not write itself: brokers read the objects by the UUID's
// text (<uuid>-ledger-<id>), whatever its version.
const (
	attemptTagHi = 0x87 // version 8, tag 0x74b
	attemptTagLo = 0x4b
)

// NewAttemptUUID returns a fresh offload attempt UUID marked as
// tierkeeper's (OwnAttempt reports true for it).
func NewAttemptUUID() uuid.UUID {
	var u uuid.UUID
	if _, err := rand.Read(u[:]); err != nil {
		panic("mledger: crypto/rand: " + err.Error()) // never fails on supported platforms
	}
	u[6], u[7] = attemptTagHi, attemptTagLo
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u
}

// OwnAttempt reports whether attempt id was made by NewAttemptUUID, i.e.
// recorded by tierkeeper and not by the broker's own offloader (or by a
// tierkeeper version before these UUIDs, whose attempts look like the
// broker's).
func OwnAttempt(id uuid.UUID) bool {
	return id[6] == attemptTagHi && id[7] == attemptTagLo && id[8]&0xc0 == 0x80
}
