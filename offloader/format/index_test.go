package format

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

func TestParseIndexRejects(t *testing.T) {
	good := unhex(t, goldenIndex)
	metaLen := int(binary.BigEndian.Uint32(good[28:]))
	entries := 32 + metaLen
	mut := func(f func(b []byte) []byte) []byte {
		b := append([]byte(nil), good...)
		return f(b)
	}
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], v); return b }
	}
	put64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint64(b[off:], v); return b }
	}
	withMeta := func(f func(md *bkproto.LedgerMetadataFormat)) []byte {
		md := goldenMetadata()
		f(md)
		raw, err := proto.MarshalOptions{AllowPartial: true}.Marshal(md)
		if err != nil {
			t.Fatal(err)
		}
		b := append([]byte(nil), good[:32]...)
		binary.BigEndian.PutUint32(b[28:], uint32(len(raw)))
		b = append(b, raw...)
		b = append(b, good[entries:]...)
		binary.BigEndian.PutUint32(b[4:], uint32(len(b)))
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrCorruptIndex},
		{"short", good[:31], ErrCorruptIndex},
		{"truncated", good[:len(good)-1], ErrCorruptIndex},
		{"trailing byte", append(append([]byte(nil), good...), 0), ErrCorruptIndex},
		{"bad magic", mut(put32(0, 0xDEADBEEF)), ErrCorruptIndex},
		{"v2 magic", mut(put32(0, 0x3D1FB0BC)), ErrUnsupportedIndex},
		{"index length field", mut(put32(4, 167)), ErrCorruptIndex},
		{"header length 64", mut(put64(16, 64)), ErrCorruptIndex},
		{"negative count", mut(put32(24, 0xFFFFFFFF)), ErrCorruptIndex},
		{"huge count", mut(put32(24, 0x7FFFFFFF)), ErrCorruptIndex},
		{"huge meta length", mut(put32(28, 0x7FFFFFFF)), ErrCorruptIndex},
		{"object shorter than blocks", mut(put64(8, 200)), ErrCorruptIndex},
		{"first block not entry 0", mut(put64(entries, 1)), ErrCorruptIndex},
		{"first block not offset 0", mut(put64(entries+12, 5)), ErrCorruptIndex},
		{"part id", mut(put32(entries+8, 7)), ErrCorruptIndex},
		{"blocks out of order", mut(put64(entries+20, 0)), ErrCorruptIndex},
		{"block past last entry", mut(put64(entries+20, 2)), ErrCorruptIndex},
		{"block too small", mut(put64(entries+32, 10)), ErrCorruptIndex},
		{"metadata garbage", mut(func(b []byte) []byte { b[32] = 0xFF; b[33] = 0xFF; return b }), ErrCorruptIndex},
		{"state open", withMeta(func(md *bkproto.LedgerMetadataFormat) { md.State = bkproto.LedgerMetadataFormat_OPEN.Enum() }), ErrCorruptIndex},
		{"no length (required)", withMeta(func(md *bkproto.LedgerMetadataFormat) { md.Length = nil }), ErrCorruptIndex},
		{"no quorum (required)", withMeta(func(md *bkproto.LedgerMetadataFormat) { md.QuorumSize = nil }), ErrCorruptIndex},
		{"no last entry id", withMeta(func(md *bkproto.LedgerMetadataFormat) { md.LastEntryId = nil }), ErrCorruptIndex},
		{"segment without first entry (required)", withMeta(func(md *bkproto.LedgerMetadataFormat) { md.Segment[0].FirstEntryId = nil }), ErrCorruptIndex},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ix, err := ParseIndex(c.b)
			if !errors.Is(err, c.want) {
				t.Fatalf("ParseIndex = %+v, %v; want %v", ix, err, c.want)
			}
		})
	}
}

func TestIndexLookup(t *testing.T) {
	ix := &Index{
		DataObjectLength: 3000, DataHeaderLength: 128, Metadata: goldenMetadata(),
		Blocks: []IndexEntry{{0, 1, 0}, {10, 2, 1000}, {25, 3, 2000}},
	}
	ix.Metadata.LastEntryId = proto.Int64(40)
	for _, c := range []struct {
		id   int64
		want int
	}{{0, 0}, {9, 0}, {10, 1}, {24, 1}, {25, 2}, {40, 2}} {
		got, err := ix.Lookup(c.id)
		if err != nil || got != c.want {
			t.Errorf("Lookup(%d) = %d, %v; want %d", c.id, got, err, c.want)
		}
	}
	for _, id := range []int64{-1, 41} {
		if _, err := ix.Lookup(id); !errors.Is(err, ErrEntryRange) {
			t.Errorf("Lookup(%d) = %v, want ErrEntryRange", id, err)
		}
	}
	if s, e := ix.BlockRange(1); s != 1000 || e != 2000 {
		t.Errorf("BlockRange(1) = %d,%d", s, e)
	}
	if s, e := ix.BlockRange(2); s != 2000 || e != 3000 {
		t.Errorf("BlockRange(2) = %d,%d", s, e)
	}
}

func TestIndexMetadataFromBookKeeper(t *testing.T) {
	bk := goldenMetadata()
	bk.Password = []byte{}
	bk.CToken = proto.Int64(42)
	bk.AckQuorumSize = nil
	md, err := IndexMetadata(bk)
	if err != nil {
		t.Fatal(err)
	}
	if md.Password != nil || md.CToken != nil {
		t.Fatalf("password or cToken copied: %v", md)
	}
	if md.GetAckQuorumSize() != bk.GetQuorumSize() {
		t.Fatalf("ack quorum %d, want the write quorum %d", md.GetAckQuorumSize(), bk.GetQuorumSize())
	}
	want := goldenMetadata()
	want.AckQuorumSize = proto.Int32(2)
	if !proto.Equal(md, want) {
		t.Fatalf("IndexMetadata = %v\nwant %v", md, want)
	}
	// Pulsar sets ctime even when BookKeeper has none.
	bk.Ctime = nil
	md, _ = IndexMetadata(bk)
	if md.Ctime == nil || md.GetCtime() != 0 {
		t.Fatalf("ctime %v, want present and 0", md.Ctime)
	}
	for name, f := range map[string]func(*bkproto.LedgerMetadataFormat){
		"open":      func(m *bkproto.LedgerMetadataFormat) { m.State = bkproto.LedgerMetadataFormat_OPEN.Enum() },
		"empty":     func(m *bkproto.LedgerMetadataFormat) { m.LastEntryId = proto.Int64(-1) },
		"length 0":  func(m *bkproto.LedgerMetadataFormat) { m.Length = proto.Int64(0) },
		"no digest": func(m *bkproto.LedgerMetadataFormat) { m.DigestType = nil },
	} {
		m := goldenMetadata()
		f(m)
		if _, err := IndexMetadata(m); !errors.Is(err, ErrInvalidLedger) {
			t.Errorf("%s: %v, want ErrInvalidLedger", name, err)
		}
	}
}

func TestKeysAndMetadata(t *testing.T) {
	id := uuid.MustParse("3f1c0a2e-7b4d-4c1a-9e2f-0123456789ab")
	if k := DataKey(id, 12345); k != "3f1c0a2e-7b4d-4c1a-9e2f-0123456789ab-ledger-12345" {
		t.Fatalf("DataKey = %q", k)
	}
	if k := IndexKey(id, 0); k != "3f1c0a2e-7b4d-4c1a-9e2f-0123456789ab-ledger-0-index" {
		t.Fatalf("IndexKey = %q", k)
	}
	for _, c := range []struct {
		key   string
		ledg  int64
		index bool
	}{{DataKey(id, 7), 7, false}, {IndexKey(id, 9), 9, true}} {
		u, l, ix, err := ParseKey(c.key)
		if err != nil || u != id || l != c.ledg || ix != c.index {
			t.Errorf("ParseKey(%q) = %v %d %v %v", c.key, u, l, ix, err)
		}
	}
	for _, bad := range []string{"", "x-ledger-1", id.String() + "-ledger-", id.String() + "-ledger-01", id.String() + "-ledger--1",
		strings.ToUpper(id.String()) + "-ledger-1", id.String() + "-ledger-1-index-index", id.String()} {
		if _, _, _, err := ParseKey(bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
	md := ObjectInfo{SoftwareVersion: "4.0.8", SoftwareGitSha: "abc", ManagedLedgerName: "public/default/persistent/t1",
		ClusterName: "c1", Extra: map[string]string{"Extra-Key": "x", MetaFormatVersion: "2"}}.Metadata(RoleIndex)
	want := map[string]string{
		"s3managedledgeroffloadersoftwareversion": "4.0.8",
		"s3managedledgeroffloadersoftwaregitsha":  "abc",
		"role":                                    "index",
		"managedledgername":                       "public/default/persistent/t1",
		"pulsarclustername":                       "c1",
		"extra-key":                               "x",
		"s3managedledgeroffloaderformatversion":   "1",
	}
	if len(md) != len(want) {
		t.Fatalf("metadata %v", md)
	}
	for k, v := range want {
		if md[k] != v {
			t.Fatalf("metadata[%q] = %q, want %q (all: %v)", k, md[k], v, md)
		}
	}
	if err := CheckVersion("k", md); err != nil {
		t.Fatal(err)
	}
	if err := CheckVersion("k", map[string]string{"S3ManagedLedgerOffloaderFormatVersion": "1"}); err != nil {
		t.Fatalf("mixed-case key: %v", err)
	}
	for _, m := range []map[string]string{nil, {}, {MetaFormatVersion: "2"}, {MetaFormatVersion: ""}} {
		if err := CheckVersion("k", m); !errors.Is(err, ErrFormatVersion) {
			t.Errorf("CheckVersion(%v) = %v", m, err)
		}
	}
}

func TestDecodeBlockRejects(t *testing.T) {
	data := unhex(t, goldenData)
	b1 := data[:150]
	mut := func(off int, v byte) []byte {
		b := append([]byte(nil), b1...)
		b[off] = v
		return b
	}
	cases := map[string][]byte{
		"short":             b1[:20],
		"magic":             mut(0, 0),
		"header length":     mut(11, 64),
		"block length":      mut(19, 0x95),
		"record overrun":    mut(131, 0x40),
		"entry id":          mut(139, 1),
		"padding":           mut(145, 0),
		"last padding byte": mut(149, 0xFF),
		"no record":         append(append([]byte(nil), b1[:128]...), bytesOf(0xFE, 0xDC, 0xDE, 0xAD)[:4]...),
	}
	for name, b := range cases {
		if name == "no record" {
			binary.BigEndian.PutUint64(b[12:], uint64(len(b)))
		}
		if _, err := DecodeBlock(b, nil); !errors.Is(err, ErrCorruptBlock) {
			t.Errorf("%s: %v, want ErrCorruptBlock", name, err)
		}
	}
	if _, err := DecodeBlock(b1, nil); err != nil {
		t.Fatalf("golden block: %v", err)
	}
}

func bytesOf(b ...byte) []byte { return b }
