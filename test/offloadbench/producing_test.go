package offloadbench

// make bench-offload-producing
// go test -run '^$' -bench BenchmarkOffloadWhileProducing -benchtime 1x -timeout 60m ./test/offloadbench/
//
// The producer's stall while offloads commit, with a stock Pulsar 4.0.8
// broker (ZooKeeper, three bookies, versitygw, the broker offloading to
// it; ledgers of 100 entries, as in TestOffloadWhileProducing): a Pulsar
// Java producer sends at a steady rate (400 msg/s of 1500 bytes: a ledger
// rollover every 0.25 s) while `offloader offload --delete-bookkeeper
// --admin-url ...` runs several rounds on its topic. Per run (a fresh topic
// each), over the messages due from the first round's start to the end:
//
//   max publish latency  ackMs - dueMs (the rate's schedule, so time the
//                        producer spent blocked counts)
//   p99 latency
//   longest ack gap      the longest time without any acknowledgement
//   failed sends         sends that timed out (30 s) or failed
//   topic opens          managed-ledger opens of the topic in the broker log
//                        (each one a reload: unload, or fence and reconnect),
//                        opens that failed on BadVersion, fences, unloads
//
// Variants, run in the same session with the order rotated every round:
// "none" (the producer alone for as long, rollovers only), "tk" (this
// tree's offloader) and, with TK_BENCH_BASE_REV=<git rev>, "base" (the
// offloader built from that revision, e.g. the one before batching).
//
// Knobs: TK_BENCH_ROUNDS (runs per variant, 3), TK_BENCH_OFFLOAD_ROUNDS
// (offload rounds per run, 5), TK_BENCH_RATE (msg/s, 400), TK_BENCH_SIZE
// (message bytes, 1500; larger ledgers take longer to copy, which spreads
// per-ledger metadata writes over more of the broker's rollovers),
// TK_BENCH_GAP_MS (pause between offload rounds, 2000), TK_BENCH_BROKER_LOG
// (copy the broker's log there at the end).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/stats"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// stall is what one run measured.
type stall struct {
	maxLatency, p99Latency, maxGap float64 // ms
	failed                         int64
	acked                          int64
	log                            brokerLog
	offloaded                      int
	offloadSeconds                 float64 // sum of the offload runs' wall times
	errors                         []string
}

func BenchmarkOffloadWhileProducing(b *testing.B) {
	rounds := testenv.EnvInt(b, "TK_BENCH_ROUNDS", 3)
	offloadRounds := testenv.EnvInt(b, "TK_BENCH_OFFLOAD_ROUNDS", 5)
	rate := testenv.EnvInt(b, "TK_BENCH_RATE", 400)
	size := testenv.EnvInt(b, "TK_BENCH_SIZE", 1500)
	gap := time.Duration(testenv.EnvInt(b, "TK_BENCH_GAP_MS", 2000)) * time.Millisecond
	st := testenv.StartStack(b, testenv.StackOptions{})
	st.Java.Timeout = 10 * time.Minute
	bins := map[string]string{"tk": testenv.BuiltCommand(b, "offloader")}
	variants := []string{"none", "tk"}
	if rev := os.Getenv("TK_BENCH_BASE_REV"); rev != "" {
		bins["base"] = buildOffloaderAt(b, rev)
		variants = append(variants, "base")
	}
	store := s3test.StoreFile(b, st.S3, st.Bucket)
	b.Logf("offload while producing: %d msg/s of %d B, %d entries per ledger, %d offload rounds %s apart per run, %d runs per variant %v; load before: %s",
		rate, size, 100, offloadRounds, gap, rounds, variants, testenv.LoadAvg())
	res := map[string][]stall{}
	seq := 0
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for k := range variants {
				v := variants[(k+r)%len(variants)]
				seq++
				s := runProducing(b, st, bins[v], store, fmt.Sprintf("bench-producing-%d-%s-%d", time.Now().UnixNano(), v, seq), rate, size, offloadRounds, gap)
				res[v] = append(res[v], s)
				b.Logf("run %d %-4s: max latency %6.0f ms, p99 %5.0f ms, longest ack gap %6.0f ms, failed sends %d, topic opens %2d (failed %d; fences %d, unloads %d), %d ledgers offloaded in %.1fs, %d acked; load %s%s",
					r+1, v, s.maxLatency, s.p99Latency, s.maxGap, s.failed, s.log.opens, s.log.failedOpens, s.log.fences, s.log.unloads, s.offloaded, s.offloadSeconds, s.acked, testenv.LoadAvg(), errSuffix(s.errors))
			}
		}
	}
	if keep := os.Getenv("TK_BENCH_BROKER_LOG"); keep != "" {
		if raw, err := os.ReadFile(st.Broker.LogPath()); err == nil {
			_ = os.WriteFile(keep, raw, 0o644)
		}
	}
	for _, v := range variants {
		rs := res[v]
		var lat, p99, gapv, rel, fail []float64
		var failed int64
		var off int
		for _, s := range rs {
			lat, p99, gapv, rel = append(lat, s.maxLatency), append(p99, s.p99Latency), append(gapv, s.maxGap), append(rel, float64(s.log.opens))
			fail = append(fail, float64(s.log.failedOpens))
			failed += s.failed
			off += s.offloaded
		}
		b.Logf("RESULT %-4s (median of %d runs): max publish latency %.0f ms (worst %.0f), p99 %.0f ms, longest ack gap %.0f ms (worst %.0f), topic opens %.0f per run (failed opens %.0f), failed sends %d in all, %d ledgers offloaded in all",
			v, len(rs), stats.Median(lat), maxOf(lat), stats.Median(p99), stats.Median(gapv), maxOf(gapv), stats.Median(rel), stats.Median(fail), failed, off)
		if v != "none" {
			b.ReportMetric(stats.Median(lat), v+"-max-latency-ms")
			b.ReportMetric(stats.Median(gapv), v+"-max-ack-gap-ms")
			b.ReportMetric(stats.Median(rel), v+"-opens")
		}
	}
}

func errSuffix(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return "; errors: " + strings.Join(errs, "; ")
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// runProducing is one run on a fresh topic: warm-up, then offloadRounds
// offload runs (none when bin is empty: the producer alone for as long),
// then the producer's figures over the messages due since the first round.
func runProducing(b *testing.B, st *testenv.Stack, bin, store, name string, rate, size, offloadRounds int, gap time.Duration) stall {
	ctx := context.Background()
	topic := "persistent://public/default/" + name
	logBefore := logSize(st.Broker.LogPath())
	p := st.Java.StartProducer(b, st.Broker, topic, testenv.KeepProducingOptions{Rate: float64(rate), Seed: 31, Size: size, MaxDuration: 10 * time.Minute})
	if err := p.WaitAcked(2*rate, 90*time.Second); err != nil {
		b.Fatal(err)
	}
	from := lastAckMs(p)
	var s stall
	for k := 0; k < offloadRounds; k++ {
		start := time.Now()
		if bin != "" {
			res, err := offloadProducing(ctx, bin, st, store, topic)
			if err != nil {
				s.errors = append(s.errors, err.Error())
			}
			if res != nil {
				for _, ml := range res.ManagedLedgers {
					for _, l := range ml.Ledgers {
						if l.Outcome == "offloaded" || l.Outcome == "adopted" {
							s.offloaded++
						}
					}
				}
			}
		} else {
			time.Sleep(3 * time.Second)
		}
		s.offloadSeconds += time.Since(start).Seconds()
		time.Sleep(gap)
	}
	pr, err := p.Stop()
	if err != nil {
		b.Fatal(err)
	}
	s.failed, s.acked = pr.Failed, pr.Acked
	var lats, acks []float64
	for _, m := range pr.AckedMessages {
		if m.DueMs >= from {
			lats = append(lats, m.AckMs-m.DueMs)
		}
		if m.AckMs >= from {
			acks = append(acks, m.AckMs)
		}
	}
	sort.Float64s(lats)
	sort.Float64s(acks)
	if len(lats) > 0 {
		s.maxLatency = lats[len(lats)-1]
		s.p99Latency = lats[min(len(lats)-1, len(lats)*99/100)]
	}
	for i := 1; i < len(acks); i++ {
		s.maxGap = max(s.maxGap, acks[i]-acks[i-1])
	}
	s.log = countLog(st.Broker.LogPath(), logBefore, name)
	return s
}

// lastAckMs is the latest acknowledgement time recorded so far.
func lastAckMs(p *testenv.RunningProducer) float64 {
	ms, err := p.AckedSoFar()
	if err != nil {
		return 0
	}
	last := 0.0
	for _, m := range ms {
		last = max(last, m.AckMs)
	}
	return last
}

// producingRun is the part of `offloader offload -o json` read here.
type producingRun struct {
	ManagedLedgers []struct {
		Ledgers []struct {
			Outcome string `json:"outcome"`
		} `json:"ledgers"`
	} `json:"managedLedgers"`
}

func offloadProducing(ctx context.Context, bin string, st *testenv.Stack, store, topic string) (*producingRun, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "offload", "-o", "json", "--zk", st.ZK.Addr, "--store", store, "--admin-url", st.Broker.WebURL, "--delete-bookkeeper", topic)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var res producingRun
	if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
		return nil, fmt.Errorf("offloader: %v %v: %s", err, jerr, strings.TrimSpace(errb.String()))
	}
	if err != nil {
		return &res, fmt.Errorf("offloader: %v: %.300s", err, strings.TrimSpace(errb.String()))
	}
	return &res, nil
}

// logSize is a file's size (where the lines appended later begin).
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// brokerLog counts what the broker logged about one topic's managed
// ledger.
type brokerLog struct {
	opens, failedOpens, fences, unloads int
}

// Broker log markers (Pulsar 4.0.8, INFO).
var logMarkers = []struct {
	text string
	n    func(*brokerLog) *int
}{
	{"Successfully initialize managed ledger", func(l *brokerLog) *int { return &l.opens }},    // ManagedLedgerFactoryImpl
	{"Failed to initialize managed ledger", func(l *brokerLog) *int { return &l.failedOpens }}, // an open lost a BadVersion race
	{"Moving to Fenced state", func(l *brokerLog) *int { return &l.fences }},                   // a write of the ML met another's version
	{"Unloading topic", func(l *brokerLog) *int { return &l.unloads }},                         // the admin unload
}

// countLog counts the markers on the broker log lines from byte offset
// from on that name the topic (name is unique per run).
func countLog(path string, from int64, name string) brokerLog {
	var out brokerLog
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return out
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.Contains(l, name) {
			continue
		}
		for _, m := range logMarkers {
			if strings.Contains(l, m.text) {
				*m.n(&out)++
			}
		}
	}
	return out
}

// buildOffloaderAt builds cmd/offloader as of git revision rev (an export
// of that tree, built with the module cache).
func buildOffloaderAt(b *testing.B, rev string) string {
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	arch := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive %q | tar -x -C %q", testenv.RepoRoot(), rev, src))
	if _, err := testenv.RunTool(context.Background(), 5*time.Minute, arch); err != nil {
		b.Fatalf("git archive %s: %v", rev, err)
	}
	p := filepath.Join(dir, "offloader-"+rev)
	cmd := exec.Command("go", "build", "-o", p, "./cmd/offloader")
	cmd.Dir = src
	if _, err := testenv.RunTool(context.Background(), 10*time.Minute, cmd); err != nil {
		b.Fatalf("go build at %s: %v", rev, err)
	}
	return p
}
