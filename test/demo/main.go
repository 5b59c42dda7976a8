// Command demo is `make demo`: tierkeeper's main job on 127.0.0.1. It
// starts ZooKeeper, three bookies, versitygw and a stock Pulsar 4.0.8
// broker (all from `make deps`), produces messages through the broker with
// Pulsar's Java client, runs `offloader offload` on the topic (progress bars
// on the terminal), reads every message back through the broker from the
// earliest position, and prints a short report. The last line says how
// many messages were read back and how many of them came from the object
// store. Everything stops and is removed at the end.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func main() {
	bin := flag.String("offloader", "bin/offloader", "the offloader binary (make build)")
	count := flag.Int("messages", 2050, "messages to produce (100 per ledger)")
	flag.Parse()
	os.Exit(run(*bin, *count))
}

// step prints one line of the demo's progress.
type clock struct{ start time.Time }

func (c clock) say(format string, args ...any) {
	fmt.Printf("[%5.1fs] %s\n", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

func run(bin string, count int) int {
	c := clock{time.Now()}
	scope := testenv.NewSharedTB("demo")
	defer scope.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "demo: %s: %v\n", what, err)
		return 1
	}
	if _, err := os.Stat(bin); err != nil {
		return fail("offloader binary", fmt.Errorf("%w (run make build)", err))
	}
	fmt.Println("tierkeeper demo: offload a Pulsar topic's closed ledgers from BookKeeper to an S3 store, read it back through a stock broker")
	var st *testenv.Stack
	if err := scope.Do(func(tb testing.TB) { st = testenv.StartStack(tb, testenv.StackOptions{}) }); err != nil {
		return fail("start servers", err)
	}
	zk, s3, bucket, broker, java := st.ZK, st.S3, st.Bucket, st.Broker, st.Java
	c.say("ZooKeeper on %s, 3 bookies (%s)", zk.Addr, strings.Join(st.BK.RunningBookies(), ", "))
	c.say("versitygw S3 server on %s, bucket %s", s3.Endpoint, bucket)
	c.say("stock Pulsar 4.0.8 broker on %s (admin %s), its offloader (aws-s3) on the bucket", broker.ServiceURL, broker.WebURL)
	defer testenv.StopSharedS3()

	topic := "persistent://public/default/demo-orders"
	prod, err := java.Produce(ctx, broker, topic, testenv.ProduceOptions{Count: count, Seed: 8, Sizes: []int{1000, 10000, 30000, 4000}})
	if err != nil {
		return fail("produce", err)
	}
	ledgers := prod.LedgerIDs()[-1]
	c.say("produced %d messages (%s) with Pulsar's Java client into %d ledgers of %s", prod.Count, units.HumanBytes(prod.Bytes), len(ledgers), topic)

	store := filepath.Join(scope.TempDir(), "store.json")
	cfg, _ := json.Marshal(map[string]any{"type": "s3", "config": map[string]any{
		"bucket": bucket, "region": s3.Region, "endpoint": s3.Endpoint, "addressing": "path",
		"credentials": map[string]any{"source": "static", "access_key_id": s3.AccessKey, "secret_access_key": s3.SecretKey},
	}})
	if err := os.WriteFile(store, cfg, 0o600); err != nil {
		return fail("store config", err)
	}
	args := []string{"offload", "--zk", zk.Addr, "--store", store, "--admin-url", broker.WebURL, "--delete-bookkeeper", topic}
	fmt.Printf("\n$ offloader %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr // progress bars
	began := time.Now()
	if err := cmd.Run(); err != nil {
		os.Stdout.Write(out.Bytes())
		return fail("offloader offload", err)
	}
	took := time.Since(began)
	os.Stdout.Write(out.Bytes())
	fmt.Println()
	c.say("offload done in %s", took.Round(time.Millisecond))

	read, err := java.ReadAll(ctx, broker, topic, testenv.ReadOptions{Expect: int(prod.Count)})
	if err != nil {
		return fail("read", err)
	}
	c.say("read %d messages back through the broker with a Reader from the earliest position", read.Count)
	stats, err := broker.InternalStats(ctx, topic)
	if err != nil {
		return fail("internalStats", err)
	}
	offloaded := map[int64]bool{}
	for _, l := range stats.Ledgers {
		if l.Offloaded {
			offloaded[l.LedgerID] = true
		}
	}
	produced := map[string]string{}
	for _, m := range prod.Messages {
		produced[fmt.Sprintf("%d:%d", m.LedgerID, m.EntryID)] = m.SHA256
	}
	same, fromStore := 0, 0
	for _, m := range read.Messages {
		if produced[fmt.Sprintf("%d:%d", m.LedgerID, m.EntryID)] == m.SHA256 && m.SHA256 == digest(testenv.Payload(8, m.Index, m.Length)) {
			same++
			if offloaded[m.LedgerID] {
				fromStore++
			}
		}
	}
	fmt.Println()
	fmt.Println("report")
	fmt.Printf("  the offloader's summary:   %s\n", summaryLine(out.String()))
	fmt.Printf("  broker's view:             %d of %d ledgers served from the object store (internalStats)\n", len(offloaded), len(stats.Ledgers))
	fmt.Printf("  messages:                  %d produced, %d read back with the same payload (SHA-256)\n", prod.Count, same)
	fmt.Printf("  wall time:                 %s\n", time.Since(c.start).Round(time.Second))
	fmt.Printf("read back %d of %d messages through the stock broker, %d of them from the object store\n", same, prod.Count, fromStore)
	if int64(same) != prod.Count || fromStore == 0 {
		return 1
	}
	return 0
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// summaryLine is the offloader's last stdout line (its totals).
func summaryLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
