package discovery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/discovery"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// This file is an external test package because it runs the offloader
// service, which imports discovery; BenchmarkScan calls it through
// discovery.BenchScale.
func init() {
	discovery.BenchScale = benchScale
}

// benchScale measures, on the tree BenchmarkScan built: one GET /status of
// an offload service that scanned and evaluated it, and how three
// replicas' schedulers, offered the policy's candidates, share the topic
// leases over a window (jobs that hold the lease for a few milliseconds,
// no pipeline: the share is the leases' and the dispatch's).
func benchScale(b *testing.B, zkAddr string, cands policy.Candidates) discovery.ScaleFigures {
	var fig discovery.ScaleFigures
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	// Three replicas' schedulers on the same candidates, real leases.
	const replicas = 3
	window := 20 * time.Second
	var jobs [replicas]atomic.Int64
	run, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < replicas; i++ {
		sess, err := tzk.Connect(ctx, []string{zkAddr}, tzk.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer sess.Close()
		leases := offloader.NewTopicLeases(sess, "/tierkeeper/bench-leases", fmt.Sprintf("r%d", i+1), quiet)
		defer leases.Close()
		sc := scheduler.New(runnerFunc(func(ctx context.Context, j scheduler.Job) []scheduler.Outcome {
			jobs[i].Add(1)
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
			}
			out := make([]scheduler.Outcome, len(j.Ledgers))
			for k, id := range j.Ledgers {
				out[k] = scheduler.Outcome{LedgerID: id}
			}
			return out
		}), leases, scheduler.Options{LedgersInFlight: 4, Settle: time.Hour, StopTimeout: 10 * time.Second,
			Logger: quiet, Registerer: prometheus.NewRegistry()})
		sc.Offer(cands)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sc.Run(run); err != nil {
				b.Errorf("replica r%d: %v", i+1, err)
			}
		}()
	}
	time.Sleep(window)
	stop()
	wg.Wait()
	fig.LeaseWindow = window
	for i := range jobs {
		fig.Leases = append(fig.Leases, jobs[i].Load())
	}

	// One service on the tree: its first scan and evaluation, then one
	// /status render.
	s3 := testenv.StartS3(b)
	bucket := s3.NewBucket(b)
	doc := fmt.Sprintf("zookeeper: {servers: %q, connect_timeout: 10s}\nbookkeeper: {ledgers_root: /ledgers}\n", zkAddr) +
		s3test.StoreYAML(s3, bucket, "TK_S3_SECRET") + `
scheduler: {ledgers_in_flight: 1, retry_initial: 10m, retry_max: 1h}
discovery: {rescan_interval: 1h}
policy:
  default: {after: 1h, keep_bytes: "off", keep_ledgers: -1, pressure: false}
`
	cfg, err := offloader.Parse([]byte(doc), offloader.ParseOptions{Getenv: func(string) string { return s3.SecretKey }})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	svc, err := offloader.New(ctx, cfg, offloader.Deps{Logger: quiet, Registerer: prometheus.NewRegistry(), Listener: ln})
	if err != nil {
		b.Fatal(err)
	}
	svcCtx, svcStop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- svc.Run(svcCtx) }()
	defer func() {
		svcStop()
		select {
		case <-done:
		case <-time.After(time.Minute):
			b.Error("service did not stop within a minute")
		}
	}()
	testenv.WaitFor(b, "the service's first evaluation", 10*time.Minute, 100*time.Millisecond, func() bool {
		st := svc.Status()
		return st.Ready && !st.EvaluatedAt.IsZero() && len(st.Topics) > 0
	})
	fig.ServiceReady = time.Since(start)
	fig.ServiceScan = time.Duration(svc.Status().Scan.Seconds * float64(time.Second))
	base := "http://" + ln.Addr().String()
	t0 := time.Now()
	resp, err := http.Get(base + "/status")
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET /status: %d, %v", resp.StatusCode, err)
	}
	fig.StatusRender, fig.StatusBytes, fig.StatusTopics = time.Since(t0), n, len(svc.Status().Topics)
	return fig
}

type runnerFunc func(ctx context.Context, j scheduler.Job) []scheduler.Outcome

func (f runnerFunc) Run(ctx context.Context, j scheduler.Job) []scheduler.Outcome { return f(ctx, j) }
