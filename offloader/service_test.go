package offloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	s3api "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/metrics/metricstest"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Real peers shared by the package's service tests (mltest.Peers).
var peer = mltest.NewPeers("offloader")

func TestMain(m *testing.M) { peer.Main(m) }

func peers(t *testing.T) {
	t.Helper()
	peer.Need(t)
}

// serviceConfig is a config for the shared peers and a fresh bucket.
func serviceConfig(t *testing.T, extra string) (*Config, *testenv.S3, string) {
	t.Helper()
	s3 := testenv.StartS3(t)
	bucket := s3.NewBucket(t)
	doc := fmt.Sprintf("zookeeper: {servers: %q, session_timeout: 10s, connect_timeout: 10s}\nbookkeeper: {ledgers_root: %q}\n",
		peer.ZK.Addr, peer.BK.LedgersRoot) + s3test.StoreYAML(s3, bucket, "TK_S3_SECRET") + `
scheduler: {interval: 1s, retry_initial: 1s, retry_max: 5s, stop_timeout: 20s, min_reload_interval: 0s}
discovery: {rescan_interval: 10s}
` + extra
	return parseConfig(t, doc, s3), s3, bucket
}

// parseConfig parses doc, whose store secret (storeYAML's) is s3's.
func parseConfig(tb testing.TB, doc string, s3 *testenv.S3) *Config {
	tb.Helper()
	c, err := Parse([]byte(doc), ParseOptions{Getenv: func(string) string { return s3.SecretKey }})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// runningService is an in-process service started by startService.
type runningService struct {
	*Service
	base string // http://127.0.0.1:port of its status server
	// stop cancels Run and waits for it (at most 30 s): Run's error.
	// Called again, it returns the same.
	stop func() error
}

// startService runs cfg's service until ctx ends or its stop is called
// (at the latest when tb ends), serving on a free 127.0.0.1 port;
// deps.Registerer defaults to a fresh registry.
func startService(tb testing.TB, ctx context.Context, cfg *Config, deps Deps) *runningService {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	if deps.Registerer == nil {
		deps.Registerer = prometheus.NewRegistry()
	}
	deps.Listener = ln
	svc, err := New(ctx, cfg, deps)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return fmt.Errorf("service %s did not stop within 30s", cfg.Leases.ID)
		}
	})
	tb.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			tb.Errorf("service %s: %v", cfg.Leases.ID, err)
		}
	})
	return &runningService{Service: svc, base: "http://" + ln.Addr().String(), stop: stop}
}

// until polls cond every 100 ms; t fails naming what when limit passes.
func until(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, what, limit, 100*time.Millisecond, cond)
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// offloadedState returns the states of ml's ledgers.
func ledgerStates(t *testing.T, sess *tzk.Session, ml string) []mledger.LedgerState {
	t.Helper()
	snap, err := mledger.New(sess, nil).Get(context.Background(), ml)
	if err != nil {
		t.Fatal(err)
	}
	return mledger.States(snap.Info)
}

// TestServiceOffloadsByPolicy runs the service on real ZooKeeper, bookies
// and versitygw: managed ledgers written by Pulsar's own library are
// offloaded by an after-0 policy (every closed ledger but the last) while no
// bookie agent answers (a warning per bookie), /status and /metrics show it,
// and a stop returns promptly.
func TestServiceOffloadsByPolicy(t *testing.T) {
	peers(t)
	mls := []string{"acme/svc/persistent/a", "acme/svc/persistent/b", "acme/keep/persistent/c"}
	for _, ml := range mls {
		peer.MLWrite(t, ml, 30, 10, 1000)
	}
	cfg, _, _ := serviceConfig(t, `
policy:
  include: [acme/svc, acme/keep]   # the package's other tests share the ZooKeeper
  rules:
    - {name: keep, match: [acme/keep], offload: false}
  default: {after: 0s, deletion_lag: broker}
sweeper: {enabled: true, interval: 1h}
`+fmt.Sprintf(`# No bookie agent answers: usage unknown, a warning, the work goes on.
pressure: {threshold: 0.9, interval: 1s, timeout: 500ms, agent_url: "http://{host}:%d/report"}
`, testenv.FreePort(t)))
	svc := startService(t, context.Background(), cfg, Deps{})
	base := svc.base

	sess := peer.ZK.Session(t, tzk.Options{})
	deadline := time.Now().Add(3 * time.Minute)
	var st Status
	done2 := func() bool {
		for _, ml := range mls[:2] {
			states := ledgerStates(t, sess, ml)
			for _, x := range states[:len(states)-1] {
				if x != mledger.StateOffloaded {
					return false
				}
			}
		}
		return true
	}
	for {
		getJSON(t, base+"/status", &st)
		if st.Ready && done2() && st.Totals.LagBytes == 0 && st.Totals.RunningLedgers == 0 {
			// An evaluation begun after the commits were seen, so /status
			// reflects the last commit.
			seen := time.Now()
			testenv.WaitFor(t, "a policy evaluation after the last commit", 30*time.Second, 200*time.Millisecond, func() bool {
				getJSON(t, base+"/status", &st)
				return st.EvaluatedAt.After(seen)
			})
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service did not offload within 3 minutes; status %+v", st)
		}
		time.Sleep(300 * time.Millisecond)
	}
	offloaded := 0
	for _, ml := range mls[:2] {
		states := ledgerStates(t, sess, ml)
		offloaded += len(states) - 1
		for i, s := range states[:len(states)-1] {
			if s != mledger.StateOffloaded {
				t.Errorf("%s ledger #%d: %s, want offloaded", ml, i, s)
			}
		}
		if states[len(states)-1] != mledger.StateOpen {
			t.Errorf("%s: last ledger %s", ml, states[len(states)-1])
		}
	}
	for _, s := range ledgerStates(t, sess, mls[2]) {
		if s == mledger.StateOffloaded || s == mledger.StateOffloading {
			t.Errorf("%s was offloaded despite offload: false", mls[2])
		}
	}
	var keep TopicStatus
	for _, ts := range st.Topics {
		if ts.ML == mls[2] {
			keep = ts
		}
	}
	if keep.Rule != "keep" || keep.NextAction != "none" || keep.LagBytes != 0 || st.Totals.LagBytes != 0 {
		t.Errorf("status of the kept topic %+v; totals %+v", keep, st.Totals)
	}
	if n := len(peer.BK.RunningBookies()); st.Totals.PressureErrors != n || !strings.Contains(strings.Join(st.Warnings, "\n"), "pressure: bookie ") {
		t.Errorf("%d pressure errors (want one per bookie, %d), warnings %q", st.Totals.PressureErrors, n, st.Warnings)
	}
	if d := st.Done; d.OffloadedLedgers != offloaded || d.OffloadedBytes <= 0 || d.CopiedBytes != d.OffloadedBytes ||
		d.CopySeconds <= 0 || d.FailedLedgers != 0 {
		t.Errorf("status done %+v, want %d ledgers offloaded (copied), none failed", d, offloaded)
	}
	if code, body := getText(t, base+"/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("readyz %d %q", code, body)
	}
	if code, _ := getText(t, base+"/healthz"); code != 200 {
		t.Errorf("healthz %d", code)
	}
	_, m := getText(t, base+"/metrics")
	for _, w := range []string{
		fmt.Sprintf(`tierkeeper_offloader_scheduler_ledgers_total{action="offload",result="ok"} %d`, offloaded),
		`tierkeeper_offloader_lag_bytes 0`,
		`tierkeeper_offloader_step_duration_seconds_count{step="copy"}`,
		`tierkeeper_offloader_ready 1`,
		`tierkeeper_offloader_discovery_managed_ledgers `,
		"tierkeeper_offloader_copied_bytes_total",
	} {
		if !strings.Contains(m, w) {
			t.Errorf("/metrics misses %q", w)
		}
	}
	checkConfigMetrics(t, m)
	start := time.Now()
	if err := svc.stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	t.Logf("stopped in %s", time.Since(start))
}

// metricRef is a metric named in a dashboard or rule expression, with the
// labels the expression groups by.
var (
	metricName = regexp.MustCompile(`tierkeeper_[a-z0-9_]+`)
	byLabels   = regexp.MustCompile(`by \(([a-z_, ]+)\)`)
)

// checkConfigMetrics checks that every metric the Grafana dashboard and the
// alert rules use exists in the service's /metrics, with the labels they
// group by.
func checkConfigMetrics(t *testing.T, exposition string) {
	t.Helper()
	series := map[string][]string{}
	for _, line := range strings.Split(exposition, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		series[name] = append(series[name], rest)
	}
	var exprs []string
	dash, err := os.ReadFile(filepath.Join("..", "configs", "offloader-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dash, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	rules, err := os.ReadFile(filepath.Join("..", "configs", "offloader-alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(rules), "\n") {
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "expr: "); ok {
			exprs = append(exprs, e)
		}
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions found in the dashboard and rules", len(exprs))
	}
	for _, e := range exprs {
		var labels []string
		for _, m := range byLabels.FindAllStringSubmatch(e, -1) {
			for _, l := range strings.Split(m[1], ",") {
				if l = strings.TrimSpace(l); l != "le" && l != "instance" && l != "job" {
					labels = append(labels, l)
				}
			}
		}
		for _, name := range metricName.FindAllString(e, -1) {
			got, ok := series[name]
			if !ok {
				t.Errorf("%s (in %q) is not exposed by the service", name, e)
				continue
			}
			for _, l := range labels {
				found := false
				for _, s := range got {
					if strings.Contains(s, l+"=") {
						found = true
					}
				}
				if !found && strings.Count(e, "tierkeeper_") == 1 {
					t.Errorf("%s has no label %q (grouped by in %q)", name, l, e)
				}
			}
		}
	}
}

// TestServiceParksWhenTheBucketIsGone: the store's bucket disappears; the
// ledgers fail at their copy, back off, get parked with the error visible
// in /status, and the service stays ready.
func TestServiceParksWhenTheBucketIsGone(t *testing.T) {
	peers(t)
	ml := "acme/gone/persistent/a"
	peer.MLWrite(t, ml, 20, 10, 1000)
	cfg, s3, bucket := serviceConfig(t, `
policy:
  include: [acme/gone]
  default: {after: 0s}
`)
	cfg.Scheduler.ParkAfter = 2
	if _, err := s3.Client().DeleteBucket(context.Background(), &s3api.DeleteBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	svc := startService(t, context.Background(), cfg, Deps{})
	var st Status
	deadline := time.Now().Add(2 * time.Minute)
	for {
		getJSON(t, svc.base+"/status", &st)
		if st.Totals.ParkedLedgers > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ledger parked within 2 minutes: %+v", st)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var parked []string
	for _, l := range st.Ledgers {
		if l.State == scheduler.StateParked {
			parked = append(parked, fmt.Sprintf("%d:%s:%s", l.LedgerID, l.LastStep, l.LastErr))
			if l.Failures != 2 || !strings.Contains(l.LastErr, "NoSuchBucket") {
				t.Errorf("parked ledger %+v: want 2 failures and the store's NoSuchBucket", l)
			}
		}
	}
	var ts TopicStatus
	for _, x := range st.Topics {
		if x.ML == ml {
			ts = x
		}
	}
	if !st.Ready || !strings.Contains(ts.LastError, "parked until") || ts.LagBytes == 0 {
		t.Errorf("status: ready %v, topic %+v; parked %v", st.Ready, ts, parked)
	}
}

// TestServiceScansOnceAtStart starts a service and checks that its start
// scanned the tree once: one scan, each managed ledger read once. The
// service once ran its discovery (which scans first) beside a scan of its
// own for readiness: two cold scans of the whole tree at once, each
// managed ledger read twice, and the first scan twice as long.
func TestServiceScansOnceAtStart(t *testing.T) {
	peers(t)
	for _, ml := range []string{"acme/once/persistent/a", "acme/once/persistent/b"} {
		peer.MLWrite(t, ml, 2, 2, 100)
	}
	cfg, _, _ := serviceConfig(t, `
policy:
  include: [acme/once]
  default: {after: 1h}
`)
	cfg.Discovery.RescanInterval = Duration(time.Hour)
	reg := prometheus.NewRegistry()
	svc := startService(t, context.Background(), cfg, Deps{Registerer: reg})
	until(t, "the first evaluation", time.Minute, func() bool { st := svc.Status(); return st.Ready && !st.EvaluatedAt.IsZero() })
	time.Sleep(time.Second) // a second scan beside the first would end about now
	listed := svc.Status().Scan.ManagedLedgers
	scans := metricstest.HistogramCount(t, reg, "tierkeeper_offloader_discovery_scan_duration_seconds")
	reads := metricstest.CounterSum(t, reg, "tierkeeper_offloader_discovery_reads_total")
	if listed < 2 || scans != 1 || reads != float64(listed) {
		t.Fatalf("start: %d scans, %.0f managed-ledger reads of %d listed; want 1 scan, each read once", scans, reads, listed)
	}
}
