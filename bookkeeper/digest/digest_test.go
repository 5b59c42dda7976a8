package digest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/tierkeeper/tierkeeper/internal/crc32c"
)

// Golden digests computed independently (Python zlib/hmac and a bitwise
// CRC-32C) over header(ledger 7, entry 3, lac 2, length 1000) + payload.
var golden = []struct {
	typ      Type
	password string
	digest   string
}{
	{CRC32, "", "00000000d841577c"},
	{CRC32C, "", "5a388051"},
	{HMAC, "secret", "84cf8391b6bb648114604388d630e6b988564230"},
	{HMAC, "", "0c34e5b67595bb43fbb45fea1055e84429bffe13"},
	{DUMMY, "", ""},
}

const goldenHeader = "00000000000000070000000000000003000000000000000200000000000003e8"

var goldenPayload = []byte("hello, bookkeeper")

func TestGoldenSealAndVerify(t *testing.T) {
	h := Header{LedgerID: 7, EntryID: 3, LastAddConfirmed: 2, Length: 1000}
	for _, g := range golden {
		t.Run(g.typ.String()+"/"+g.password, func(t *testing.T) {
			d, err := New(g.typ, []byte(g.password))
			if err != nil {
				t.Fatal(err)
			}
			entry := d.Seal(h, goldenPayload)
			want, _ := hex.DecodeString(goldenHeader + g.digest + hex.EncodeToString(goldenPayload))
			if !bytes.Equal(entry, want) {
				t.Fatalf("sealed entry\n got %x\nwant %x", entry, want)
			}
			gotH, payload, err := d.Verify(7, 3, entry)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if gotH != h || !bytes.Equal(payload, goldenPayload) {
				t.Fatalf("verify returned %+v %q", gotH, payload)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	h := Header{LedgerID: 7, EntryID: 3, LastAddConfirmed: 2, Length: 17}
	for _, typ := range []Type{CRC32, CRC32C, HMAC} {
		d, _ := New(typ, []byte("pw"))
		entry := d.Seal(h, goldenPayload)
		// Every single-bit flip in header, digest or payload is detected.
		for i := 0; i < len(entry); i++ {
			bad := bytes.Clone(entry)
			bad[i] ^= 0x10
			if _, _, err := d.Verify(7, 3, bad); !errors.Is(err, ErrMismatch) {
				t.Fatalf("%s: flip at byte %d: err = %v, want ErrMismatch", typ, i, err)
			}
		}
		if _, _, err := d.Verify(7, 4, entry); !errors.Is(err, ErrWrongEntry) {
			t.Fatalf("%s: wrong entry id: %v", typ, err)
		}
		if _, _, err := d.Verify(8, 3, entry); !errors.Is(err, ErrWrongEntry) {
			t.Fatalf("%s: wrong ledger id: %v", typ, err)
		}
		if _, _, err := d.Verify(7, 3, entry[:HeaderSize+typ.Size()-1]); !errors.Is(err, ErrShortEntry) {
			t.Fatalf("%s: short: %v", typ, err)
		}
	}
	// HMAC with another password fails.
	a, _ := New(HMAC, []byte("a"))
	b, _ := New(HMAC, []byte("b"))
	if _, _, err := b.Verify(7, 3, a.Seal(h, goldenPayload)); !errors.Is(err, ErrMismatch) {
		t.Fatalf("hmac wrong password: %v", err)
	}
	// DUMMY still checks the header.
	d, _ := New(DUMMY, nil)
	if _, _, err := d.Verify(7, 9, d.Seal(h, nil)); !errors.Is(err, ErrWrongEntry) {
		t.Fatalf("dummy wrong entry: %v", err)
	}
	if _, _, err := d.Verify(7, 3, make([]byte, 31)); !errors.Is(err, ErrShortEntry) {
		t.Fatalf("dummy short: %v", err)
	}
}

func TestTypes(t *testing.T) {
	for s, want := range map[string]Type{"crc32": CRC32, "CRC32C": CRC32C, "mac": HMAC, "HMAC": HMAC, " dummy ": DUMMY} {
		got, err := ParseType(s)
		if err != nil || got != want {
			t.Errorf("ParseType(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseType("sha256"); !errors.Is(err, ErrUnknownType) {
		t.Errorf("ParseType(sha256): %v", err)
	}
	if _, err := New(Type(9), nil); !errors.Is(err, ErrUnknownType) {
		t.Errorf("New(9): %v", err)
	}
	if Type(9).Valid() || Unknown.Valid() || !DUMMY.Valid() {
		t.Error("Valid")
	}
	// Master key for an empty password is SHA1("ledger") (BookKeeper's EMPTY_LEDGER_KEY).
	if got := hex.EncodeToString(MasterKey(nil)); got != "850bf1071c5e3d8c24235676f8816ae0cbe2f14f" {
		t.Fatalf("MasterKey(empty) = %s", got)
	}
}

func FuzzVerify(f *testing.F) {
	d, _ := New(CRC32C, nil)
	f.Add(int8(CRC32C), d.Seal(Header{LedgerID: 1, EntryID: 2, Length: 3}, []byte("abc")))
	f.Add(int8(HMAC), []byte{})
	f.Add(int8(CRC32), make([]byte, 40))
	f.Add(int8(DUMMY), make([]byte, 32))
	f.Fuzz(func(t *testing.T, typ int8, entry []byte) {
		d, err := New(Type(typ), []byte("pw"))
		if err != nil {
			return
		}
		h, payload, err := d.Verify(1, 2, entry)
		if err != nil {
			return
		}
		if h.LedgerID != 1 || h.EntryID != 2 || len(payload) != len(entry)-HeaderSize-d.Size() {
			t.Fatalf("accepted inconsistent entry: %+v, %d payload bytes of %d", h, len(payload), len(entry))
		}
		if !bytes.Equal(d.Seal(h, payload), entry) {
			t.Fatal("accepted entry does not re-seal to itself")
		}
	})
}

// TestVerifySumLargePayloads checks the combined path (CRC32C, payloads of
// at least crc32c.MinCombine bytes): a sealed entry verifies and gives its
// payload's own CRC-32C; a flipped bit anywhere (header, digest, payload)
// is refused; smaller payloads and other digest types give no sum. The
// same holds for VerifyKnownSum given the CRC-32C the bytes arrived with
// (the flipped ones hashed as they arrived), which small payloads and
// other digest types do not use.
func TestVerifySumLargePayloads(t *testing.T) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, n := range []int{crc32c.MinCombine - 1, crc32c.MinCombine, 1<<20 + 3} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i*31 + i>>8)
		}
		h := Header{LedgerID: 7, EntryID: 3, LastAddConfirmed: 2, Length: int64(n)}
		for _, typ := range []Type{CRC32C, CRC32, HMAC} {
			d, _ := New(typ, []byte("pw"))
			entry := d.Seal(h, payload)
			wantOK := typ == CRC32C && n >= crc32c.MinCombine
			verifiers := map[string]func(entry []byte) (Header, []byte, PayloadSum, error){
				"VerifySum": func(e []byte) (Header, []byte, PayloadSum, error) { return d.VerifySum(7, 3, e) },
				"VerifyKnownSum": func(e []byte) (Header, []byte, PayloadSum, error) {
					return d.VerifyKnownSum(7, 3, e, crc32c.Checksum(e))
				},
			}
			for name, verify := range verifiers {
				gotH, p, sum, err := verify(entry)
				if err != nil || gotH != h || !bytes.Equal(p, payload) {
					t.Fatalf("%s %s %d bytes: %+v, %d bytes, %v", name, typ, n, gotH, len(p), err)
				}
				if sum.OK != wantOK || (wantOK && sum.CRC32C != crc32.Checksum(payload, castagnoli)) {
					t.Fatalf("%s %s %d bytes: sum %+v, want ok=%v crc %08x", name, typ, n, sum, wantOK, crc32.Checksum(payload, castagnoli))
				}
				for _, i := range []int{0, 12, HeaderSize, HeaderSize + typ.Size(), len(entry) / 2, len(entry) - 1} {
					bad := bytes.Clone(entry)
					bad[i] ^= 0x01
					if _, _, _, err := verify(bad); !errors.Is(err, ErrMismatch) {
						t.Fatalf("%s %s %d bytes: flip at byte %d: err = %v, want ErrMismatch", name, typ, n, i, err)
					}
				}
			}
			if !wantOK {
				// The known sum is not used: a wrong one changes nothing.
				if _, _, _, err := d.VerifyKnownSum(7, 3, entry, 0); err != nil {
					t.Fatalf("%s %d bytes: a sum it must not use failed it: %v", typ, n, err)
				}
			}
		}
	}
}
