package compat

// BenchmarkBKReadBufferHeap (`make bench-bk-read-buffers`): what
// readBufferSizeBytes costs a bookie's heap. BookKeeper's
// DefaultEntryLogger reads entries through a BufferedReadChannel per entry
// log, kept per reading thread, each with a heap buffer of
// readBufferSizeBytes; the bookie agent caps its recommendation on the
// assumption that these pile up, one per thread per log a thread has read.
// This counts them on real bookies.
//
//   - 3 bookies (Pulsar's DbLedgerStorage) with entry logs of
//     TIERKEEPER_BENCH_BK_HEAP_LOG_MIB MiB (default 4) and
//     readBufferSizeBytes 65536; BookKeeper's Java client writes one
//     ledger of TIERKEEPER_BENCH_BK_HEAP_MIB MiB (default 256; 1 MiB
//     entries, E=3 W=2 A=2), which fills tens of entry logs on each bookie.
//   - Then the Go reader reads it whole, once, again, and then 4 times at
//     once; after each step every bookie's BufferedReadChannel objects are
//     counted (jcmd GC.class_histogram): those on its heap (-all: no GC
//     first, garbage included), then those still live after a full GC,
//     beside its entry logs on disk. BookKeeper 4.17's thread-local map
//     holds its channels weakly (Guava MapMaker.weakValues), so a GC frees
//     them and the next read of that log makes a new one: the buffers are
//     allocation between two GCs, not heap the bookie keeps.
//
// Runs only with -bench; `make test` does not run it.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

const readChannelClass = "org.apache.bookkeeper.bookie.BufferedReadChannel"

// instances returns how many objects of class the JVM pid has (jcmd
// GC.class_histogram, within a minute): with gc, the live ones after a
// full GC; without, every one on the heap, garbage included. An output
// with no histogram row is an error, not zero.
func instances(ctx context.Context, jcmd string, pid int, class string, gc bool) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	args := []string{strconv.Itoa(pid), "GC.class_histogram"}
	if !gc {
		args = append(args, "-all")
	}
	out, err := exec.CommandContext(ctx, jcmd, args...).Output()
	if err != nil {
		return 0, fmt.Errorf("jcmd %s (limit 1 min): %w", strings.Join(args, " "), err)
	}
	rows := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// " 123:  45  6789  org.example.Class (java.base@17)"
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		rows++
		if f[3] == class {
			return n, nil
		}
	}
	if rows == 0 {
		return 0, fmt.Errorf("jcmd %s: no histogram row in its output: %.200q", strings.Join(args, " "), out)
	}
	return 0, nil
}

// entryLogs counts the entry log files (*.log) under dir.
func entryLogs(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".log") {
			n++
		}
		return nil
	})
	return n
}

func BenchmarkBKReadBufferHeap(b *testing.B) {
	mib := testenv.EnvInt(b, "TIERKEEPER_BENCH_BK_HEAP_MIB", 256)
	logMiB := testenv.EnvInt(b, "TIERKEEPER_BENCH_BK_HEAP_LOG_MIB", 4)
	const readBuffer = 65536
	jcmd, err := exec.LookPath("jcmd")
	if err != nil {
		b.Fatalf("jcmd (the JDK's; make deps installs it): %v", err)
	}
	ctx := context.Background()
	zkSrv := testenv.StartZooKeeper(b)
	bo := testenv.BenchBookieOptions(b)
	bo.Extra = append(bo.Extra, fmt.Sprintf("logSizeLimit=%d", logMiB<<20), fmt.Sprintf("readBufferSizeBytes=%d", readBuffer))
	cluster := testenv.StartBookiesWith(b, zkSrv, 3, bo)
	java := testenv.Java(b)
	java.Timeout = 30 * time.Minute
	bin := testenv.BuiltCommand(b, "offloader")

	man := java.WriteLedgers(b, cluster, testenv.WriteLedgersOptions{Digests: []string{"CRC32C"}, BigMiB: mib})
	w := man.Ledgers[0]
	b.Logf("Java wrote ledger %d: %d entries, %d bytes; bookies: entry logs of %d MiB, readBufferSizeBytes %d", w.LedgerID, w.EntryCount, w.Length, logMiB, readBuffer)

	read := func() error {
		// Bounded: a local ledger of a few hundred MiB.
		rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(rctx, bin, "ledger", "read", "--zk", cluster.MetadataServiceURI(), "--ledger", fmt.Sprint(w.LedgerID),
			"--verify-only", "-o", "json").CombinedOutput()
		if err != nil {
			return fmt.Errorf("go reader (limit 10 min): %w\n%s", err, out)
		}
		return nil
	}
	var most int64 // the most channels on one bookie's heap
	count := func(step string) {
		for _, bk := range cluster.Bookies() {
			// First without a GC (what the reads left on the heap), then
			// after one (what the bookie holds on to).
			all, err := instances(ctx, jcmd, bk.PID, readChannelClass, false)
			if err != nil {
				b.Fatal(err)
			}
			live, err := instances(ctx, jcmd, bk.PID, readChannelClass, true)
			if err != nil {
				b.Fatal(err)
			}
			most = max(most, all)
			b.Logf("%-24s bookie %d: %3d entry logs on disk; BufferedReadChannel on the heap %4d (their buffers %.1f MiB), live after a full GC %d (%.1f MiB)",
				step, bk.Index, entryLogs(filepath.Join(bk.Dir, "l")), all, float64(all*readBuffer)/(1<<20), live, float64(live*readBuffer)/(1<<20))
		}
	}
	b.ResetTimer()
	for range b.N {
		count("after the write")
		for _, step := range []string{"after one read", "after a second read"} {
			if err := read(); err != nil {
				b.Fatal(err)
			}
			count(step)
		}
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = read() })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		count("after 4 reads at once")
	}
	b.ReportMetric(float64(most), "most-read-channels-on-a-heap")
}
