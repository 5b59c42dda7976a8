package offloadbench

// make bench-catchup
// go test -run '^$' -bench BenchmarkCatchup -benchtime 1x -timeout 90m ./test/offloadbench/
//
// What a consumer feels after an offload: a Pulsar Reader (the Java
// client, test/compat/java `read --summary-only`) catching up from the
// earliest position through a stock Pulsar 4.0.8 broker, on identical
// messages offloaded three ways onto the same versitygw:
//
//   tk-<B>MiB    `offloader offload --admin-url .. --delete-bookkeeper
//                --block-size <B>MiB` (one topic per block size)
//   pulsar-64MiB the broker's own offloader (admin API PUT .../offload,
//                its default 64 MiB blocks); the broker's trimmer deletes
//                the BookKeeper copies (deletion lag 1 ms)
//
// The broker reads the store through a counting reverse proxy in front of
// versitygw (its managedLedgerOffloadServiceEndpoint), which counts the
// bytes of GET answers (data and index objects apart) and the GETs. Every
// BookKeeper copy of an offloaded ledger is gone before the reads (checked
// in the ledger metadata), and every read must fetch at least the
// offloaded bytes from the store, so no read is served by the bookies. The
// broker restarts before every round (a fixed, pre-touched heap, as
// Pulsar's start script sets one), then reads TK_BENCH_CATCHUP_WARM_MIB
// (default: the whole topic) of the round's last topic, so that the
// measured reads meet a broker whose JIT has compiled the read path, as a
// broker that has run for a while has; it unloads each topic after its
// read (managed-ledger cache and offloaded read handles dropped), and the
// order of the variants rotates every round. The first read of a round is
// still mostly the slowest (by 10-20 % after a whole-topic warm-up, 8-35 %
// after 16 or 256 MiB), so the result also gives the mean over the
// rounds, which weighs every place alike. Per read: MB/s of payload (client
// start to the last message), time to the first message, bytes fetched
// from the store; each read checks count, bytes and the SHA-256 of all
// payloads in order against the other variants.
//
// Knobs: TK_BENCH_CATCHUP_MIB (payload MiB per topic, 1024), TK_BENCH_CATCHUP_MSG
// (message bytes, 65536), TK_BENCH_CATCHUP_LEDGER_MIB (payload MiB per
// ledger, 256: ledgers larger than every block), TK_BENCH_CATCHUP_WARM_MIB
// (the warm-up read after each restart, 1024, at most the topic's),
// TK_BENCH_CATCHUP_BLOCKS
// (tierkeeper block sizes in MiB, "10,64"), TK_BENCH_ROUNDS (reads per
// variant, 3), TK_BENCH_CATCHUP_TRACE (a file: one line per GET through
// the counting proxy, with the store's time to answer, the body's time
// and the time the broker was quiet before it).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/stats"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// catchupVariant is one topic offloaded one way.
type catchupVariant struct {
	name     string
	block    int // MiB; 0: the broker's own offloader
	topic    string
	ledgers  []int64 // offloaded
	offBytes int64   // payload bytes of the offloaded ledgers (managed-ledger sizes)
	reads    []catchupRead
}

// catchupRead is one Reader run.
type catchupRead struct {
	pos                         int // 0-based place of the read in its round
	mbps, first, seconds        float64
	dataBytes, indexBytes, gets int64
	count, payloadBytes         int64
	digest                      string
}

func BenchmarkCatchup(b *testing.B) {
	mib := testenv.EnvInt(b, "TK_BENCH_CATCHUP_MIB", 1024)
	msg := testenv.EnvInt(b, "TK_BENCH_CATCHUP_MSG", 65536)
	ledgerMiB := testenv.EnvInt(b, "TK_BENCH_CATCHUP_LEDGER_MIB", 256)
	blocks := testenv.EnvInts(b, "TK_BENCH_CATCHUP_BLOCKS", []int{10, 64})
	rounds := testenv.EnvInt(b, "TK_BENCH_ROUNDS", 3)
	warmMiB := testenv.EnvInt(b, "TK_BENCH_CATCHUP_WARM_MIB", 1024)
	if msg <= 0 || mib <= 0 || ledgerMiB <= 0 || rounds <= 0 {
		b.Fatalf("TK_BENCH_CATCHUP_MIB, _MSG, _LEDGER_MIB and TK_BENCH_ROUNDS must be positive")
	}
	perLedger := max(1, ledgerMiB<<20/msg)
	// Whole ledgers, then one message more: the ledgers before it are
	// closed and offloaded, the last (current) one holds one message.
	count := (mib<<20/msg+perLedger-1)/perLedger*perLedger + 1

	var c counter
	if f := os.Getenv("TK_BENCH_CATCHUP_TRACE"); f != "" {
		tf, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = tf.Close() })
		c.trace = tf
	}
	s3 := testenv.StartS3(b)
	px := c.proxy(s3.Endpoint)
	b.Cleanup(px.Close)
	bucket := s3.NewBucket(b)
	off := testenv.S3Offload(s3, bucket)
	off.Endpoint = px.URL // the broker writes and reads the store through the counter
	st := testenv.StartStack(b, testenv.StackOptions{Broker: testenv.BrokerOptions{
		Offload: off, MaxEntriesPerLedger: perLedger, DeletionLag: time.Millisecond,
		Heap: "512m", DirectMemory: "512m",
		// A fixed, pre-touched heap, as Pulsar's own start script gives a
		// broker (-Xms = -Xmx, -XX:+AlwaysPreTouch), not the harness's
		// 16 MiB start that grows while the reads run.
		JVMArgs: []string{"-Xms512m", "-XX:+AlwaysPreTouch"},
	}})
	st.Java.Timeout = 30 * time.Minute
	store := s3test.StoreFile(b, st.S3, bucket) // tierkeeper writes straight to versitygw
	bin := testenv.BuiltCommand(b, "offloader")
	ctx := context.Background()
	bkmeta, err := metadata.NewStore(ctx, st.ZK.Session(b, tkzk.Options{SessionTimeout: 10 * time.Second}), metadata.StoreOptions{Root: st.BK.LedgersRoot})
	if err != nil {
		b.Fatal(err)
	}
	run := time.Now().Unix()
	var vs []*catchupVariant
	for _, bm := range blocks {
		vs = append(vs, &catchupVariant{name: fmt.Sprintf("tk-%dMiB", bm), block: bm})
	}
	vs = append(vs, &catchupVariant{name: "pulsar-64MiB"})
	b.Logf("catch-up read: %d messages of %d B per topic (%.0f MiB), %d per ledger, variants %s, %d rounds; load before: %s",
		count, msg, float64(count)*float64(msg)/(1<<20), perLedger, variantNames(vs), rounds, testenv.LoadAvg())
	for _, v := range vs {
		v.topic = fmt.Sprintf("persistent://public/default/catchup-%d-%s", run, v.name)
		start := time.Now()
		produceChunks(b, ctx, st, v.topic, count, msg)
		b.Logf("%s: produced in %s; load %s", v.name, time.Since(start).Round(time.Second), testenv.LoadAvg())
		start = time.Now()
		if v.block > 0 {
			offloadCatchup(b, ctx, bin, st, store, v)
		} else {
			brokerOffload(b, ctx, st, v)
		}
		checkOffloadedGone(b, ctx, st, bkmeta, v, count)
		b.Logf("%s: %d ledgers (%.0f MiB) offloaded, BookKeeper copies deleted, in %s; load %s",
			v.name, len(v.ledgers), float64(v.offBytes)/(1<<20), time.Since(start).Round(time.Second), testenv.LoadAvg())
	}
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			st.Broker.Restart(b)
			warmUp(b, ctx, st, vs[(r+len(vs)-1)%len(vs)], msg, min(warmMiB, mib))
			for k := range vs {
				v := vs[(k+r)%len(vs)]
				rd := readCatchup(b, ctx, st, &c, v, count)
				rd.pos = k
				v.reads = append(v.reads, rd)
				b.Logf("round %d %-12s: %6.1f MB/s (%.1fs), first message %.2fs, fetched %.1f MiB data (%.3fx the offloaded bytes) + %.1f KiB index in %d GETs; load %s",
					r+1, v.name, rd.mbps, rd.seconds, rd.first, float64(rd.dataBytes)/(1<<20), float64(rd.dataBytes)/float64(v.offBytes),
					float64(rd.indexBytes)/(1<<10), rd.gets, testenv.LoadAvg())
			}
		}
	}
	checkSameContent(b, vs)
	reportCatchup(b, vs)
}

func variantNames(vs []*catchupVariant) string {
	var n []string
	for _, v := range vs {
		n = append(n, v.name)
	}
	return strings.Join(n, ",")
}

// produceChunks sends count messages of size bytes to topic (seed 41,
// indexes 0..count-1), in producer runs of at most 64 MiB each (the Java
// tool keeps a run's payloads in memory until acknowledged).
func produceChunks(b *testing.B, ctx context.Context, st *testenv.Stack, topic string, count, size int) {
	chunk := max(1, (64<<20)/size)
	for first := 0; first < count; first += chunk {
		n := min(chunk, count-first)
		m, err := st.Java.Produce(ctx, st.Broker, topic, testenv.ProduceOptions{Count: n, Seed: 41, FirstIndex: int64(first), Size: size})
		if err != nil {
			b.Fatalf("produce %d messages from %d to %s: %v", n, first, topic, err)
		}
		if m.Count != int64(n) {
			b.Fatalf("produced %d messages to %s, want %d", m.Count, topic, n)
		}
	}
}

// offloadCatchup runs `offloader offload` on v's topic with v's block
// size, deleting the BookKeeper copies and reloading the topic through
// the broker's admin API. A failed run (a bookie read timing out on a
// loaded machine) is run again, at most three times in all: the command
// resumes from what the metadata records.
func offloadCatchup(b *testing.B, ctx context.Context, bin string, st *testenv.Stack, store string, v *catchupVariant) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	for attempt := 1; ; attempt++ {
		cmd := exec.CommandContext(ctx, bin, "offload", "-o", "json", "--zk", st.ZK.Addr, "--store", store, "--admin-url", st.Broker.WebURL,
			"--delete-bookkeeper", "--block-size", fmt.Sprintf("%dMiB", v.block), v.topic)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			if attempt < 3 && ctx.Err() == nil {
				b.Logf("offloader offload %s (attempt %d): %v: %.300s; running it again", v.topic, attempt, err, strings.TrimSpace(errb.String()))
				continue
			}
			b.Fatalf("offloader offload %s: %v\n%s\n%s", v.topic, err, out.String(), errb.String())
		}
		var res producingRun
		if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.ManagedLedgers) != 1 {
			b.Fatalf("offloader output: %v %s", err, out.String())
		}
		return
	}
}

// brokerOffload has the broker's own offloader offload every ledger
// before the current one and waits (≤ 20 min) for it to finish.
func brokerOffload(b *testing.B, ctx context.Context, st *testenv.Stack, v *catchupVariant) {
	is, err := st.Broker.InternalStats(ctx, v.topic)
	if err != nil || len(is.Ledgers) < 2 {
		b.Fatalf("internalStats of %s: %v %+v", v.topic, err, is)
	}
	last := is.Ledgers[len(is.Ledgers)-1].LedgerID
	if err := st.Broker.OffloadPrefix(ctx, v.topic, last, 0); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Minute)
	for {
		s, err := st.Broker.OffloadStatus(ctx, v.topic)
		if err != nil {
			b.Fatal(err)
		}
		if s.Status == "SUCCESS" {
			return
		}
		if s.Status == "ERROR" || time.Now().After(deadline) {
			b.Fatalf("broker offload of %s: %+v (waited until %s)", v.topic, s, deadline.Format(time.TimeOnly))
		}
		time.Sleep(time.Second)
	}
}

// checkOffloadedGone records v's offloaded ledgers (a prefix of the
// topic's ledgers holding all messages but at most the last one) and waits (≤ 3 min: the
// broker's trimmer runs every 3 s) until none of them is left in
// BookKeeper.
func checkOffloadedGone(b *testing.B, ctx context.Context, st *testenv.Stack, bk *metadata.Store, v *catchupVariant, count int) {
	info, err := st.Broker.InternalInfo(ctx, v.topic)
	if err != nil {
		b.Fatal(err)
	}
	v.ledgers, v.offBytes = nil, 0
	var entries int64
	// internal-info does not list the ledgers in id order.
	sort.Slice(info.Ledgers, func(i, j int) bool { return info.Ledgers[i].LedgerID < info.Ledgers[j].LedgerID })
	for i, l := range info.Ledgers {
		if !l.IsOffloaded {
			continue
		}
		if i != len(v.ledgers) {
			b.Fatalf("%s: ledger %d is offloaded after one that is not: %+v", v.topic, l.LedgerID, info.Ledgers)
		}
		v.ledgers = append(v.ledgers, l.LedgerID)
		v.offBytes += l.Size
		entries += l.Entries
	}
	// The last message is in the ledger that was current at the offload;
	// a rerun of offloader offload after a reload closed it offloads it too.
	if entries != int64(count-1) && entries != int64(count) {
		b.Fatalf("%s: %d entries offloaded, want all but the last of %d: %+v", v.topic, entries, count, info.Ledgers)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, id := range v.ledgers {
		for {
			_, err := bk.ReadLedger(ctx, id)
			if errors.Is(err, metadata.ErrNoSuchLedger) {
				break
			}
			if err != nil {
				b.Fatalf("ledger %d metadata: %v", id, err)
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: BookKeeper ledger %d still there at %s", v.topic, id, deadline.Format(time.TimeOnly))
			}
			time.Sleep(time.Second)
		}
	}
}

// readCatchup reads v's topic from the earliest position with a Reader
// and counts what the broker fetched from the store meanwhile.
func readCatchup(b *testing.B, ctx context.Context, st *testenv.Stack, c *counter, v *catchupVariant, count int) catchupRead {
	c.data.Store(0)
	c.index.Store(0)
	c.gets.Store(0)
	m, err := st.Java.ReadAll(ctx, st.Broker, v.topic, testenv.ReadOptions{Expect: count, Timeout: 20 * time.Minute, SummaryOnly: true})
	if err != nil {
		b.Fatalf("read %s: %v", v.topic, err)
	}
	rd := catchupRead{seconds: m.Seconds, first: m.FirstMessageSeconds, mbps: mbps(m.Bytes, m.Seconds),
		dataBytes: c.data.Load(), indexBytes: c.index.Load(), gets: c.gets.Load(), count: m.Count, payloadBytes: m.Bytes, digest: m.SHA256OfAllPayloads}
	if m.Count != int64(count) {
		b.Fatalf("read %d messages of %s, want %d", m.Count, v.topic, count)
	}
	if rd.dataBytes < v.offBytes*9/10 {
		b.Fatalf("read of %s fetched %d bytes from the store for %d offloaded bytes: not read from the store", v.topic, rd.dataBytes, v.offBytes)
	}
	if err := st.Broker.Unload(ctx, v.topic); err != nil {
		b.Fatalf("unload %s: %v", v.topic, err)
	}
	return rd
}

// warmUp reads the first mib MiB of v's topic and unloads it, so that no
// measured read pays for the restarted broker's first offloaded read
// (offloader start-up, connections, cold code); the round's last read is
// v's, long after the unload dropped what this read loaded.
func warmUp(b *testing.B, ctx context.Context, st *testenv.Stack, v *catchupVariant, msg, mib int) {
	if _, err := st.Java.ReadAll(ctx, st.Broker, v.topic, testenv.ReadOptions{Expect: max(1, (mib<<20)/msg), Timeout: 5 * time.Minute, SummaryOnly: true}); err != nil {
		b.Fatalf("warm-up read of %s: %v", v.topic, err)
	}
	if err := st.Broker.Unload(ctx, v.topic); err != nil {
		b.Fatalf("unload %s: %v", v.topic, err)
	}
}

// checkSameContent fails unless every read of every variant got the same
// messages (count, bytes, digest of all payloads in order).
func checkSameContent(b *testing.B, vs []*catchupVariant) {
	ref := vs[0].reads[0]
	for _, v := range vs {
		for i, r := range v.reads {
			if r.count != ref.count || r.payloadBytes != ref.payloadBytes || r.digest != ref.digest {
				b.Fatalf("%s read %d: %d messages, %d bytes, digest %s; %s read 1: %d, %d, %s",
					v.name, i+1, r.count, r.payloadBytes, r.digest, vs[0].name, ref.count, ref.payloadBytes, ref.digest)
			}
		}
	}
}

// catchupMedians are a variant's medians over its reads.
type catchupMedians struct{ mbps, first, data, index, gets float64 }

func medians(v *catchupVariant) catchupMedians {
	var mb, fi, da, ix, gs []float64
	for _, r := range v.reads {
		mb, fi, da = append(mb, r.mbps), append(fi, r.first), append(da, float64(r.dataBytes))
		ix, gs = append(ix, float64(r.indexBytes)), append(gs, float64(r.gets))
	}
	return catchupMedians{stats.Median(mb), stats.Median(fi), stats.Median(da), stats.Median(ix), stats.Median(gs)}
}

// reportCatchup prints the side-by-side table (medians) and each
// tierkeeper variant against the broker's own offload.
func reportCatchup(b *testing.B, vs []*catchupVariant) {
	ref := medians(vs[len(vs)-1])
	refBytes := ref.data + ref.index
	b.Logf("RESULT catch-up read through the broker, medians of %d reads each:", len(vs[0].reads))
	b.Logf("RESULT | variant | MB/s | first message | fetched from the store | vs offloaded bytes | GETs | MB/s vs Pulsar | bytes vs Pulsar |")
	b.Logf("RESULT |---|---|---|---|---|---|---|---|")
	best, bestMBps := "", 0.0
	for _, v := range vs {
		m := medians(v)
		fetched := m.data + m.index
		b.Logf("RESULT | %s | %.1f | %.2f s | %.1f MiB | %.3fx | %.0f | %.2fx | %.3fx |",
			v.name, m.mbps, m.first, fetched/(1<<20), m.data/float64(v.offBytes), m.gets, m.mbps/ref.mbps, fetched/refBytes)
		if v.block > 0 {
			tag := ""
			if m.mbps >= ref.mbps && fetched <= 1.1*refBytes {
				tag = " (goal met: >= 1.0x MB/s, <= 1.1x bytes)"
			}
			b.ReportMetric(m.mbps/ref.mbps, v.name+"/pulsar-MB/s")
			b.ReportMetric(fetched/refBytes, v.name+"/pulsar-bytes")
			b.Logf("RESULT %s against pulsar-64MiB: %.2fx the MB/s, %.3fx the bytes%s", v.name, m.mbps/ref.mbps, fetched/refBytes, tag)
			if fetched <= 1.1*refBytes && m.mbps > bestMBps {
				best, bestMBps = v.name, m.mbps
			}
		}
	}
	b.ReportMetric(ref.mbps, "pulsar-MB/s")
	if best == "" {
		b.Logf("RESULT no tierkeeper block size fetched <= 1.1x Pulsar's bytes")
		return
	}
	b.Logf("RESULT fastest tierkeeper block size within 1.1x Pulsar's bytes: %s", best)
	reportPositions(b, vs)
}

// reportPositions logs each variant's MB/s by the read's place in its
// round and, when every variant was read equally often in every place (the
// rounds a multiple of the variants: the rotation), the mean over the
// rounds, which weighs the places alike. The first read of a round was
// mostly the slowest, even after a 256 MiB warm-up (the cause is not
// known); the median of 3 then compares one variant's second place with
// another's.
func reportPositions(b *testing.B, vs []*catchupVariant) {
	n := len(vs)
	balanced := len(vs[0].reads)%n == 0
	means := make([]float64, n)
	for i, v := range vs {
		by := make([][]string, n)
		for _, rd := range v.reads {
			by[rd.pos] = append(by[rd.pos], fmt.Sprintf("%.1f", rd.mbps))
			means[i] += rd.mbps / float64(len(v.reads))
		}
		var places []string
		for p, l := range by {
			places = append(places, fmt.Sprintf("place %d: %s", p+1, strings.Join(l, ", ")))
		}
		b.Logf("RESULT %s MB/s by place in the round: %s", v.name, strings.Join(places, "; "))
	}
	if !balanced {
		return
	}
	ref := means[n-1]
	for i, v := range vs[:n-1] {
		b.Logf("RESULT %s against %s, means over the rounds (every place alike): %.1f against %.1f MB/s, %.2fx", v.name, vs[n-1].name, means[i], ref, means[i]/ref)
		b.ReportMetric(means[i]/ref, v.name+"/pulsar-mean-MB/s")
	}
}
