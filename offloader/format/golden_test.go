package format

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

// The golden bytes below were encoded by hand (struct packing and varints
// written out independently of this package) from the layouts in
// DataBlockHeaderImpl, BlockAwareSegmentInputStreamImpl and
// OffloadIndexBlockImpl.

// goldenData: entries "A" and "BC", max block size 150. Block 1 is 150 bytes
// (header, record of entry 0, then 9 padding bytes because entry 1's 14-byte
// record does not fit); block 2 is sized exactly: 12+2+128 = 142.
const goldenData = `
fbdbabcb 0000000000000080 0000000000000096 0000000000000000` + zeros100 + `
00000001 0000000000000000 41
fedcdead fedcdead fe
fbdbabcb 0000000000000080 000000000000008e 0000000000000001` + zeros100 + `
00000002 0000000000000001 4243`

const zeros100 = `
00000000000000000000000000000000000000000000000000
00000000000000000000000000000000000000000000000000
00000000000000000000000000000000000000000000000000
00000000000000000000000000000000000000000000000000`

// goldenIndex: magic, length 168, object 292 bytes, header 128, 2 blocks,
// 96 bytes of LedgerMetadataFormat, then (0,1,0) and (1,2,150).
const goldenIndex = `
de47de47 000000a8 0000000000000124 0000000000000080 00000002 00000060
08 02 10 03 18 03 20 01 28 03
32 32 0a 0e 3132372e302e302e313a33313831 0a 0e 3132372e302e302e313a33313832
      0a 0e 3132372e302e302e313a33313833 10 00
38 03 48 02 50 80d095ffbc31
5a 15 0a 0b 6170706c69636174696f6e 12 06 70756c736172
0000000000000000 00000001 0000000000000000
0000000000000001 00000002 0000000000000096`

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func goldenMetadata() *bkproto.LedgerMetadataFormat {
	return &bkproto.LedgerMetadataFormat{
		QuorumSize:   proto.Int32(2),
		EnsembleSize: proto.Int32(3),
		Length:       proto.Int64(3),
		LastEntryId:  proto.Int64(1),
		State:        bkproto.LedgerMetadataFormat_CLOSED.Enum(),
		Segment: []*bkproto.LedgerMetadataFormat_Segment{{
			EnsembleMember: []string{"127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183"},
			FirstEntryId:   proto.Int64(0),
		}},
		DigestType:    bkproto.LedgerMetadataFormat_CRC32C.Enum(),
		AckQuorumSize: proto.Int32(2),
		Ctime:         proto.Int64(1700000000000),
		CustomMetadata: []*bkproto.LedgerMetadataFormatCMetadataMapEntry{
			{Key: proto.String("application"), Value: []byte("pulsar")},
		},
	}
}

func TestGoldenDataObject(t *testing.T) {
	payloads := [][]byte{[]byte("A"), []byte("BC")}
	data, layout, err := Encode(LedgerOf(7, payloads), EncoderOptions{MaxBlockSize: 150}, payloads)
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, goldenData)
	if !bytes.Equal(data, want) {
		t.Fatalf("data object differs from golden bytes\n got %x\nwant %x", data, want)
	}
	if layout.DataObjectLength != 292 {
		t.Fatalf("data object length %d, want 292", layout.DataObjectLength)
	}
	wantBlocks := []IndexEntry{{0, 1, 0}, {1, 2, 150}}
	if len(layout.Blocks) != 2 || layout.Blocks[0] != wantBlocks[0] || layout.Blocks[1] != wantBlocks[1] {
		t.Fatalf("blocks %+v, want %+v", layout.Blocks, wantBlocks)
	}
}

func TestGoldenIndex(t *testing.T) {
	payloads := [][]byte{[]byte("A"), []byte("BC")}
	_, layout, err := Encode(LedgerOf(7, payloads), EncoderOptions{MaxBlockSize: 150}, payloads)
	if err != nil {
		t.Fatal(err)
	}
	got, err := layout.Index(goldenMetadata()).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, goldenIndex)
	if !bytes.Equal(got, want) {
		t.Fatalf("index differs from golden bytes\n got %x\nwant %x", got, want)
	}
	ix, err := ParseIndex(want)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(ix.Metadata, goldenMetadata()) {
		t.Fatalf("parsed metadata %v", ix.Metadata)
	}
	if ix.DataObjectLength != 292 || ix.DataHeaderLength != 128 || len(ix.Blocks) != 2 || ix.Blocks[1].Offset != 150 {
		t.Fatalf("parsed index %+v", ix)
	}
}
