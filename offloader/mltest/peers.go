package mltest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Peers are the real servers an offloader test package shares: ZooKeeper,
// three bookies and Pulsar's Java tools (its managed-ledger library writes
// and reads the managed ledgers), started once, on first use, by whichever
// test needs them first; S3 comes from testenv.StartS3 (shared too). One
// per package:
//
//	var env = mltest.NewPeers("pipeline")
//
//	func TestMain(m *testing.M) { env.Main(m) }
//
//	func TestX(t *testing.T) {
//		env.Need(t)
//		w := env.MLWrite(t, "t/ns/persistent/x", 30, 10, 1000)
//		...
//	}
type Peers struct {
	ZK   *testenv.ZooKeeper
	BK   *testenv.BookKeeperCluster
	Java *testenv.JavaTools

	scope   *testenv.SharedTB
	started testenv.Shared[bool]
}

// NewPeers returns the package's peers (not started yet); name prefixes
// their logs and temporary directories.
func NewPeers(name string) *Peers { return &Peers{scope: testenv.NewSharedTB(name)} }

// Main runs the package's tests, then stops the peers and the shared S3
// server, and exits: call it from TestMain.
func (p *Peers) Main(m *testing.M) {
	code := m.Run()
	p.scope.Close()
	testenv.StopSharedS3()
	os.Exit(code)
}

// Need starts the peers on first use and skips or fails t (as
// testenv.Unavailable) when they cannot run.
func (p *Peers) Need(t testing.TB) {
	t.Helper()
	p.started.Get(t, p.scope, "zookeeper, bookies and java tools", func(tb testing.TB) bool {
		p.ZK = testenv.StartZooKeeper(tb)
		p.BK = testenv.StartBookies(tb, p.ZK, 3)
		p.Java = testenv.Java(tb)
		return true
	})
}

// Written is what the Java tool's ml-write reports: every entry written,
// with its ledger, id and payload digest.
type Written struct {
	Entries []testenv.EntryDigest `json:"entries"`
}

// MLWrite has Pulsar's managed-ledger library write entries into managed
// ledger name (tenant/namespace/persistent/topic), perLedger per ledger
// (so every ledger but the last is closed), of size bytes each (-1: the
// tool's size table up to 64 KiB), with a durable cursor "sub".
func (p *Peers) MLWrite(t testing.TB, name string, entries, perLedger, size int) Written {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"--metadata-uri", p.BK.MetadataServiceURI(), "--zk", p.ZK.Addr, "--name", name,
		"--entries", fmt.Sprint(entries), "--entries-per-ledger", fmt.Sprint(perLedger), "--cursor", "sub"}
	if size >= 0 {
		args = append(args, "--entry-size", fmt.Sprint(size))
	}
	var w Written
	if err := p.Java.RunJSON(ctx, &w, "ml-write", args...); err != nil {
		t.Fatal(err)
	}
	if len(w.Entries) != entries {
		t.Fatalf("ml-write wrote %d entries, want %d", len(w.Entries), entries)
	}
	return w
}

// Reopened is what the Java tool's ml-reopen reports.
type Reopened struct {
	ReadEntries []testenv.EntryDigest `json:"readEntries"`
	ReadError   string                `json:"readError"`
}

// PulsarReadsAll has Pulsar's managed-ledger code (a read-only cursor,
// with the jcloud offloader on the S3 bucket for offloaded ledgers) read
// every entry of name and checks each against what was written.
func (p *Peers) PulsarReadsAll(t testing.TB, s3 *testenv.S3, bucket, name string, w Written) Reopened {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"--metadata-uri", p.BK.MetadataServiceURI(), "--zk", p.ZK.Addr, "--name", name, "--mode", "readonly"},
		testenv.S3Args(s3, bucket)...)
	var r Reopened
	if err := p.Java.RunJSON(ctx, &r, "ml-reopen", args...); err != nil {
		t.Fatal(err)
	}
	if r.ReadError != "" || len(r.ReadEntries) != len(w.Entries) {
		t.Fatalf("%s: Pulsar read %d of %d entries: %s", name, len(r.ReadEntries), len(w.Entries), r.ReadError)
	}
	for i, e := range r.ReadEntries {
		if x := w.Entries[i]; e.LedgerID != x.LedgerID || e.EntryID != x.EntryID || e.SHA256 != x.SHA256 {
			t.Fatalf("%s entry %d: Pulsar read %+v, written %+v", name, i, e, x)
		}
	}
	return r
}
