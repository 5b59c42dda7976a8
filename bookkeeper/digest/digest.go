package digest

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // BookKeeper's MAC digest is HMAC-SHA1; not our choice.
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"strings"
	"sync"

	"github.com/tierkeeper/tierkeeper/internal/crc32c"
)

// HeaderSize is the size of the entry header covered by the digest:
// ledgerId, entryId, lastAddConfirmed and length, 8 bytes each.
const HeaderSize = 32

// Type is a BookKeeper digest type. The values are those of the
// LedgerMetadataFormat.DigestType protobuf enum; zero means unknown.
type Type int32

// Digest types, numbered as in BookKeeper's ledger metadata.
const (
	Unknown Type = 0
	CRC32   Type = 1
	HMAC    Type = 2
	CRC32C  Type = 3
	DUMMY   Type = 4
)

// String returns the type's name as BookKeeper's metadata spells it.
func (t Type) String() string {
	switch t {
	case CRC32:
		return "CRC32"
	case HMAC:
		return "HMAC"
	case CRC32C:
		return "CRC32C"
	case DUMMY:
		return "DUMMY"
	default:
		return fmt.Sprintf("Type(%d)", int32(t))
	}
}

// Size returns the number of digest bytes stored after the header, or -1 for
// an unknown type.
func (t Type) Size() int {
	switch t {
	case CRC32:
		return 8
	case HMAC:
		return sha1.Size
	case CRC32C:
		return 4
	case DUMMY:
		return 0
	default:
		return -1
	}
}

// Valid reports whether t is one of the four known types.
func (t Type) Valid() bool { return t.Size() >= 0 }

// ParseType parses a digest type name, case-insensitively: CRC32, CRC32C,
// HMAC (or MAC, the client API's name) and DUMMY.
func ParseType(s string) (Type, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "CRC32":
		return CRC32, nil
	case "CRC32C":
		return CRC32C, nil
	case "HMAC", "MAC":
		return HMAC, nil
	case "DUMMY":
		return DUMMY, nil
	}
	return Unknown, fmt.Errorf("%w: %q", ErrUnknownType, s)
}

// MacKey returns the HMAC key BookKeeper derives from a ledger password:
// SHA1("mac" || password).
func MacKey(password []byte) []byte { return sha1Of("mac", password) }

// MasterKey returns the ledger master key SHA1("ledger" || password) that
// BookKeeper sends with adds and fencing reads. The reader never sends it; it
// is here for tests that emulate writers.
func MasterKey(password []byte) []byte { return sha1Of("ledger", password) }

func sha1Of(prefix string, password []byte) []byte {
	h := sha1.New() //nolint:gosec
	h.Write([]byte(prefix))
	h.Write(password)
	return h.Sum(nil)
}

// Header is the 32-byte header at the start of every stored entry.
type Header struct {
	LedgerID int64
	EntryID  int64
	// LastAddConfirmed is the writer's LAC when it sent the entry (may be -1).
	LastAddConfirmed int64
	// Length is the cumulative ledger payload length including this entry.
	Length int64
}

// ParseHeader decodes the header at the start of entry without checking any
// digest.
func ParseHeader(entry []byte) (Header, error) {
	if len(entry) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes", ErrShortEntry, len(entry))
	}
	return Header{
		LedgerID:         int64(binary.BigEndian.Uint64(entry[0:])),
		EntryID:          int64(binary.BigEndian.Uint64(entry[8:])),
		LastAddConfirmed: int64(binary.BigEndian.Uint64(entry[16:])),
		Length:           int64(binary.BigEndian.Uint64(entry[24:])),
	}, nil
}

// Digester verifies and computes the digests of one digest type and
// password. It is safe for concurrent use.
type Digester struct {
	typ  Type
	size int
	key  []byte
	macs sync.Pool // of hash.Hash (HMAC only)
}

// New returns a Digester for type t. password is only used by HMAC (nil and
// empty are the same password).
func New(t Type, password []byte) (*Digester, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("%w: %d", ErrUnknownType, int32(t))
	}
	d := &Digester{typ: t, size: t.Size()}
	if t == HMAC {
		d.key = MacKey(password)
		d.macs.New = func() any { return hmac.New(sha1.New, d.key) }
	}
	return d, nil
}

// Type returns the digest type.
func (d *Digester) Type() Type { return d.typ }

// Size returns the number of digest bytes after the header.
func (d *Digester) Size() int { return d.size }

// sum appends the digest of header and payload to dst.
func (d *Digester) sum(dst, header, payload []byte) []byte {
	switch d.typ {
	case CRC32:
		c := crc32.ChecksumIEEE(header)
		c = crc32.Update(c, crc32.IEEETable, payload)
		return binary.BigEndian.AppendUint64(dst, uint64(c))
	case CRC32C:
		c := crc32.Update(0, crc32c.Table, header)
		c = crc32.Update(c, crc32c.Table, payload)
		return binary.BigEndian.AppendUint32(dst, c)
	case HMAC:
		m := d.macs.Get().(hash.Hash)
		m.Reset()
		m.Write(header)
		m.Write(payload)
		dst = m.Sum(dst)
		d.macs.Put(m)
		return dst
	default: // DUMMY
		return dst
	}
}

// Verify checks a stored entry as BookKeeper's reader does: the entry must
// hold the header and the digest, the digest must match, and the header must
// name ledgerID and entryID. It returns the header and the payload, which
// aliases entry.
func (d *Digester) Verify(ledgerID, entryID int64, entry []byte) (Header, []byte, error) {
	h, payload, _, err := d.VerifySum(ledgerID, entryID, entry)
	return h, payload, err
}

// PayloadSum is the CRC-32C of an entry's payload alone, known from
// checking a CRC32C digest.
type PayloadSum struct {
	CRC32C uint32
	OK     bool // false: not known (another digest type, or a payload under crc32c.MinCombine)
}

// VerifySum is Verify that also returns the payload's own CRC-32C when the
// digest check gives it for free: with CRC32C digests and a payload of at
// least crc32c.MinCombine bytes, the payload is hashed alone and the
// digest (the CRC of header and payload) is combined from that CRC and the
// header's, so the same pass over the bytes checks the digest and yields
// the payload's CRC (for the part checksum of the block the payload is
// copied into).
func (d *Digester) VerifySum(ledgerID, entryID int64, entry []byte) (Header, []byte, PayloadSum, error) {
	return d.verifySum(ledgerID, entryID, entry, 0, false)
}

// VerifyKnownSum is VerifySum for an entry whose own CRC-32C (of all its
// bytes: header, digest, payload) is already known, taken as the entry
// arrived (wire.ReadFrameSum): with CRC32C digests and a payload of at
// least crc32c.MinCombine bytes the digest is checked from that CRC and
// those of the header and the digest, without a pass over the payload.
// Otherwise entrySum is not used.
func (d *Digester) VerifyKnownSum(ledgerID, entryID int64, entry []byte, entrySum uint32) (Header, []byte, PayloadSum, error) {
	return d.verifySum(ledgerID, entryID, entry, entrySum, true)
}

func (d *Digester) verifySum(ledgerID, entryID int64, entry []byte, entrySum uint32, known bool) (Header, []byte, PayloadSum, error) {
	if len(entry) < HeaderSize+d.size {
		return Header{}, nil, PayloadSum{}, fmt.Errorf("%w: %d bytes, need at least %d for %s", ErrShortEntry, len(entry), HeaderSize+d.size, d.typ)
	}
	header := entry[:HeaderSize]
	stored := entry[HeaderSize : HeaderSize+d.size]
	payload := entry[HeaderSize+d.size:]
	var ps PayloadSum
	var ok bool
	if d.typ == CRC32C && len(payload) >= crc32c.MinCombine {
		if known {
			ps = PayloadSum{CRC32C: crc32c.Suffix(entrySum, crc32c.Checksum(entry[:HeaderSize+d.size]), int64(len(payload))), OK: true}
		} else {
			ps = PayloadSum{CRC32C: crc32c.Checksum(payload), OK: true}
		}
		ok = crc32c.Combine(crc32c.Checksum(header), ps.CRC32C, int64(len(payload))) == binary.BigEndian.Uint32(stored)
	} else {
		var buf [sha1.Size]byte
		ok = hmac.Equal(d.sum(buf[:0], header, payload), stored)
	}
	if !ok {
		return Header{}, nil, PayloadSum{}, fmt.Errorf("%w (%s, ledger %d entry %d)", ErrMismatch, d.typ, ledgerID, entryID)
	}
	h, _ := ParseHeader(entry)
	if h.LedgerID != ledgerID || h.EntryID != entryID {
		return Header{}, nil, PayloadSum{}, fmt.Errorf("%w: asked ledger %d entry %d, got ledger %d entry %d",
			ErrWrongEntry, ledgerID, entryID, h.LedgerID, h.EntryID)
	}
	return h, payload, ps, nil
}

// Seal builds a stored entry the way a BookKeeper writer does: header,
// digest, payload. The reader never needs it; tests and the fake bookie use
// it to produce entries.
func (d *Digester) Seal(h Header, payload []byte) []byte {
	out := make([]byte, HeaderSize, HeaderSize+d.size+len(payload))
	binary.BigEndian.PutUint64(out[0:], uint64(h.LedgerID))
	binary.BigEndian.PutUint64(out[8:], uint64(h.EntryID))
	binary.BigEndian.PutUint64(out[16:], uint64(h.LastAddConfirmed))
	binary.BigEndian.PutUint64(out[24:], uint64(h.Length))
	out = d.sum(out, out[:HeaderSize], payload)
	return append(out, payload...)
}
