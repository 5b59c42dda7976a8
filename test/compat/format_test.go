package compat

// Offload object format against Pulsar's own code:
//
//	(a) objects written by tierkeeper (offloader/format/upload) are read by
//	    Pulsar's jcloud offloader (readOffloaded → BlobStoreBackedReadHandleImpl),
//	    every entry byte-identical;
//	(b) objects written by Pulsar's offloader from a real BookKeeper ledger
//	    are read by tierkeeper's reader, every entry identical, and
//	    tierkeeper's encoder reproduces Pulsar's data object and index
//	    byte for byte from the same entries and metadata.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/format/upload"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

const formatBlock = 5 << 20 // the smallest block Pulsar accepts for S3

// formatStore returns a Go s3 store on a fresh bucket of the shared
// versitygw server.
func formatStore(t *testing.T) (*testenv.S3, string, blob.Store) {
	t.Helper()
	srv := testenv.StartS3(t)
	bucket := srv.NewBucket(t)
	return srv, bucket, s3test.Open(t, s3test.Config(srv, bucket))
}

// pulsarRead is the pulsar-read-offloaded result.
type pulsarRead struct {
	HandleLength     int64                 `json:"handleLength"`
	HandleClosed     bool                  `json:"handleClosed"`
	LastAddConfirmed int64                 `json:"lastAddConfirmed"`
	EntryCount       int64                 `json:"entryCount"`
	TotalBytes       int64                 `json:"totalBytes"`
	Entries          []testenv.EntryDigest `json:"entries"`
	Metadata         struct {
		State        string `json:"state"`
		Closed       bool   `json:"closed"`
		EnsembleSize int    `json:"ensembleSize"`
		WriteQuorum  int    `json:"writeQuorum"`
		AckQuorum    int    `json:"ackQuorum"`
		LastEntryID  int64  `json:"lastEntryId"`
		Length       int64  `json:"length"`
		DigestType   string `json:"digestType"`
		Ctime        int64  `json:"ctime"`
		Ensembles    []struct {
			FirstEntryID int64    `json:"firstEntryId"`
			Bookies      []string `json:"bookies"`
		} `json:"ensembles"`
		CustomMetadata map[string]string `json:"customMetadata"`
	} `json:"metadata"`
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// syntheticLedger builds payloads from sizes with a seeded generator.
func syntheticLedger(seed uint64, sizes []int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 5))
	out := make([][]byte, len(sizes))
	for i, n := range sizes {
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		out[i] = p
	}
	return out
}

// goMetadata is BK metadata for a synthetic closed ledger, as Pulsar's
// managed ledger creates them.
func goMetadata(l format.Ledger) *bkproto.LedgerMetadataFormat {
	md, err := format.IndexMetadata(&bkproto.LedgerMetadataFormat{
		QuorumSize: proto.Int32(2), AckQuorumSize: proto.Int32(2), EnsembleSize: proto.Int32(3),
		Length: proto.Int64(l.Length), LastEntryId: proto.Int64(l.LastEntryID),
		State:      bkproto.LedgerMetadataFormat_CLOSED.Enum(),
		DigestType: bkproto.LedgerMetadataFormat_CRC32C.Enum(), Password: []byte{},
		Ctime: proto.Int64(1700000000123),
		Segment: []*bkproto.LedgerMetadataFormat_Segment{
			{EnsembleMember: []string{"127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183"}, FirstEntryId: proto.Int64(0)},
			{EnsembleMember: []string{"127.0.0.1:3181", "127.0.0.1:3184", "127.0.0.1:3183"}, FirstEntryId: proto.Int64(l.LastEntryID/2 + 1)},
		},
		CustomMetadata: []*bkproto.LedgerMetadataFormatCMetadataMapEntry{
			{Key: proto.String("application"), Value: []byte("pulsar")},
			{Key: proto.String("component"), Value: []byte("managed-ledger")},
			{Key: proto.String("pulsar/managed-ledger"), Value: []byte("public/default/persistent/format-compat")},
		},
	})
	if err != nil {
		panic(err)
	}
	return md
}

type sliceSource struct {
	p    [][]byte
	next int
}

func (s *sliceSource) Next(context.Context) (int64, []byte, error) {
	if s.next == len(s.p) {
		return 0, nil, io.EOF
	}
	s.next++
	return int64(s.next - 1), s.p[s.next-1], nil
}

// TestFormatGoWritesPulsarReads: ledgers written by tierkeeper are read by
// Pulsar's readOffloaded, every entry identical.
func TestFormatGoWritesPulsarReads(t *testing.T) {
	srv, bucket, store := formatStore(t)
	java := sharedJava(t)
	ctx := t.Context()

	const fill = (formatBlock - format.BlockHeaderSize) / 4 // 4 records fill a block exactly
	repeat := func(n, size int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = size
		}
		return s
	}
	varied := func(seed uint64, n, maxSize int) []int {
		rng := rand.New(rand.NewPCG(seed, 9))
		s := make([]int, n)
		for i := range s {
			s[i] = rng.IntN(maxSize + 1)
		}
		return s
	}
	cases := []struct {
		name   string
		sizes  []int
		blocks int
	}{
		{"one entry", []int{1000}, 1},
		{"many small entries", varied(1, 60000, 200), 2},
		{"entries exactly fill a block", append(repeat(4, fill-format.RecordHeaderSize), 1000, 0, 77), 2},
		{"multi-block", varied(2, 200, 300<<10), 0},
		{"4 MiB entry", append(append(repeat(3, 512<<10), 4<<20), repeat(10, 1024)...), 2},
	}
	u, err := upload.New(store, &upload.Options{MaxBlockSize: formatBlock, PartsInFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			payloads := syntheticLedger(uint64(100+i), c.sizes)
			l := format.LedgerOf(int64(1000+i), payloads)
			req := upload.Request{UUID: uuid.New(), Ledger: l, Metadata: goMetadata(l), ManagedLedgerName: "public/default/persistent/format-compat"}
			res, err := u.Upload(ctx, req, &sliceSource{p: payloads})
			if err != nil {
				t.Fatal(err)
			}
			if err := upload.Verify(ctx, store, res, &upload.VerifyOptions{BlockHeaders: true}); err != nil {
				t.Fatal(err)
			}
			if c.blocks > 0 && res.Blocks != c.blocks {
				t.Fatalf("%d blocks, want %d", res.Blocks, c.blocks)
			}
			if c.blocks == 0 && res.Blocks < 3 {
				t.Fatalf("multi-block case has %d blocks", res.Blocks)
			}
			t.Logf("ledger %d: %d entries, %d bytes, %d blocks, multipart %v", l.ID, len(payloads), res.DataObjectLength, res.Blocks, res.Multipart)

			var pr pulsarRead
			args := append([]string{"--ledger", strconv.FormatInt(l.ID, 10), "--uuid", req.UUID.String()}, testenv.S3Args(srv, bucket)...)
			if err := java.RunJSON(ctx, &pr, "pulsar-read-offloaded", args...); err != nil {
				t.Fatal(err)
			}
			if !pr.HandleClosed || pr.HandleLength != l.Length || pr.LastAddConfirmed != l.LastEntryID || pr.EntryCount != int64(len(payloads)) {
				t.Fatalf("Pulsar's handle: closed %v length %d LAC %d entries %d; want true %d %d %d",
					pr.HandleClosed, pr.HandleLength, pr.LastAddConfirmed, pr.EntryCount, l.Length, l.LastEntryID, len(payloads))
			}
			md := pr.Metadata
			if md.State != "CLOSED" || md.EnsembleSize != 3 || md.WriteQuorum != 2 || md.AckQuorum != 2 || md.DigestType != "" && md.DigestType != "CRC32C" ||
				md.Ctime != 1700000000123 || len(md.Ensembles) != 2 || md.CustomMetadata["application"] != "pulsar" {
				t.Fatalf("Pulsar's view of the index metadata: %+v", md)
			}
			if len(pr.Entries) != len(payloads) {
				t.Fatalf("Pulsar read %d entries, want %d", len(pr.Entries), len(payloads))
			}
			for i, e := range pr.Entries {
				if e.EntryID != int64(i) || e.Length != len(payloads[i]) || e.SHA256 != sha256hex(payloads[i]) {
					t.Fatalf("entry %d: Pulsar read id %d, %d bytes, sha256 %s; wrote %d bytes, sha256 %s",
						i, e.EntryID, e.Length, e.SHA256, len(payloads[i]), sha256hex(payloads[i]))
				}
			}
		})
	}
}

// pulsarOffload is the pulsar-offload result.
type pulsarOffload struct {
	UUID        string `json:"uuid"`
	LastEntryID int64  `json:"lastEntryId"`
	Length      int64  `json:"length"`
}

func readObject(t *testing.T, store blob.Reader, key string) ([]byte, map[string]string) {
	t.Helper()
	rc, attrs, err := store.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b, attrs.Metadata
}

// TestFormatPulsarWritesGoReads: Pulsar's offloader writes real BookKeeper
// ledgers; tierkeeper reads every entry, and its encoder reproduces Pulsar's
// objects byte for byte.
func TestFormatPulsarWritesGoReads(t *testing.T) {
	srv, bucket, store := formatStore(t)
	java := sharedJava(t)
	bk := sharedBookies(t)
	ctx := t.Context()

	// The package's ledgers (every digest type, one with an ensemble change;
	// one block each) plus a two-block ledger of varied entries and a
	// four-block ledger of 1 MiB entries (padded blocks).
	ledgers := append([]testenv.WrittenLedger(nil), sharedLedgers(t).Ledgers...)
	ledgers = append(ledgers, java.WriteLedgers(t, bk, testenv.WriteLedgersOptions{Digests: []string{"CRC32C"}, Entries: 60, Seed: 501}).Ledgers...)
	ledgers = append(ledgers, java.WriteLedgers(t, bk, testenv.WriteLedgersOptions{Digests: []string{"CRC32C"}, BigMiB: 13, Seed: 777}).Ledgers...)

	mdStore := bkStore(t, bk)
	const mlName = "public/default/persistent/pulsar-wrote-this"
	for _, wl := range ledgers {
		name := fmt.Sprintf("ledger %d %s %d entries", wl.LedgerID, wl.DigestType, wl.EntryCount)
		if wl.EnsembleChange {
			name += " ensemble change"
		}
		t.Run(name, func(t *testing.T) {
			id := uuid.New()
			var po pulsarOffload
			args := append([]string{"--metadata-uri", bk.MetadataServiceURI(), "--ledger", strconv.FormatInt(wl.LedgerID, 10),
				"--uuid", id.String(), "--ml-name", mlName, "--max-block-size", strconv.Itoa(formatBlock)}, testenv.S3Args(srv, bucket)...)
			start := time.Now()
			if err := java.RunJSON(ctx, &po, "pulsar-offload", args...); err != nil {
				t.Fatal(err)
			}
			t.Logf("Pulsar offloaded ledger %d (%d bytes) in %v", wl.LedgerID, po.Length, time.Since(start).Round(time.Millisecond))

			// Go reads every entry.
			r, err := format.Open(ctx, store, id, wl.LedgerID, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.LastEntryID() != wl.LastEntryID || r.Length() != wl.Length {
				t.Fatalf("index says LAC %d length %d; BookKeeper says %d %d", r.LastEntryID(), r.Length(), wl.LastEntryID, wl.Length)
			}
			payloads, err := r.ReadEntries(ctx, 0, r.LastEntryID())
			if err != nil {
				t.Fatal(err)
			}
			if len(payloads) != len(wl.Entries) {
				t.Fatalf("read %d entries, BookKeeper has %d", len(payloads), len(wl.Entries))
			}
			for i, e := range wl.Entries {
				if e.Length != len(payloads[i]) || e.SHA256 != sha256hex(payloads[i]) {
					t.Fatalf("entry %d: read %d bytes sha256 %s; written %d bytes sha256 %s", i, len(payloads[i]), sha256hex(payloads[i]), e.Length, e.SHA256)
				}
			}
			if r.Requests() != 1 {
				t.Errorf("reading the whole ledger took %d ranged GETs", r.Requests())
			}

			// Byte for byte: Go's encoder on the same entries and metadata.
			data, dataMeta := readObject(t, store, format.DataKey(id, wl.LedgerID))
			ixRaw, ixMeta := readObject(t, store, format.IndexKey(id, wl.LedgerID))
			ix, err := format.ParseIndex(ixRaw)
			if err != nil {
				t.Fatalf("Pulsar's index: %v", err)
			}
			l := format.Ledger{ID: wl.LedgerID, LastEntryID: wl.LastEntryID, Length: wl.Length}
			goData, layout, err := format.Encode(l, format.EncoderOptions{MaxBlockSize: formatBlock}, payloads)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(goData, data) {
				t.Fatalf("Go's data object (%d bytes) differs from Pulsar's (%d bytes) at byte %d", len(goData), len(data), firstDiff(goData, data))
			}
			goIx, err := layout.Index(ix.Metadata).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(goIx, ixRaw) {
				t.Fatalf("Go's index differs from Pulsar's at byte %d\n go %x\npulsar %x", firstDiff(goIx, ixRaw), goIx, ixRaw)
			}
			// Go's index metadata, built from BookKeeper's own znode, equals
			// what Pulsar stored (custom metadata compared as a set: Java
			// writes it in HashMap order).
			bkmd, err := mdStore.ReadLedger(ctx, wl.LedgerID)
			if err != nil {
				t.Fatal(err)
			}
			// BookKeeper stores no ctime by default; its client (and so
			// Pulsar) reports the znode's creation time.
			bkProto := bkmd.Proto()
			bkProto.Ctime = proto.Int64(bkmd.Ctime)
			mine, err := format.IndexMetadata(bkProto)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(sortedCustom(mine), sortedCustom(ix.Metadata)) {
				t.Fatalf("index metadata from BookKeeper's znode:\n%v\nPulsar's:\n%v", mine, ix.Metadata)
			}
			// Object metadata as the broker writes it.
			for _, c := range []struct {
				md   map[string]string
				role string
			}{{dataMeta, "data"}, {ixMeta, "index"}} {
				if err := format.CheckVersion("pulsar object", c.md); err != nil {
					t.Fatal(err)
				}
				if c.md[format.MetaRole] != c.role || c.md[format.MetaManagedLedgerName] != mlName || c.md[format.MetaSoftwareVersion] == "" {
					t.Fatalf("Pulsar's %s object metadata: %v", c.role, c.md)
				}
			}
			t.Logf("identical: data %d bytes in %d blocks, index %d bytes; object metadata %v", len(data), len(ix.Blocks), len(ixRaw), dataMeta)
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func sortedCustom(md *bkproto.LedgerMetadataFormat) *bkproto.LedgerMetadataFormat {
	c := proto.Clone(md).(*bkproto.LedgerMetadataFormat)
	sort.Slice(c.CustomMetadata, func(i, j int) bool { return c.CustomMetadata[i].GetKey() < c.CustomMetadata[j].GetKey() })
	return c
}
