package offloadbench

// make bench-offload-producing (with BenchmarkOffloadWhileProducing)
// go test -run '^$' -bench BenchmarkServiceWhileProducing -benchtime 1x -timeout 60m ./test/offloadbench/
//
// What the service's reloads cost producers: a Pulsar Java producer sends
// TK_BENCH_SVC_RATE msg/s (40) of 1 KiB to a fresh topic for
// TK_BENCH_SVC_SECONDS (120) while `offloader run` (in process, one
// replica) offloads every closed ledger (policy after: 0s; each commit is
// followed by an unload of the topic). Variants: "none" (no service),
// "unbounded" (scheduler.min_reload_interval 0s: a job, a commit and an
// unload as soon as a ledger closes) and "bounded"
// (min_reload_interval TK_BENCH_SVC_BOUND, 30s: the ledgers that close
// meanwhile go in one job); TK_BENCH_SVC_VARIANTS=unbounded,bounded picks
// some. Per run, after the producer stopped, the topic
// is read back from the earliest position through the broker:
//
//   duplicates      messages stored more than once (read − distinct indices;
//                   a send that the client retried after a reconnect)
//   ledgers/hour    ledgers of the managed ledger at the end, per hour of
//                   producing (the broker rolls one every 100 entries, and
//                   every unload or fence closes the current one)
//   unloads, fences broker log lines for the topic
//   commits         jobs that committed (the service's Done counts ledgers)

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// serviceRun is what one run measured.
type serviceRun struct {
	produced, read, distinct int
	ledgers                  int
	seconds                  float64
	offloaded                int
	log                      brokerLog
}

func (r serviceRun) duplicates() int { return r.read - r.distinct }
func (r serviceRun) ledgersPerHour() float64 {
	return float64(r.ledgers) / r.seconds * 3600
}

func BenchmarkServiceWhileProducing(b *testing.B) {
	rate := testenv.EnvInt(b, "TK_BENCH_SVC_RATE", 40)
	secs := testenv.EnvInt(b, "TK_BENCH_SVC_SECONDS", 120)
	bound := testenv.EnvInt(b, "TK_BENCH_SVC_BOUND", 30)
	// A loaded machine can take minutes to start a broker.
	st := testenv.StartStack(b, testenv.StackOptions{Broker: testenv.BrokerOptions{StartTimeout: 6 * time.Minute}})
	st.Java.Timeout = 10 * time.Minute
	variants := []struct{ name, interval string }{{"none", ""}, {"unbounded", "0s"}, {"bounded", fmt.Sprintf("%ds", bound)}}
	if only := os.Getenv("TK_BENCH_SVC_VARIANTS"); only != "" { // e.g. "unbounded,bounded"
		variants = slices.DeleteFunc(variants, func(v struct{ name, interval string }) bool {
			return !slices.Contains(strings.Split(only, ","), v.name)
		})
	}
	b.Logf("service while producing: %d msg/s of 1 KiB for %ds, 100 entries per ledger, policy after 0s; bounded = min_reload_interval %ds; load before: %s",
		rate, secs, bound, testenv.LoadAvg())
	for i := 0; i < b.N; i++ {
		for _, v := range variants {
			name := fmt.Sprintf("bench-svc-%d-%s", time.Now().UnixNano(), v.name)
			r := runServiceProducing(b, st, name, v.interval, rate, time.Duration(secs)*time.Second)
			b.Logf("RESULT %-9s: %d produced, %d read back, %d duplicates (%.2f per 1000), %d ledgers = %.0f ledgers/hour, %d unloads, %d fences, %d topic opens, %d ledgers offloaded; load %s",
				v.name, r.produced, r.read, r.duplicates(), 1000*float64(r.duplicates())/float64(max(1, r.produced)), r.ledgers, r.ledgersPerHour(),
				r.log.unloads, r.log.fences, r.log.opens, r.offloaded, testenv.LoadAvg())
			b.ReportMetric(float64(r.duplicates()), v.name+"-duplicates")
			b.ReportMetric(r.ledgersPerHour(), v.name+"-ledgers/h")
		}
	}
}

func runServiceProducing(b *testing.B, st *testenv.Stack, name, interval string, rate int, d time.Duration) serviceRun {
	ctx := context.Background()
	topic := "persistent://public/default/" + name
	logBefore := logSize(st.Broker.LogPath())
	var svc *offloader.Service
	stop := func() {}
	if interval != "" {
		doc := fmt.Sprintf("zookeeper: {servers: %q, session_timeout: 10s, connect_timeout: 10s}\nbookkeeper: {ledgers_root: %q}\nadmin: {url: %q, timeout: 10s}\n",
			st.ZK.Addr, st.BK.LedgersRoot, st.Broker.WebURL) + s3test.StoreYAML(st.S3, st.Bucket, "TK_S3_SECRET") + fmt.Sprintf(`
scheduler: {interval: 1s, retry_initial: 1s, retry_max: 5s, stop_timeout: 10s, min_reload_interval: %s}
leases: {root: /tierkeeper/bench-leases/%s}
policy:
  include: ["public/default/%s"]
  default: {after: 0s, verify: index}
`, interval, name, name)
		cfg, err := offloader.Parse([]byte(doc), offloader.ParseOptions{Getenv: func(string) string { return st.S3.SecretKey }})
		if err != nil {
			b.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		svc, err = offloader.New(ctx, cfg, offloader.Deps{Listener: ln, Registerer: prometheus.NewRegistry()})
		if err != nil {
			b.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- svc.Run(sctx) }()
		stop = func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				b.Error("service did not stop within 30s")
			}
		}
	}
	start := time.Now()
	p := st.Java.StartProducer(b, st.Broker, topic, testenv.KeepProducingOptions{Rate: float64(rate), Seed: 37, Size: 1024, MaxDuration: d + time.Minute})
	time.Sleep(d)
	pr, err := p.Stop()
	seconds := time.Since(start).Seconds()
	stop()
	if err != nil {
		b.Fatal(err)
	}
	var r serviceRun
	r.produced, r.seconds = int(pr.Acked), seconds
	if svc != nil {
		r.offloaded = svc.Status().Done.OffloadedLedgers
	}
	read, err := st.Java.ReadAll(ctx, st.Broker, topic, testenv.ReadOptions{Timeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, m := range read.Messages {
		seen[m.Index] = true
	}
	r.read, r.distinct = len(read.Messages), len(seen)
	if r.distinct < r.produced {
		b.Errorf("%s: %d acknowledged messages, %d distinct read back", name, r.produced, r.distinct)
	}
	r.ledgers = countLedgers(b, st, topic)
	r.log = countLog(st.Broker.LogPath(), logBefore, name)
	return r
}

// countLedgers is the number of ledgers the topic's managed ledger lists.
func countLedgers(b *testing.B, st *testenv.Stack, topic string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := tzk.Connect(ctx, strings.Split(st.ZK.Addr, ","), tzk.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	ml, err := mledger.MLNameForTopic(topic)
	if err != nil {
		b.Fatal(err)
	}
	snap, err := mledger.New(sess, nil).Get(ctx, ml)
	if err != nil {
		b.Fatal(err)
	}
	return len(snap.Info.GetLedgerInfo())
}
