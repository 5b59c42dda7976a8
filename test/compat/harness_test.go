// Package compat is the real-peer compatibility suite: tierkeeper's Go code
// against a real ZooKeeper, real BookKeeper bookies, a real S3 server and
// Pulsar's/BookKeeper's own Java code (`make compat` runs only this package).
//
// # Shared servers (this file; compat-harness engineer)
//
// Servers start lazily, once per test binary, on first use, and stop after
// all tests (TestMain). Call these from any test of package compat:
//
//	sharedZK(t) *testenv.ZooKeeper
//	    ZooKeeper 3.9 on 127.0.0.1 (.Addr). BookKeeper metadata lives under
//	    /ledgers, managed ledgers under /managed-ledgers.
//	sharedBookies(t) *testenv.BookKeeperCluster
//	    4 bookies (BookKeeper 4.17, DbLedgerStorage) registered in sharedZK:
//	    ensemble 3 + 1 spare, so an ensemble change can happen.
//	    .MetadataServiceURI() = "zk+hierarchical://127.0.0.1:port/ledgers".
//	sharedJava(t) *testenv.JavaTools
//	    the Java tool runner (write-ledgers, read-ledger, ml-write, ml-reopen,
//	    ml-offload, pulsar-offload, pulsar-read-offloaded ...; docs/compat.md).
//	sharedLedgers(t) *testenv.LedgerManifest
//	    ledgers written ONCE by BookKeeper's Java client into sharedBookies:
//	    one closed ledger per digest type (CRC32, MAC, CRC32C, DUMMY; E=3,
//	    Qw=2, Qa=2, 24 entries of 0 B..1 MiB, password "tierkeeper-pw") and
//	    one CRC32C ledger with an ensemble change (EnsembleChange=true, two
//	    segments). Each entry has its length and SHA-256; testenv.Payload
//	    regenerates the bytes.
//	testenv.StartS3(t) (blob-store engineer) is the package's S3 server;
//	    testenv.S3Args(s3, bucket) gives the Java tool's S3 flags.
//	sharedBigLedger(t) *testenv.WrittenLedger
//	    one big CRC32C ledger for read benchmarks, written once on first use:
//	    $TIERKEEPER_BIG_LEDGER_MIB MiB (default 512) of 1 MiB entries.
//	    BenchmarkBookKeeperReadJava reads it with BookKeeper's Java client.
//	sharedBroker(t) *testenv.Broker (broker_test.go)
//	    a stock Pulsar 4.0.8 broker on sharedBookies, 100 entries per
//	    ledger, offloader aws-s3 to brokerBucket on testenv.StartS3;
//	    uniqueTopic(t) gives a fresh topic for it.
//	uniqueMLName(t) string
//	    a fresh managed-ledger name "tierkeeper/compat/persistent/<test>-<n>".
//
// # House rules for shared servers
//
//   - Do not leave a shared bookie stopped or killed: call
//     StartBookie(t, i) before your test returns (or start your own cluster
//     with testenv.StartBookies on a testenv.StartZooKeeper of your own).
//   - Never delete or modify the sharedLedgers ledgers; write your own with
//     sharedJava(t).WriteLedgers(t, sharedBookies(t), ...) if you need to.
//   - Use uniqueMLName for managed ledgers, and a fresh bucket per test
//     (s3.NewBucket(t)).
//   - Tests of this package run one at a time (no t.Parallel) because they
//     share bookies that some tests stop and start.
package compat

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

var scope = testenv.NewSharedTB("compat")

func TestMain(m *testing.M) {
	code := m.Run()
	scope.Close()
	testenv.StopSharedS3()
	os.Exit(code)
}

// once is a value shared by the package's tests (testenv.Shared on scope).
type once[T any] struct{ testenv.Shared[T] }

func (s *once[T]) get(t testing.TB, what string, start func(tb testing.TB) T) T {
	t.Helper()
	return s.Get(t, scope, what, start)
}

var (
	zkOnce      once[*testenv.ZooKeeper]
	bookiesOnce once[*testenv.BookKeeperCluster]
	javaOnce    once[*testenv.JavaTools]
	ledgersOnce once[*testenv.LedgerManifest]
	bigOnce     once[*testenv.WrittenLedger]
	mlSeq       atomic.Int64
)

// sharedZK returns the package's ZooKeeper server.
func sharedZK(t testing.TB) *testenv.ZooKeeper {
	t.Helper()
	return zkOnce.get(t, "zookeeper", func(tb testing.TB) *testenv.ZooKeeper {
		return testenv.StartZooKeeper(tb)
	})
}

// sharedBookies returns the package's 4 bookies (registered in sharedZK).
func sharedBookies(t testing.TB) *testenv.BookKeeperCluster {
	t.Helper()
	zk := sharedZK(t)
	return bookiesOnce.get(t, "bookies", func(tb testing.TB) *testenv.BookKeeperCluster {
		return testenv.StartBookies(tb, zk, 4)
	})
}

// sharedJava returns the Java tool runner.
func sharedJava(t testing.TB) *testenv.JavaTools {
	t.Helper()
	return javaOnce.get(t, "java tools", func(tb testing.TB) *testenv.JavaTools {
		return testenv.Java(tb)
	})
}

// sharedLedgers returns the ledgers written once into sharedBookies (see the
// package comment).
func sharedLedgers(t testing.TB) *testenv.LedgerManifest {
	t.Helper()
	c := sharedBookies(t)
	j := sharedJava(t)
	return ledgersOnce.get(t, "shared ledgers", func(tb testing.TB) *testenv.LedgerManifest {
		return j.WriteLedgers(tb, c, testenv.WriteLedgersOptions{EnsembleChange: true})
	})
}

// sharedBigLedger returns the big benchmark ledger (see the package comment).
func sharedBigLedger(t testing.TB) *testenv.WrittenLedger {
	t.Helper()
	c := sharedBookies(t)
	j := sharedJava(t)
	mib := 512
	if v := os.Getenv("TIERKEEPER_BIG_LEDGER_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("TIERKEEPER_BIG_LEDGER_MIB=%q: want a positive integer", v)
		}
		mib = n
	}
	return bigOnce.get(t, "big ledger", func(tb testing.TB) *testenv.WrittenLedger {
		m := j.WriteLedgers(tb, c, testenv.WriteLedgersOptions{BigMiB: mib, Digests: []string{"CRC32C"}})
		return &m.Ledgers[0]
	})
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// uniqueMLName returns a managed-ledger name no other test uses.
func uniqueMLName(t testing.TB) string {
	return fmt.Sprintf("tierkeeper/compat/persistent/%s-%d", nonName.ReplaceAllString(t.Name(), "_"), mlSeq.Add(1))
}
