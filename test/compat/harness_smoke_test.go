package compat

// Smoke tests of the harness itself (compat-harness engineer): the shared
// servers come up and each Java tool does what docs/compat.md says, checked
// against independent evidence (ZooKeeper, regenerated payloads, S3).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func TestHarnessBookiesRegistered(t *testing.T) {
	c := sharedBookies(t)
	avail, err := c.AvailableBookies()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, b := range c.Bookies() {
		if !b.Running {
			t.Errorf("bookie %d (%s) not running", b.Index, b.ID)
		}
		want = append(want, b.ID)
	}
	sort.Strings(want)
	if strings.Join(avail, ",") != strings.Join(want, ",") || len(want) != 4 {
		t.Fatalf("available bookies %v, want %v (4)", avail, want)
	}
}

func TestHarnessJavaVersions(t *testing.T) {
	j := sharedJava(t)
	start := time.Now()
	var v map[string]string
	if err := j.RunJSON(context.Background(), &v, "versions"); err != nil {
		t.Fatal(err)
	}
	t.Logf("versions %v (JVM run %s)", v, time.Since(start).Round(time.Millisecond))
	if !strings.HasPrefix(v["pulsar"], "4.") || !strings.HasPrefix(v["bookkeeper"], "4.17") || !strings.HasPrefix(v["zookeeper"], "3.9") {
		t.Fatalf("unexpected versions %v", v)
	}
	// Unknown options are usage errors (exit 2), not silently ignored.
	if _, err := j.Run(context.Background(), "versions", "--bogus", "1"); err == nil || !strings.Contains(err.Error(), "unknown option --bogus") {
		t.Fatalf("bogus option: %v", err)
	}
}

func TestHarnessSharedLedgers(t *testing.T) {
	m := sharedLedgers(t)
	if len(m.Ledgers) != 5 {
		t.Fatalf("%d ledgers, want 5", len(m.Ledgers))
	}
	digests := map[string]bool{}
	for _, l := range m.Ledgers {
		digests[l.DigestType] = true
		if l.State != "CLOSED" || l.EnsembleSize != 3 || l.WriteQuorum != 2 || l.AckQuorum != 2 {
			t.Errorf("ledger %d: %+v", l.LedgerID, l)
		}
		if l.EntryCount != 24 || l.LastEntryID != 23 || len(l.Entries) != 24 {
			t.Errorf("ledger %d: %d entries, last %d", l.LedgerID, l.EntryCount, l.LastEntryID)
		}
		var total int64
		for _, e := range l.Entries {
			p := testenv.Payload(l.Seed, e.EntryID, testenv.PayloadSize(e.EntryID))
			sum := sha256.Sum256(p)
			if e.Length != len(p) || e.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("ledger %d entry %d: manifest %d/%s, regenerated %d/%x", l.LedgerID, e.EntryID, e.Length, e.SHA256, len(p), sum)
			}
			total += int64(e.Length)
		}
		if total != l.Length {
			t.Errorf("ledger %d: length %d, sum of entries %d", l.LedgerID, l.Length, total)
		}
		if l.EnsembleChange != (len(l.Ensembles) > 1) {
			t.Errorf("ledger %d: ensembleChange %v with %d ensembles", l.LedgerID, l.EnsembleChange, len(l.Ensembles))
		}
	}
	for _, d := range []string{"CRC32", "MAC", "CRC32C", "DUMMY"} {
		if !digests[d] {
			t.Errorf("no %s ledger", d)
		}
	}
	ec := m.Ledgers[4]
	if !ec.EnsembleChange || len(ec.Ensembles) != 2 || ec.Ensembles[1].FirstEntryID != 12 {
		t.Fatalf("ensemble-change ledger: %+v", ec.Ensembles)
	}
	// Every bookie is back after the forced ensemble change.
	if n := len(sharedBookies(t).RunningBookies()); n != 4 {
		t.Fatalf("%d bookies running after write-ledgers, want 4", n)
	}
}

// readLedgerResult is the read-ledger / pulsar-read-offloaded output.
type readLedgerResult struct {
	LedgerID       int64                 `json:"ledgerId"`
	EntryCount     int64                 `json:"entryCount"`
	TotalBytes     int64                 `json:"totalBytes"`
	Entries        []testenv.EntryDigest `json:"entries"`
	Metadata       map[string]any        `json:"metadata"`
	DriverName     string                `json:"driverName"`
	DriverMetadata map[string]string     `json:"driverMetadata"`
}

func sameEntries(t *testing.T, what string, got, want []testenv.EntryDigest) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i].EntryID != want[i].EntryID || got[i].Length != want[i].Length || got[i].SHA256 != want[i].SHA256 {
			t.Fatalf("%s: entry %d = %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

// read-ledger-bench reads every entry (with digest checks) of the ledger
// whose ensemble changed mid-way; its checksum matches the manifest.
func TestHarnessReadBench(t *testing.T) {
	m := sharedLedgers(t)
	j := sharedJava(t)
	var r struct {
		Entries  int64   `json:"entries"`
		Bytes    int64   `json:"bytes"`
		MBPerSec float64 `json:"mbPerSec"`
		Checksum string  `json:"sha256OfEntrySha256s"`
	}
	// The ensemble-change ledger: entries 12.. live on the replacement bookie.
	l := m.Ledgers[4]
	if err := j.RunJSON(context.Background(), &r, "read-ledger-bench", "--zk", sharedZK(t).Addr, "--ledger", fmt.Sprint(l.LedgerID), "--checksum"); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, e := range l.Entries {
		b, _ := hex.DecodeString(e.SHA256)
		h.Write(b)
	}
	if r.Entries != l.EntryCount || r.Bytes != l.Length || r.Checksum != hex.EncodeToString(h.Sum(nil)) || r.MBPerSec <= 0 {
		t.Fatalf("bench result %+v, ledger %d entries %d bytes", r, l.EntryCount, l.Length)
	}
}

func TestHarnessPulsarOffloadRoundTrip(t *testing.T) {
	m := sharedLedgers(t)
	j := sharedJava(t)
	zk := sharedZK(t)
	s := testenv.StartS3(t)
	bucket := s.NewBucket(t)
	l := m.Ledgers[0]
	uuid := "6f1c1f6e-3d7a-4b8e-9a51-0c3c2f4f9e01"
	var off struct {
		Objects        []string          `json:"objects"`
		DriverName     string            `json:"driverName"`
		DriverMetadata map[string]string `json:"driverMetadata"`
		LoadSeconds    float64           `json:"loadSeconds"`
		Seconds        float64           `json:"seconds"`
	}
	args := append([]string{"--zk", zk.Addr, "--ledger", fmt.Sprint(l.LedgerID), "--uuid", uuid, "--max-block-size", fmt.Sprint(5 << 20)}, testenv.S3Args(s, bucket)...)
	if err := j.RunJSON(context.Background(), &off, "pulsar-offload", args...); err != nil {
		t.Fatal(err)
	}
	t.Logf("offload: %+v", off)
	want := []string{uuid + "-ledger-" + fmt.Sprint(l.LedgerID), uuid + "-ledger-" + fmt.Sprint(l.LedgerID) + "-index"}
	if strings.Join(off.Objects, ",") != strings.Join(want, ",") || off.DriverName != "aws-s3" || off.DriverMetadata["bucket"] != bucket {
		t.Fatalf("offload result %+v", off)
	}
	// The objects really are in the bucket, with Pulsar's metadata.
	ctx := context.Background()
	for i, k := range want {
		h, err := s.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		if err != nil {
			t.Fatalf("head %s: %v", k, err)
		}
		role := map[int]string{0: "data", 1: "index"}[i]
		if h.Metadata["role"] != role || h.Metadata["s3managedledgeroffloaderformatversion"] != "1" {
			t.Errorf("%s metadata %v", k, h.Metadata)
		}
	}
	var r readLedgerResult
	rargs := append([]string{"--ledger", fmt.Sprint(l.LedgerID), "--uuid", uuid}, testenv.S3Args(s, bucket)...)
	if err := j.RunJSON(ctx, &r, "pulsar-read-offloaded", rargs...); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "pulsar-read-offloaded", r.Entries, l.Entries)
	if r.Metadata["lastEntryId"] != float64(l.LastEntryID) || r.Metadata["length"] != float64(l.Length) || r.Metadata["ensembleSize"] != float64(3) {
		t.Fatalf("offloaded metadata %v", r.Metadata)
	}
}

// mlLedger is one ledger of a managed ledger as the Java tool prints it.
type mlLedger struct {
	LedgerID       int64 `json:"ledgerId"`
	Entries        int64 `json:"entries"`
	Size           int64 `json:"size"`
	OffloadContext *struct {
		UUID              string            `json:"uuid"`
		Complete          bool              `json:"complete"`
		BookkeeperDeleted bool              `json:"bookkeeperDeleted"`
		DriverName        string            `json:"driverName"`
		DriverMetadata    map[string]string `json:"driverMetadata"`
	} `json:"offloadContext"`
}

// Pulsar's managed ledger end to end: ml-write rolls over ledgers of 10
// entries, ml-reopen (read-only) reads them back, ml-offload offloads with
// Pulsar's own offloader and deletes the BookKeeper copies, then ml-reopen
// (normal open) reads every entry again, the offloaded ones from S3 through
// the jcloud NAR.
func TestHarnessManagedLedger(t *testing.T) {
	zkSrv := sharedZK(t)
	sharedBookies(t)
	j := sharedJava(t)
	s := testenv.StartS3(t)
	bucket := s.NewBucket(t)
	name := uniqueMLName(t)
	ctx := context.Background()
	var w struct {
		Entries []testenv.EntryDigest `json:"entries"`
	}
	if err := j.RunJSON(ctx, &w, "ml-write", "--zk", zkSrv.Addr, "--name", name, "--entries", "25", "--entries-per-ledger", "10", "--cursor", "sub"); err != nil {
		t.Fatal(err)
	}
	perLedger := map[int64]int{}
	for _, e := range w.Entries {
		perLedger[e.LedgerID]++
	}
	if len(perLedger) != 3 {
		t.Fatalf("25 entries spread over %d ledgers, want 3 (10+10+5)", len(perLedger))
	}
	checkRead := func(what string, args ...string) {
		t.Helper()
		var r struct {
			ReadCount   int                   `json:"readCount"`
			ReadEntries []testenv.EntryDigest `json:"readEntries"`
			ReadError   string                `json:"readError"`
		}
		if err := j.RunJSON(ctx, &r, "ml-reopen", args...); err != nil {
			t.Fatal(err)
		}
		if r.ReadError != "" || r.ReadCount != 25 {
			t.Fatalf("%s: read %d entries, error %q", what, r.ReadCount, r.ReadError)
		}
		for i, e := range r.ReadEntries {
			if e.LedgerID != w.Entries[i].LedgerID || e.EntryID != w.Entries[i].EntryID || e.SHA256 != w.Entries[i].SHA256 {
				t.Fatalf("%s: entry %d = %+v, wrote %+v", what, i, e, w.Entries[i])
			}
		}
	}
	checkRead("read-only reopen", "--zk", zkSrv.Addr, "--name", name, "--mode", "readonly")

	var off struct {
		Ledgers           []mlLedger `json:"ledgers"`
		BookkeeperDeleted bool       `json:"bookkeeperDeleted"`
	}
	args := append([]string{"--zk", zkSrv.Addr, "--name", name, "--delete-bk",
		"--offload-prop", "managedLedgerOffloadDeletionLagInMillis=0"}, testenv.S3Args(s, bucket)...)
	if err := j.RunJSON(ctx, &off, "ml-offload", args...); err != nil {
		t.Fatal(err)
	}
	zc := zkSrv.Session(t, tkzk.Options{SessionTimeout: 5 * time.Second})
	var offloaded []mlLedger
	for _, l := range off.Ledgers {
		if l.OffloadContext != nil && l.OffloadContext.Complete {
			offloaded = append(offloaded, l)
		}
	}
	// ml-write left ledgers of 10, 10 and 5 entries; reopening added an
	// empty current one. offloadPrefix(lastConfirmedEntry) offloads the
	// ledgers before the one holding that entry: the first two.
	if len(offloaded) != 2 || offloaded[0].Entries != 10 || offloaded[1].Entries != 10 || !off.BookkeeperDeleted {
		t.Fatalf("offloaded %d ledgers (bookkeeperDeleted %v): %+v", len(offloaded), off.BookkeeperDeleted, off.Ledgers)
	}
	for _, l := range offloaded {
		oc := l.OffloadContext
		if !oc.BookkeeperDeleted || oc.DriverName != "aws-s3" || oc.DriverMetadata["bucket"] != bucket {
			t.Fatalf("ledger %d offload context %+v", l.LedgerID, oc)
		}
		// Gone from BookKeeper: no metadata znode (hierarchical layout).
		path := fmt.Sprintf("/ledgers/%02d/%04d/L%04d", l.LedgerID/100000000, l.LedgerID/10000%10000, l.LedgerID%10000)
		if ok, _, err := zc.Exists(path); err != nil || ok {
			t.Fatalf("ledger %d: %s exists=%v (%v) after offload+delete", l.LedgerID, path, ok, err)
		}
	}
	checkRead("reopen after offload", append([]string{"--zk", zkSrv.Addr, "--name", name}, testenv.S3Args(s, bucket)...)...)
}

// BenchmarkBookKeeperReadJava reads the big ledger with BookKeeper's own Java
// client, tuned as a broker would be (v2 protocol, sticky reads, pipelined
// batch reads, 32 MiB in flight), and reports its throughput: the figure a Go
// reader is compared with. ns/op includes the JVM start; the MB/s and
// s/read metrics are the tool's own timing of its read loop.
func BenchmarkBookKeeperReadJava(b *testing.B) {
	l := sharedBigLedger(b)
	j := sharedJava(b)
	zk := sharedZK(b)
	b.ResetTimer()
	var total float64
	for i := 0; i < b.N; i++ {
		var r struct {
			Entries  int64   `json:"entries"`
			Bytes    int64   `json:"bytes"`
			Seconds  float64 `json:"seconds"`
			MBPerSec float64 `json:"mbPerSec"`
		}
		if err := j.RunJSON(context.Background(), &r, "read-ledger-bench", "--zk", zk.Addr, "--ledger", fmt.Sprint(l.LedgerID)); err != nil {
			b.Fatal(err)
		}
		if r.Bytes != l.Length || r.Entries != l.EntryCount {
			b.Fatalf("read %d entries / %d bytes, ledger has %d / %d", r.Entries, r.Bytes, l.EntryCount, l.Length)
		}
		total += r.Seconds
	}
	b.ReportMetric(total/float64(b.N), "s/read")
	b.ReportMetric(float64(l.Length)*float64(b.N)/total/1e6, "MB/s")
}
