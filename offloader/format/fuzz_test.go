package format

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/allocs"
	"github.com/tierkeeper/tierkeeper/offloader/blob/memblob"
)

func FuzzParseIndex(f *testing.F) {
	good := unhex(f, goldenIndex)
	f.Add(good)
	f.Add(good[:40])
	v2 := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(v2, 0x3D1FB0BC)
	f.Add(v2)
	f.Add([]byte{0xDE, 0x47, 0xDE, 0x47})
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := ParseIndex(b)
		if err != nil {
			return
		}
		// Whatever parses must re-encode and parse back to the same index.
		out, err := ix.Marshal()
		if err != nil {
			t.Fatalf("parsed index does not marshal: %v", err)
		}
		ix2, err := ParseIndex(out)
		if err != nil {
			t.Fatalf("re-encoded index does not parse: %v", err)
		}
		if ix2.DataObjectLength != ix.DataObjectLength || len(ix2.Blocks) != len(ix.Blocks) || !proto.Equal(ix.Metadata, ix2.Metadata) {
			t.Fatalf("round trip changed the index")
		}
		for i := range ix.Blocks {
			if ix.Blocks[i] != ix2.Blocks[i] {
				t.Fatalf("round trip changed block %d", i)
			}
		}
	})
}

func FuzzDecodeBlock(f *testing.F) {
	data := unhex(f, goldenData)
	f.Add(data[:150])
	f.Add(data[150:])
	f.Add(data[:140])
	f.Fuzz(func(t *testing.T, b []byte) {
		var payload int
		records := 0
		h, err := DecodeBlock(b, func(id int64, p []byte) error {
			payload += len(p)
			records++
			return nil
		})
		if err != nil {
			return
		}
		if h.BlockLength != int64(len(b)) || records == 0 || BlockHeaderSize+records*RecordHeaderSize+payload > len(b) {
			t.Fatalf("accepted inconsistent block: header %+v, %d records, %d payload bytes, %d bytes", h, records, payload, len(b))
		}
	})
}

// FuzzReader feeds arbitrary data objects, described by a valid index, to
// the streaming reader: it must fail cleanly or return entries that the
// strict block decoder agrees with, and allocate no more than a small
// multiple of the object (payload copies, the read-ahead buffer, one GET).
func FuzzReader(f *testing.F) {
	data := unhex(f, goldenData)
	f.Add(data, uint16(150))
	f.Add(data[:200], uint16(150))
	f.Add(bytes.Repeat([]byte{0xFE}, 300), uint16(150))
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		ix := &Index{
			DataObjectLength: int64(len(data)),
			DataHeaderLength: BlockHeaderSize,
			Metadata:         goldenMetadata(),
			Blocks:           []IndexEntry{{0, 1, 0}, {1, 2, int64(split)}},
		}
		raw, err := ix.Marshal()
		if err != nil {
			return
		}
		store := memblob.New()
		id := uuid.New()
		store.SetObject(DataKey(id, 1), data, ObjectInfo{}.Metadata(RoleData))
		store.SetObject(IndexKey(id, 1), raw, ObjectInfo{}.Metadata(RoleIndex))
		r, err := Open(context.Background(), store, id, 1, &ReaderOptions{ReadAhead: 64})
		if err != nil {
			t.Fatalf("valid index refused: %v", err)
		}
		defer r.Close()
		var got [][]byte
		n := allocs.Bytes(1, func() { got, err = r.ReadEntries(context.Background(), 0, 1) })
		if bound := 16<<10 + 2*uint64(len(data)); n > bound {
			t.Fatalf("reading a %d-byte object allocated %d bytes, bound %d", len(data), n, bound)
		}
		if err != nil {
			if !errors.Is(err, ErrCorruptBlock) {
				t.Fatalf("bad object: %v, want ErrCorruptBlock", err)
			}
			return
		}
		// Both block headers were checked; where the strict decoder
		// accepts block 2, they must agree.
		if h, err := ParseBlockHeader(data[:BlockHeaderSize]); err != nil || h.FirstEntryID != 0 || h.BlockLength != int64(split) {
			t.Fatalf("reader accepted block 0 with header %+v (%v)", h, err)
		}
		var want [][]byte
		if _, err := DecodeBlock(data[split:], func(_ int64, p []byte) error { want = append(want, p); return nil }); err != nil {
			return
		}
		if len(got) != 2 || len(want) != 1 || !bytes.Equal(want[0], got[1]) {
			t.Fatalf("reader and decoder disagree on block 2")
		}
	})
}

// FuzzParseKey: an accepted key is exactly the key DataKey/IndexKey give
// for what it parsed to, and any key costs at most a short error.
func FuzzParseKey(f *testing.F) {
	id := uuid.MustParse("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	f.Add(DataKey(id, 0))
	f.Add(IndexKey(id, 42))
	f.Add("6BA7B810-9DAD-11D1-80B4-00C04FD430C8-ledger-1")
	f.Add(DataKey(id, 1) + "-index-index")
	f.Add(id.String() + "-ledger-01")
	f.Add(id.String() + "-ledger--1")
	f.Fuzz(func(t *testing.T, key string) {
		var (
			got    uuid.UUID
			ledger int64
			index  bool
			err    error
		)
		if n := allocs.Bytes(2, func() { got, ledger, index, err = ParseKey(key) }); n > 1024 {
			t.Fatalf("ParseKey(%d bytes) allocated %d bytes", len(key), n)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ParseKey error %v is not ErrInvalidKey", err)
			}
			return
		}
		want := DataKey(got, ledger)
		if index {
			want = IndexKey(got, ledger)
		}
		if want != key || ledger < 0 {
			t.Fatalf("ParseKey(%q) = %v, %d, %v; that names %q", key, got, ledger, index, want)
		}
	})
}

// FuzzCheckVersion: the verdict depends on the metadata, not on map order,
// and only "1" under the version key (any case) passes.
func FuzzCheckVersion(f *testing.F) {
	f.Add(MetaFormatVersion, "1", "role", "data")
	f.Add("S3ManagedLedgerOffloaderFormatVersion", "1", "s3managedledgeroffloaderFORMATversion", "2")
	f.Add(MetaFormatVersion, "2", "S3MANAGEDLEDGEROFFLOADERFORMATVERSION", "1")
	f.Add("x", "1", "", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		md := map[string]string{k1: v1, k2: v2}
		err := CheckVersion("k", md)
		for range 4 { // map order differs between calls
			if again := CheckVersion("k", md); (again == nil) != (err == nil) {
				t.Fatalf("CheckVersion(%v) = %v, then %v", md, err, again)
			}
		}
		if err != nil {
			if !errors.Is(err, ErrFormatVersion) {
				t.Fatalf("error %v is not ErrFormatVersion", err)
			}
			return
		}
		v, exact := md[MetaFormatVersion]
		if exact && v != FormatVersion {
			t.Fatalf("accepted %v", md)
		}
		for k, val := range md {
			if !exact && strings.EqualFold(k, MetaFormatVersion) && val != FormatVersion {
				t.Fatalf("accepted %v", md)
			}
		}
		if n := allocs.Bytes(2, func() { _ = CheckVersion("k", md) }); n > 1024 {
			t.Fatalf("CheckVersion allocated %d bytes", n)
		}
	})
}
