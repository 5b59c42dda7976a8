package offloader

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/format/upload"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// BenchmarkScrub builds TIERKEEPER_BENCH_SCRUB_LEDGERS committed ledgers
// (default 10 000: 10 per managed ledger, 10 entries of 100 bytes each)
// straight into ZooKeeper (managed-ledger znodes, complete contexts,
// bookkeeperDeleted) and versitygw (real objects, written by the upload
// package, no bookies), then runs one unthrottled shallow scrub pass over
// all of them (offloader.Scrub --all --dry-run) and prints ledgers/s,
// objects/s and requests per ledger, with the load average. `make
// bench-scrub` runs it.
func BenchmarkScrub(b *testing.B) {
	n := testenv.EnvInt(b, "TIERKEEPER_BENCH_SCRUB_LEDGERS", 10000)
	const perML = 10
	peer.Need(b)
	s3 := testenv.StartS3(b)
	bucket := s3.NewBucket(b)
	doc := fmt.Sprintf("zookeeper: {servers: %q, session_timeout: 10s, connect_timeout: 10s}\nbookkeeper: {ledgers_root: %q}\n",
		peer.ZK.Addr, peer.BK.LedgersRoot) + s3test.StoreYAML(s3, bucket, "TK_S3_SECRET")
	cfg := parseConfig(b, doc, s3)
	ctx := context.Background()
	store, err := cfg.openStore(ctx, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	drv := mledger.Driver{Name: "aws-s3", Bucket: bucket, Region: s3.Region, ServiceEndpoint: s3.Endpoint}
	dmd, err := drv.Metadata()
	if err != nil {
		b.Fatal(err)
	}
	up, err := upload.New(store, &upload.Options{MaxBlockSize: format.MinPartSize, PartsInFlight: 1,
		Pool: format.NewPool(format.MinPartSize, 16)})
	if err != nil {
		b.Fatal(err)
	}
	sess := peer.ZK.Session(b, tzk.Options{})
	cr := mltest.NewCreator(sess.Conn)
	prefix := fmt.Sprintf("bench%d", time.Now().UnixNano())
	payload := []byte(strings.Repeat("x", 100))
	nML := (n + perML - 1) / perML
	start := time.Now()
	err = mltest.Parallel(ctx, nML, 8, func(i int) error {
		ml := fmt.Sprintf("%s/ns-%d/persistent/topic-%d", prefix, i%10, i)
		first := int64(1_000_000_000 + i*(perML+1))
		info := mltest.Info(mltest.Closed(first, perML, 1000, time.Now())...)
		for j := 0; j < perML; j++ {
			li := info.LedgerInfo[j]
			id := uuid.New()
			var payloads [][]byte
			for range 10 {
				payloads = append(payloads, payload)
			}
			fl := format.LedgerOf(li.GetLedgerId(), payloads)
			md, err := format.IndexMetadata(&bkproto.LedgerMetadataFormat{
				QuorumSize: proto.Int32(2), EnsembleSize: proto.Int32(3), AckQuorumSize: proto.Int32(2),
				Length: proto.Int64(fl.Length), LastEntryId: proto.Int64(fl.LastEntryID),
				State: bkproto.LedgerMetadataFormat_CLOSED.Enum(), DigestType: bkproto.LedgerMetadataFormat_CRC32C.Enum(),
				Password: []byte{}, Ctime: proto.Int64(time.Now().UnixMilli()),
				Segment: []*bkproto.LedgerMetadataFormat_Segment{{EnsembleMember: []string{"b1:3181", "b2:3181", "b3:3181"}, FirstEntryId: proto.Int64(0)}},
			})
			if err != nil {
				return err
			}
			s, err := up.Begin(ctx, upload.Request{UUID: id, Ledger: fl, Metadata: md, ManagedLedgerName: ml})
			if err != nil {
				return err
			}
			for e, p := range payloads {
				if err := s.Add(ctx, int64(e), p); err != nil {
					return err
				}
			}
			if _, err := s.Finish(ctx); err != nil {
				return err
			}
			msb, lsb := mledger.UUIDToBits(id)
			li.Entries, li.Size = proto.Int64(fl.LastEntryID+1), proto.Int64(fl.Length)
			li.OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(msb), UidLsb: proto.Int64(lsb), Complete: proto.Bool(true),
				BookkeeperDeleted: proto.Bool(true), Timestamp: proto.Int64(time.Now().UnixMilli()), DriverMetadata: dmd}
		}
		return cr.CreateML(ml, info)
	})
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("built %d committed ledgers in %d managed ledgers (%d objects) in %s\n", nML*perML, nML, 2*nML*perML, time.Since(start).Round(time.Millisecond))
	load, _ := os.ReadFile("/proc/loadavg")
	b.ResetTimer()
	var rep *scrub.Report
	for range b.N {
		rep, err = Scrub(ctx, cfg, ScrubOptions{All: true, DryRun: true, LedgersPerSecond: 1e9}, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if rep.Verdicts[scrub.VerdictOK] != nML*perML {
		b.Fatalf("verdicts %v, want %d ok", rep.Verdicts, nML*perML)
	}
	after, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("scrub pass: %d ledgers, %d objects in %.2fs: %.0f ledgers/s, %.0f objects/s, %.2f requests/ledger (one at a time; the default scrub.ledgers_per_second 10 makes such a pass take %s)\n",
		rep.Ledgers, rep.Objects, rep.Seconds, rep.LedgersPerSecond, rep.ObjectsPerSecond, rep.RequestsPerLedger,
		(time.Duration(rep.Ledgers) * time.Second / 10).Round(time.Second))
	fmt.Printf("load average before: %s; after: %s\n", strings.TrimSpace(string(load)), strings.TrimSpace(string(after)))
	b.ReportMetric(rep.ObjectsPerSecond, "objects/s")
	b.ReportMetric(rep.RequestsPerLedger, "requests/ledger")
}
