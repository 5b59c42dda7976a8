package compat

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Managed-ledger metadata against Pulsar's own managed-ledger library
// (ml-write / ml-reopen of the Java tool, docs/compat.md): Go reads what
// Pulsar wrote, in every ManagedLedgerInfo compression, and Pulsar reopens
// what Go rewrote.

// javaLedger is a LedgerInfo as the Java tool prints it.
type javaLedger struct {
	LedgerID  int64  `json:"ledgerId"`
	Entries   *int64 `json:"entries"`
	Size      *int64 `json:"size"`
	Timestamp *int64 `json:"timestamp"`
	Offload   *struct {
		UUID              string            `json:"uuid"`
		Complete          bool              `json:"complete"`
		BookkeeperDeleted bool              `json:"bookkeeperDeleted"`
		Timestamp         int64             `json:"timestamp"`
		DriverName        string            `json:"driverName"`
		DriverMetadata    map[string]string `json:"driverMetadata"`
	} `json:"offloadContext"`
}

// javaStored is Pulsar's parse of the stored node (getManagedLedgerInfo).
type javaStored struct {
	Version int64 `json:"version"`
	Ledgers []struct {
		LedgerID             int64   `json:"ledgerId"`
		Entries              int64   `json:"entries"`
		Size                 int64   `json:"size"`
		IsOffloaded          bool    `json:"isOffloaded"`
		OffloadedContextUUID *string `json:"offloadedContextUuid"`
	} `json:"ledgers"`
	Cursors []string `json:"cursors"`
}

type javaEntry struct {
	LedgerID int64  `json:"ledgerId"`
	EntryID  int64  `json:"entryId"`
	Length   int    `json:"length"`
	SHA256   string `json:"sha256"`
}

type mlWriteResult struct {
	Name    string       `json:"name"`
	Entries []javaEntry  `json:"entries"`
	Ledgers []javaLedger `json:"ledgers"`
	Stored  javaStored   `json:"stored"`
}

type mlReopenResult struct {
	StoredBeforeOpen javaStored   `json:"storedBeforeOpen"`
	Ledgers          []javaLedger `json:"ledgers"`
	StoredAfterClose javaStored   `json:"storedAfterClose"`
	ReadEntries      []javaEntry  `json:"readEntries"`
	ReadError        string       `json:"readError"`
}

func mlStore(t *testing.T) (*mledger.Store, *zk.Conn) {
	t.Helper()
	c := sharedZK(t).Session(t, tkzk.Options{SessionTimeout: 10 * time.Second})
	return mledger.New(c, nil), c.Conn
}

// mlWrite has Pulsar's managed-ledger library write 25 entries, 10 per
// ledger (so ledgers roll over), with a durable cursor.
func mlWrite(t *testing.T, ctx context.Context, name, compression string) mlWriteResult {
	t.Helper()
	bk := sharedBookies(t)
	args := []string{"--zk", sharedZK(t).Addr, "--metadata-uri", bk.MetadataServiceURI(), "--name", name,
		"--entries", "25", "--entries-per-ledger", "10", "--cursor", "sub-1"}
	if compression != "" {
		args = append(args, "--ml-compression", compression)
	}
	var res mlWriteResult
	if err := sharedJava(t).RunJSON(ctx, &res, "ml-write", args...); err != nil {
		t.Fatal(err)
	}
	if len(res.Stored.Ledgers) < 3 || len(res.Entries) != 25 {
		t.Fatalf("ml-write made %d ledgers, %d entries: %+v", len(res.Stored.Ledgers), len(res.Entries), res)
	}
	return res
}

// Go lists the managed ledger Pulsar wrote and decodes its metadata, in each
// compression Pulsar offers, to the ledgers Pulsar itself parses.
func TestMLMetaReadsPulsarWrittenInfo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	store, _ := mlStore(t)
	for _, comp := range []string{"", "LZ4", "ZLIB", "ZSTD", "SNAPPY"} {
		codecName := comp
		if codecName == "" {
			codecName = "NONE"
		}
		t.Run(codecName, func(t *testing.T) {
			name := uniqueMLName(t)
			res := mlWrite(t, ctx, name, comp)

			names, err := store.ListNamespace(ctx, "tierkeeper/compat")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(names, name) {
				t.Fatalf("%s not listed in %q", name, names)
			}
			for _, n := range names {
				if n == name+"/sub-1" {
					t.Fatalf("cursor listed as a managed ledger")
				}
			}
			snap, err := store.Get(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Codec.String() != codecName {
				t.Errorf("stored codec %s, want %s", snap.Codec, codecName)
			}
			got := snap.Info.GetLedgerInfo()
			if len(got) != len(res.Stored.Ledgers) {
				t.Fatalf("Go decodes %d ledgers, Pulsar %d", len(got), len(res.Stored.Ledgers))
			}
			for i, jl := range res.Stored.Ledgers {
				gl := got[i]
				if gl.GetLedgerId() != jl.LedgerID || gl.GetEntries() != jl.Entries || gl.GetSize() != jl.Size {
					t.Errorf("ledger %d: Go {id %d entries %d size %d}, Pulsar %+v", i, gl.GetLedgerId(), gl.GetEntries(), gl.GetSize(), jl)
				}
			}
			// The entries Pulsar wrote are spread over those ledgers.
			perLedger := map[int64]int64{}
			for _, e := range res.Entries {
				perLedger[e.LedgerID]++
			}
			for _, gl := range got[:len(got)-1] {
				if gl.GetEntries() != perLedger[gl.GetLedgerId()] {
					t.Errorf("ledger %d: %d entries stored, %d written", gl.GetLedgerId(), gl.GetEntries(), perLedger[gl.GetLedgerId()])
				}
			}
			t.Logf("%s: %d ledgers, %d stored bytes (%s)", name, len(got), snap.StoredBytes, snap.Codec)
		})
	}
}

// After Go's compare-and-set update of one (non-last) ledger's
// OffloadContext, Pulsar reopens the managed ledger, sees every ledger, reads
// every entry, and sees the offload context Go wrote, before and after its
// own rewrite of the node.
func TestMLMetaPulsarReopensAfterGoUpdate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	store, conn := mlStore(t)
	name := uniqueMLName(t)
	res := mlWrite(t, ctx, name, "ZSTD") // Go rewrites it plain; Pulsar must not mind
	bk := sharedBookies(t)
	reopen := func(extra ...string) mlReopenResult {
		t.Helper()
		var r mlReopenResult
		args := append([]string{"--zk", sharedZK(t).Addr, "--metadata-uri", bk.MetadataServiceURI(), "--name", name}, extra...)
		if err := sharedJava(t).RunJSON(ctx, &r, "ml-reopen", args...); err != nil {
			t.Fatal(err)
		}
		return r
	}

	first := res.Stored.Ledgers[0].LedgerID
	last := res.Stored.Ledgers[len(res.Stored.Ledgers)-1].LedgerID
	attempt := uuid.New()
	drv := mledger.Driver{Name: "aws-s3", Bucket: "tierkeeper-compat", Region: "us-east-1", ServiceEndpoint: "http://127.0.0.1:1"}
	if _, _, err := store.PrepareOffload(ctx, name, last, attempt, drv); !errors.Is(err, mledger.ErrLastLedger) {
		t.Fatalf("prepare of the last ledger %d: %v, want ErrLastLedger", last, err)
	}
	_, up, err := store.PrepareOffload(ctx, name, first, attempt, drv)
	if err != nil || !up.Written {
		t.Fatalf("prepare: %+v %v", up, err)
	}
	data, _, err := conn.Get(mledger.Path(name))
	if err != nil || len(data) == 0 || data[0] == 0x47 {
		t.Fatalf("expected a plain rewrite: %v", err)
	}

	// A broker configured with compression reads Go's plain value, and
	// writes its own compressed one on open.
	r := reopen("--ml-compression", "ZSTD")
	if r.ReadError != "" || len(r.ReadEntries) != len(res.Entries) {
		t.Fatalf("Pulsar read %d of %d entries after Go's update: %s", len(r.ReadEntries), len(res.Entries), r.ReadError)
	}
	for i, e := range r.ReadEntries {
		if w := res.Entries[i]; e.LedgerID != w.LedgerID || e.EntryID != w.EntryID || e.SHA256 != w.SHA256 {
			t.Fatalf("entry %d: read %+v, written %+v", i, e, w)
		}
	}
	seen := map[int64]javaLedger{}
	for _, l := range r.Ledgers {
		seen[l.LedgerID] = l
	}
	for _, l := range res.Stored.Ledgers {
		if l.LedgerID == last {
			continue // recovered on open; dropped if it held no entries
		}
		if _, ok := seen[l.LedgerID]; !ok {
			t.Errorf("Pulsar lost ledger %d after Go's update: %+v", l.LedgerID, r.Ledgers)
		}
	}
	oc := seen[first].Offload
	if oc == nil || oc.UUID != attempt.String() || oc.Complete || oc.DriverName != "aws-s3" ||
		oc.DriverMetadata["managedLedgerOffloadDriver"] != "AWS_S3" || oc.DriverMetadata["bucket"] != "tierkeeper-compat" ||
		oc.DriverMetadata["region"] != "us-east-1" || oc.DriverMetadata["serviceEndpoint"] != "http://127.0.0.1:1" {
		t.Errorf("Pulsar sees offload context %+v", oc)
	}
	// Pulsar's getManagedLedgerInfo (admin internal-info) reports
	// isOffloaded = hasOffloadContext(): true from the prepare step on, not
	// only once complete.
	for _, st := range []javaStored{r.StoredBeforeOpen, r.StoredAfterClose} {
		if u := st.Ledgers[0].OffloadedContextUUID; u == nil || *u != attempt.String() || !st.Ledgers[0].IsOffloaded {
			t.Errorf("stored info (Pulsar's view) of ledger %d: %+v (uuid %v)", first, st.Ledgers[0], deref(u))
		}
	}

	// Pulsar rewrote the node on open (recovered ledger, new open ledger),
	// compressed; Go reads that and completes the attempt; Pulsar sees it
	// complete.
	if data, _, err := conn.Get(mledger.Path(name)); err != nil || len(data) < 2 || data[0] != 0x47 || data[1] != 0x78 {
		t.Fatalf("Pulsar's rewrite is not ZSTD-wrapped: %v", err)
	}
	now := time.Now()
	store2 := mledger.New(conn, &mledger.Options{Now: func() time.Time { return now }})
	if _, err := store2.CompleteOffload(ctx, name, first, attempt); err != nil {
		t.Fatal(err)
	}
	r = reopen("--no-read")
	oc = nil
	for _, l := range r.Ledgers {
		if l.LedgerID == first {
			oc = l.Offload
		}
	}
	if oc == nil || !oc.Complete || oc.Timestamp != now.UnixMilli() || oc.UUID != attempt.String() {
		t.Errorf("after complete Pulsar sees %+v", oc)
	}
	snap, err := store.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if st := mledger.States(snap.Info); st[0] != mledger.StateOffloaded {
		t.Errorf("states after Pulsar's rewrite: %v", st)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
