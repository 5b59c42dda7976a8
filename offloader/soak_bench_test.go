package offloader

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

type lagSample struct {
	at                      time.Duration
	lagBytes, offloaded, bk int64
	lagSeconds              float64
}

// BenchmarkSoak runs a stock Pulsar 4.0.8 broker under a steady produce
// load (200 msg/s of 1 KiB, ledgers rolling every 1000 entries) for
// TIERKEEPER_SOAK_SECONDS (default 180) while the service offloads by a
// 30-second age policy and trims BookKeeper 20 s after each commit. It
// samples the offload lag every 5 s, then checks that every acknowledged
// message reads back through the broker and that a sweep finds no orphan.
// The lag curve goes to TIERKEEPER_SOAK_OUT (default
// .cache/bench-soak/lag.svg and .csv). `make bench-soak` runs it.
func BenchmarkSoak(b *testing.B) {
	dur := 180 * time.Second
	if v, err := strconv.Atoi(os.Getenv("TIERKEEPER_SOAK_SECONDS")); err == nil && v > 0 {
		dur = time.Duration(v) * time.Second
	}
	out := os.Getenv("TIERKEEPER_SOAK_OUT")
	if out == "" {
		out = filepath.Join(testenv.CacheDir(), "bench-soak")
	}
	zk := testenv.StartZooKeeper(b)
	bk := testenv.StartBookies(b, zk, 3)
	java := testenv.Java(b)
	s3 := testenv.StartS3(b)
	bucket := s3.NewBucket(b)
	broker := testenv.StartBroker(b, bk, testenv.BrokerOptions{Offload: testenv.S3Offload(s3, bucket), MaxEntriesPerLedger: 1000})
	doc := fmt.Sprintf("zookeeper: {servers: %q, session_timeout: 10s}\nbookkeeper: {ledgers_root: %q}\n", zk.Addr, bk.LedgersRoot) +
		s3test.StoreYAML(s3, bucket, "TK_S3_SECRET") + fmt.Sprintf(`
admin: {url: %q}
scheduler: {interval: 2s, retry_initial: 2s, retry_max: 20s, min_reload_interval: 0s}
policy:
  default: {after: 30s, deletion_lag: 20s}
`, broker.WebURL)
	cfg := parseConfig(b, doc, s3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logf, err := os.Create(filepath.Join(b.TempDir(), "service.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	svcLog := slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	svc := startService(b, ctx, cfg, Deps{Logger: svcLog})

	const topic = "persistent://public/default/soak"
	prod := java.StartProducer(b, broker, topic, testenv.KeepProducingOptions{Rate: 200, Size: 1024, MaxDuration: dur + time.Minute})
	if err := prod.WaitAcked(1, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	var samples []lagSample
	sample := func() lagSample {
		st := svc.Status()
		s := lagSample{at: time.Since(start), lagBytes: st.Totals.LagBytes, lagSeconds: st.Totals.LagSeconds,
			offloaded: st.Totals.OffloadedBytes, bk: st.Totals.BKBytes}
		samples = append(samples, s)
		return s
	}
	for time.Since(start) < dur {
		time.Sleep(5 * time.Second)
		sample()
	}
	res, err := prod.Stop()
	if err != nil {
		b.Fatal(err)
	}
	// Drain: closed ledgers offload once 30 s old.
	drainStart := time.Now()
	for time.Since(drainStart) < 2*time.Minute {
		time.Sleep(5 * time.Second)
		if s := sample(); s.lagBytes == 0 && time.Since(drainStart) > 40*time.Second {
			break
		}
	}
	b.StopTimer()
	// Every acknowledged message reads back through the broker.
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer rcancel()
	// Read everything (a producer's resent messages may make the topic hold
	// more than the acknowledged count) and look for every acknowledged id.
	read, err := java.ReadAll(rctx, broker, topic, testenv.ReadOptions{Timeout: 4 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	acked := map[string]string{}
	for _, m := range res.AckedMessages {
		acked[m.MessageID] = m.SHA256
	}
	mismatch := 0
	for _, m := range read.Messages {
		if want, ok := acked[m.MessageID]; ok && want != m.SHA256 {
			mismatch++
		}
		delete(acked, m.MessageID)
	}
	// Ledger states, and a sweep with no grace: every object must be referenced.
	sess := zk.Session(b, tzk.Options{})
	snap, err := mledger.New(sess, nil).Get(ctx, "public/default/persistent/soak")
	if err != nil {
		b.Fatal(err)
	}
	counts := map[mledger.LedgerState]int{}
	for _, s := range mledger.States(snap.Info) {
		counts[s]++
	}
	sc := *cfg
	sc.Sweeper.Grace = Duration(time.Nanosecond)
	sw := newSweeper(&sc, sess, svc.store, true, nil, nil)
	sres, err := sw.Sweep(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.stop(); err != nil {
		b.Error(err)
	}

	var maxLag lagSample
	for _, s := range samples {
		if s.lagBytes > maxLag.lagBytes {
			maxLag.lagBytes = s.lagBytes
		}
		if s.lagSeconds > maxLag.lagSeconds {
			maxLag.lagSeconds = s.lagSeconds
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("seconds,lag_bytes,lag_seconds,offloaded_bytes,bookkeeper_bytes\n")
	for _, s := range samples {
		fmt.Fprintf(&csv, "%.0f,%d,%.1f,%d,%d\n", s.at.Seconds(), s.lagBytes, s.lagSeconds, s.offloaded, s.bk)
	}
	_ = os.WriteFile(filepath.Join(out, "lag.csv"), []byte(csv.String()), 0o644)
	_ = os.WriteFile(filepath.Join(out, "lag.svg"), []byte(lagSVG(samples, dur)), 0o644)
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("bench-soak: %s of produce, %d messages acknowledged (%d failed), %d read back, %d acknowledged missing, %d payload mismatches\n",
		dur, res.Acked, res.Failed, len(read.Messages), len(acked), mismatch)
	fmt.Printf("bench-soak: ledgers %d offloaded+BK deleted, %d offloaded, %d on BK only, %d open; objects %d, sweep (no grace) would remove %v\n",
		counts[mledger.StateOffloadedBKDeleted], counts[mledger.StateOffloaded], counts[mledger.StateBookKeeper]+counts[mledger.StateOffloading],
		counts[mledger.StateOpen], sres.Objects, sres.Removed)
	fmt.Printf("bench-soak: max lag %.1f KiB / %.0f s (policy after 30 s); lag curve %s/lag.svg (.csv); loadavg %s",
		float64(maxLag.lagBytes)/1024, maxLag.lagSeconds, out, load)
	for _, s := range samples {
		fmt.Printf("  t=%4.0fs lag=%7.1f KiB age=%5.1fs offloaded=%8.1f KiB bk=%8.1f KiB\n", s.at.Seconds(),
			float64(s.lagBytes)/1024, s.lagSeconds, float64(s.offloaded)/1024, float64(s.bk)/1024)
	}
	if st := svc.Status(); st.LastError != "" {
		fmt.Printf("bench-soak: service last error: %s\n", st.LastError)
	}
	if b.Failed() || counts[mledger.StateOffloadedBKDeleted] == 0 {
		fmt.Printf("bench-soak: service log tail:\n%s\n", testenv.Tail(logf.Name(), 40))
	}
	b.ReportMetric(maxLag.lagSeconds, "max-lag-s")
	b.ReportMetric(float64(maxLag.lagBytes)/1024, "max-lag-KiB")
	if len(acked) > 0 || mismatch > 0 {
		b.Errorf("%d acknowledged messages not read back, %d payloads differ", len(acked), mismatch)
	}
	if len(sres.Removed) > 0 || sres.Uploads > 0 {
		b.Errorf("sweep finds orphans: %+v", sres)
	}
	if counts[mledger.StateOffloadedBKDeleted] == 0 {
		b.Error("no ledger trimmed from BookKeeper")
	}
	if maxLag.lagSeconds > 150 {
		b.Errorf("offload lag reached %.0f s (policy 30 s): not bounded", maxLag.lagSeconds)
	}
}

// lagSVG draws lag bytes (and lag age) over time.
func lagSVG(s []lagSample, dur time.Duration) string {
	const w, h, pad = 720.0, 300.0, 50.0
	var maxB float64 = 1
	var maxA float64 = 1
	maxT := dur.Seconds()
	for _, x := range s {
		maxB = max(maxB, float64(x.lagBytes))
		maxA = max(maxA, x.lagSeconds)
		maxT = max(maxT, x.at.Seconds())
	}
	px := func(t float64) float64 { return pad + t/maxT*(w-2*pad) }
	pb := func(v float64) float64 { return h - pad - v/maxB*(h-2*pad) }
	pa := func(v float64) float64 { return h - pad - v/maxA*(h-2*pad) }
	var bytesPts, agePts strings.Builder
	for _, x := range s {
		fmt.Fprintf(&bytesPts, "%.1f,%.1f ", px(x.at.Seconds()), pb(float64(x.lagBytes)))
		fmt.Fprintf(&agePts, "%.1f,%.1f ", px(x.at.Seconds()), pa(x.lagSeconds))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20">tierkeeper soak: offload lag (policy: after 30 s, trim 20 s after commit)</text>`+"\n", pad)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", pad, h-pad, w-pad, h-pad)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", pad, pad, pad, h-pad)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">0</text><text x="%.0f" y="%.0f">%.0f s</text>`+"\n", pad, h-pad+15, w-pad-30, h-pad+15, maxT)
	fmt.Fprintf(&b, `<text x="5" y="%.0f" fill="steelblue">%.0f KiB</text>`+"\n", pad, maxB/1024)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="darkorange">%.0f s</text>`+"\n", w-pad+5, pad, maxA)
	fmt.Fprintf(&b, `<polyline fill="none" stroke="steelblue" stroke-width="2" points="%s"/>`+"\n", bytesPts.String())
	fmt.Fprintf(&b, `<polyline fill="none" stroke="darkorange" stroke-width="1.5" stroke-dasharray="4 3" points="%s"/>`+"\n", agePts.String())
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="steelblue">lag bytes</text><text x="%.0f" y="%.0f" fill="darkorange">lag age (oldest waiting ledger)</text>`+"\n",
		pad+10, h-10, pad+110, h-10)
	b.WriteString("</svg>\n")
	return b.String()
}
