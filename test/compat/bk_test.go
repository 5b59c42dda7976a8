package compat

// BookKeeper reader against the real peers (BK-client engineer): ledgers
// written by BookKeeper's own Java client into real bookies are read back by
// the Go metadata store (real ZooKeeper) and the Go bookie client (real
// bookies, v3 protocol), entry for entry.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/metrics/metricstest"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// bkStore opens a Go metadata store on the shared cluster's ZooKeeper.
func bkStore(t *testing.T, c *testenv.BookKeeperCluster) *metadata.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := c.ZK.Session(t, tkzk.Options{SessionTimeout: 10 * time.Second})
	s, err := metadata.NewStore(ctx, conn, metadata.StoreOptions{Root: c.LedgersRoot})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bkClient(t *testing.T, s *metadata.Store, reg prometheus.Registerer) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Resolver: s, Registerer: reg, ReadTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// checkMetadata compares Go's parse of a ledger's znode with what the Java
// client reported after closing it.
func checkMetadata(t *testing.T, md *metadata.LedgerMetadata, w testenv.WrittenLedger) {
	t.Helper()
	wantDigest, err := digest.ParseType(w.DigestType)
	if err != nil {
		t.Fatal(err)
	}
	if md.FormatVersion != 3 || md.State.String() != w.State || md.EnsembleSize != w.EnsembleSize ||
		md.WriteQuorum != w.WriteQuorum || md.AckQuorum != w.AckQuorum || md.LastEntryID != w.LastEntryID ||
		md.Length != w.Length || !md.HasPassword || md.DigestType != wantDigest ||
		hex.EncodeToString(md.Password) != w.PasswordHex {
		t.Fatalf("ledger %d: Go metadata %+v\nJava wrote %+v", w.LedgerID, md, w)
	}
	// BookKeeper stores ctime only with storeSystemtimeAsLedgerCreationTime
	// (off by default; the writer then reports -1); readers take the
	// znode's creation time instead, as Go does.
	if (w.Ctime == -1 && (md.CtimeStored || md.Ctime <= 0)) || (w.Ctime != -1 && md.Ctime != w.Ctime) {
		t.Fatalf("ledger %d: ctime %d (stored %t), Java wrote %d", w.LedgerID, md.Ctime, md.CtimeStored, w.Ctime)
	}
	var segs []testenv.EnsembleSegment
	for _, s := range md.Segments {
		segs = append(segs, testenv.EnsembleSegment{FirstEntryID: s.FirstEntryID, Bookies: s.Bookies})
	}
	if !reflect.DeepEqual(segs, w.Ensembles) {
		t.Fatalf("ledger %d: ensembles %v, Java %v", w.LedgerID, segs, w.Ensembles)
	}
	custom := map[string]string{}
	for k, v := range md.CustomMetadata {
		custom[k] = string(v)
	}
	if !reflect.DeepEqual(custom, w.CustomMetadata) {
		t.Fatalf("ledger %d: custom metadata %v, Java %v", w.LedgerID, custom, w.CustomMetadata)
	}
}

// readAndCompare streams every entry of a ledger with the Go client and
// compares length and SHA-256 with the Java writer's manifest.
func readAndCompare(t *testing.T, c *client.Client, md *metadata.LedgerMetadata, w testenv.WrittenLedger) {
	t.Helper()
	l, err := c.Open(md)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var n int
	err = l.ReadRange(ctx, 0, -1, client.StreamOptions{}, func(e client.Entry) error {
		want := w.Entries[n]
		sum := sha256.Sum256(e.Payload)
		if e.EntryID != want.EntryID || len(e.Payload) != want.Length || hex.EncodeToString(sum[:]) != want.SHA256 {
			return fmt.Errorf("entry %d: %d bytes sha256 %x; Java wrote entry %d, %d bytes, sha256 %s",
				e.EntryID, len(e.Payload), sum, want.EntryID, want.Length, want.SHA256)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatalf("ledger %d (%s): %v", w.LedgerID, w.DigestType, err)
	}
	if n != len(w.Entries) {
		t.Fatalf("ledger %d: read %d entries, Java wrote %d", w.LedgerID, n, len(w.Entries))
	}
}

// TestBKReadJavaWrittenLedgersOverV3 reads every shared ledger over the v3
// wire protocol (TestBKReadJavaWrittenLedgers: the default, v2), entry for
// entry as BookKeeper's Java client wrote it.
func TestBKReadJavaWrittenLedgersOverV3(t *testing.T) {
	m := sharedLedgers(t)
	s := bkStore(t, sharedBookies(t))
	cl, err := client.New(client.Options{Resolver: s, ReadTimeout: 10 * time.Second, WireProtocol: client.WireV3})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, w := range m.Ledgers {
		md, err := s.ReadLedger(context.Background(), w.LedgerID)
		if err != nil {
			t.Fatal(err)
		}
		readAndCompare(t, cl, md, w)
	}
}

// TestBKReadJavaWrittenLedgers reads every shared ledger (one per digest
// type, and one with an ensemble change) written by BookKeeper's Java
// client, checking the metadata and every entry's bytes, over the
// default wire protocol (v2).
func TestBKReadJavaWrittenLedgers(t *testing.T) {
	m := sharedLedgers(t)
	c := sharedBookies(t)
	s := bkStore(t, c)
	if s.Layout().Manager != metadata.Hierarchical {
		t.Fatalf("layout %+v", s.Layout())
	}
	reg := prometheus.NewRegistry()
	cl := bkClient(t, s, reg)
	for _, w := range m.Ledgers {
		name := w.DigestType
		if w.EnsembleChange {
			name += "-ensemble-change"
		}
		t.Run(name, func(t *testing.T) {
			md, err := s.ReadLedger(context.Background(), w.LedgerID)
			if err != nil {
				t.Fatal(err)
			}
			checkMetadata(t, md, w)
			if w.EnsembleChange && len(md.Segments) != 2 {
				t.Fatalf("ensemble-change ledger has %d segments", len(md.Segments))
			}
			readAndCompare(t, cl, md, w)
			// A single entry read regenerates the exact payload too.
			l, _ := cl.Open(md)
			e, err := l.ReadEntry(context.Background(), 7)
			if err != nil {
				t.Fatal(err)
			}
			if want := testenv.Payload(w.Seed, 7, testenv.PayloadSize(7)); string(e.Payload) != string(want) {
				t.Fatalf("entry 7 differs from the regenerated payload")
			}
		})
	}
	if f := metricstest.CounterSum(t, reg, "tierkeeper_bookkeeper_read_failovers_total"); f != 0 {
		t.Errorf("%v failovers on a healthy cluster", f)
	}

	// BookKeeper's Java reader, reading the same znode, sees what Go sees
	// (including the ctime taken from the znode).
	w := m.Ledgers[len(m.Ledgers)-1]
	var jmd testenv.WrittenLedger
	if err := sharedJava(t).RunJSON(context.Background(), &jmd, "ledger-metadata", "--metadata-uri", c.MetadataServiceURI(),
		"--ledger", fmt.Sprint(w.LedgerID)); err != nil {
		t.Fatal(err)
	}
	md, err := s.ReadLedger(context.Background(), w.LedgerID)
	if err != nil {
		t.Fatal(err)
	}
	checkMetadata(t, md, jmd) // includes ctime equality: Java's reader reports the znode ctime
}

// TestBKListAndResolve lists the ledgers and resolves every bookie id
// through the real registrations under /ledgers/available.
func TestBKListAndResolve(t *testing.T) {
	m := sharedLedgers(t)
	c := sharedBookies(t)
	s := bkStore(t, c)
	ids, err := s.ListLedgers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range m.Ledgers {
		if !slices.Contains(ids, w.LedgerID) {
			t.Errorf("ledger %d missing from ListLedgers %v", w.LedgerID, ids)
		}
	}
	writable, _, err := s.Bookies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(writable) != len(c.RunningBookies()) {
		t.Errorf("Go sees writable bookies %v, cluster runs %v", writable, c.RunningBookies())
	}
	for _, b := range c.Bookies() {
		addr, err := s.ResolveBookie(context.Background(), b.ID)
		if err != nil || addr != b.Addr {
			t.Errorf("ResolveBookie(%s) = %q, %v; want %s", b.ID, addr, err, b.Addr)
		}
	}
}

// TestBKReadFailsOverWhenBookieStopped stops one bookie of a ledger's
// ensemble: every entry is still read, from the other replica.
func TestBKReadFailsOverWhenBookieStopped(t *testing.T) {
	m := sharedLedgers(t)
	c := sharedBookies(t)
	s := bkStore(t, c)
	w := m.Ledgers[2] // CRC32C, one ensemble
	md, err := s.ReadLedger(context.Background(), w.LedgerID)
	if err != nil {
		t.Fatal(err)
	}
	victim := c.IndexOf(md.Segments[0].Bookies[0])
	if victim < 0 {
		t.Fatalf("bookie %s not in the cluster", md.Segments[0].Bookies[0])
	}
	c.StopBookie(victim)
	defer c.StartBookie(t, victim)

	reg := prometheus.NewRegistry()
	cl := bkClient(t, s, reg)
	readAndCompare(t, cl, md, w)
	if f := metricstest.CounterSum(t, reg, "tierkeeper_bookkeeper_read_failovers_total"); f == 0 {
		t.Fatal("no failover counted although the first replica of entry 0 is down")
	}
	// An entry whose only other replica is also down fails with a
	// connection error, not "missing".
	ws, _ := md.WriteSet(0)
	other := c.IndexOf(ws[1])
	c.StopBookie(other)
	defer c.StartBookie(t, other)
	l, _ := cl.Open(md)
	_, err = l.ReadEntry(context.Background(), 0)
	if !errors.Is(err, client.ErrReadFailed) || errors.Is(err, client.ErrEntryMissing) || !errors.Is(err, client.ErrConnection) {
		t.Fatalf("both replicas down: %v", err)
	}
}

// TestBKReadV2WrittenLedger reads a ledger that BookKeeper's Java client
// wrote over the v2 wire protocol (as Pulsar brokers do by default).
func TestBKReadV2WrittenLedger(t *testing.T) {
	c := sharedBookies(t)
	j := sharedJava(t)
	man := j.WriteLedgers(t, c, testenv.WriteLedgersOptions{Digests: []string{"CRC32C", "MAC"}, Entries: 14, Seed: 500, V2: true})
	s := bkStore(t, c)
	cl := bkClient(t, s, nil)
	for _, w := range man.Ledgers {
		md, err := s.ReadLedger(context.Background(), w.LedgerID)
		if err != nil {
			t.Fatal(err)
		}
		checkMetadata(t, md, w)
		readAndCompare(t, cl, md, w)
	}
}

// TestBKCompareAndDeleteSeenByJava deletes a Java-written ledger with the Go
// compare-and-delete and checks that BookKeeper's Java client no longer
// finds it.
func TestBKCompareAndDeleteSeenByJava(t *testing.T) {
	c := sharedBookies(t)
	j := sharedJava(t)
	man := j.WriteLedgers(t, c, testenv.WriteLedgersOptions{Digests: []string{"CRC32"}, Entries: 5, Seed: 700})
	w := man.Ledgers[0]
	s := bkStore(t, c)
	ctx := context.Background()
	before, err := s.ListLedgers(ctx)
	if err != nil || !slices.Contains(before, w.LedgerID) {
		t.Fatalf("ledger %d not listed before the delete: %v %v", w.LedgerID, before, err)
	}
	if _, err := s.DeleteLedger(ctx, w.LedgerID, metadata.Expect{LastEntryID: w.LastEntryID, Length: w.Length + 1}); !errors.Is(err, metadata.ErrChanged) {
		t.Fatalf("delete with wrong length: %v", err)
	}
	res, err := s.DeleteLedger(ctx, w.LedgerID, metadata.Expect{LastEntryID: w.LastEntryID, Length: w.Length})
	if err != nil || res != metadata.Deleted {
		t.Fatalf("delete: %v %v", res, err)
	}
	if res, err := s.DeleteLedger(ctx, w.LedgerID, metadata.Expect{LastEntryID: w.LastEntryID, Length: w.Length}); err != nil || res != metadata.AlreadyDeleted {
		t.Fatalf("second delete: %v %v", res, err)
	}
	_, err = j.Run(ctx, "ledger-metadata", "--metadata-uri", c.MetadataServiceURI(), "--ledger", fmt.Sprint(w.LedgerID))
	if err == nil || !strings.Contains(err.Error(), "NoSuchLedger") {
		t.Fatalf("Java still opens the deleted ledger (or failed otherwise): %v", err)
	}
	// The znode is gone; nothing else under the root was touched.
	p, _ := s.LedgerPath(w.LedgerID)
	conn := c.ZK.Session(t, tkzk.Options{SessionTimeout: 10 * time.Second})
	if ok, _, err := conn.Exists(p); err != nil || ok {
		t.Fatalf("%s still exists: %v", p, err)
	}
	after, err := s.ListLedgers(ctx)
	want := slices.DeleteFunc(before, func(id int64) bool { return id == w.LedgerID })
	if err != nil || !slices.Equal(after, want) {
		t.Fatalf("ledgers after the delete %v (%v), want %v", after, err, want)
	}
}
