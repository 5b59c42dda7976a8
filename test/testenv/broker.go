package testenv

// A stock Apache Pulsar broker (org.apache.pulsar:pulsar-broker from the
// compat Maven build, PulsarBrokerStarter) on the harness's own ZooKeeper
// and bookies, 127.0.0.1 only. See docs/compat.md "Stock broker".

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BrokerOffload is the offloader part of a broker's configuration: the
// broker.conf keys, the JVM flags and the environment that carries the
// credentials (never broker.conf, never a log). S3Offload builds it for the
// harness's S3 server; cosfake.Fake.BrokerOffload for the COS endpoint.
type BrokerOffload struct {
	// Driver is managedLedgerOffloadDriver: "aws-s3", "S3", "aliyun-oss".
	Driver string
	// Bucket, Region and Endpoint are managedLedgerOffloadBucket,
	// managedLedgerOffloadRegion (may be empty) and
	// managedLedgerOffloadServiceEndpoint.
	Bucket, Region, Endpoint string
	// Env holds the credentials ("AWS_ACCESS_KEY_ID=..." for aws-s3/S3,
	// "ACCESS_KEY_ID=..." for aliyun-oss).
	Env []string
	// JVMArgs are the driver's JVM flags, e.g. "-Djclouds.regions=us-east-1",
	// "-Djclouds.s3.virtual-host-buckets=true", "-Dhttp.proxyHost=...".
	JVMArgs []string
	// Conf are more broker.conf lines ("key=value").
	Conf []string
}

// S3Offload is the configuration with which a stock broker offloads to, and
// reads from, bucket on the harness's versitygw: driver aws-s3, path-style
// endpoint, credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY,
// -Djclouds.regions=<region> (without it every jclouds call first asks
// s3.amazonaws.com for the bucket's region and stalls ~50 s).
func S3Offload(s *S3, bucket string) *BrokerOffload {
	return &BrokerOffload{
		Driver: "aws-s3", Bucket: bucket, Region: s.Region, Endpoint: s.Endpoint,
		Env:     []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey},
		JVMArgs: []string{"-Djclouds.regions=" + s.Region},
	}
}

// BrokerOptions configure StartBroker. The zero value gives a broker without
// an offloader and the defaults in brackets.
type BrokerOptions struct {
	// Cluster is the cluster name ["tierkeeper"]. Cluster metadata and the
	// namespace public/default are created on first start.
	Cluster string
	// Offload configures the offloader; nil: none (managedLedgerOffloadDriver
	// unset, offloaded ledgers cannot be read).
	Offload *BrokerOffload
	// ReadBufferSize is managedLedgerOffloadReadBufferSizeInBytes [Pulsar's
	// 1 MiB]; MaxBlockSize managedLedgerOffloadMaxBlockSizeInBytes [64 MiB].
	ReadBufferSize, MaxBlockSize int
	// DeletionLag is managedLedgerOffloadDeletionLagMs: how long after an
	// offload the broker's trimmer deletes the BookKeeper copy. 0 means
	// "never" here (ten years; the broker's own default is 4 h); use
	// time.Millisecond for "at the next retention check".
	DeletionLag time.Duration
	// MaxEntriesPerLedger is managedLedgerMaxEntriesPerLedger [100]; the
	// minimum rollover time is 0, so ledgers roll at exactly this many entries.
	MaxEntriesPerLedger int
	// EnsembleSize, WriteQuorum and AckQuorum [2, 2, 2] (the harness runs 4
	// bookies, some tests stop one).
	EnsembleSize, WriteQuorum, AckQuorum int
	// RetentionCheckInterval is retentionCheckIntervalInSeconds [3 s]; the
	// trimmer (which also deletes offloaded BK copies) runs that often.
	RetentionCheckInterval time.Duration
	// Conf are more broker.conf lines ("key=value"); a key that is also a
	// default replaces it.
	Conf []string
	// Heap is -Xmx ["256m"]; DirectMemory -XX:MaxDirectMemorySize ["256m"].
	Heap, DirectMemory string
	// JVMArgs and Env are added to the broker's JVM flags and environment.
	JVMArgs, Env []string
	// LogLevel is the broker's log level ["INFO"]; the log is kept in
	// LogPath and its tail printed when the owning test fails.
	LogLevel string
	// StartTimeout bounds one start [120 s].
	StartTimeout time.Duration
}

// Broker is a running stock Pulsar broker. Its state lives in ZooKeeper
// and the bookies, so Restart (same ports) brings the same topics back.
type Broker struct {
	// WebURL is the admin/web service "http://127.0.0.1:<WebPort>";
	// ServiceURL the binary protocol "pulsar://127.0.0.1:<ServicePort>".
	WebURL, ServiceURL   string
	WebPort, ServicePort int
	Cluster              string
	ZK                   *ZooKeeper
	BK                   *BookKeeperCluster
	// ConfPath is the broker.conf; Dir holds it and the logs.
	ConfPath, Dir string
	// StartTimes are the wall times of every start (first, then restarts):
	// JVM launch to admin API ready.
	StartTimes []time.Duration

	owner testing.TB
	build *JavaBuild
	opts  BrokerOptions
	http  *http.Client

	mu   sync.Mutex
	proc *Process
	gen  int
}

// brokerCDSRole names the broker's class-data-sharing archive.
const brokerCDSRole = "broker"

// StartBroker initialises the cluster metadata in c's ZooKeeper (once per
// cluster name) and starts a broker, returning when its admin API answers
// and public/default exists. It stops when t ends. Expect ~10 s warm (CDS
// archive present), 15-25 s cold, ~280 MiB RSS.
//
// One cluster has one running broker at a time: a second broker of the
// same cluster would own some of the namespace bundles, so a topic would be
// served (and offloaded, and read) by either broker with its own offloader
// configuration. StartBroker fails instead; use RestartWith to change the
// running broker's options.
func StartBroker(t testing.TB, c *BookKeeperCluster, o BrokerOptions) *Broker {
	t.Helper()
	b := requireJavaBuild(t)
	o = withBrokerDefaults(o)
	key := c.ZK.Addr + "/" + o.Cluster
	if other := runningBroker(key); other != nil {
		t.Fatalf("broker: cluster %q on ZooKeeper %s already has a running broker (%s): two brokers share the namespace bundles, "+
			"so a topic would be served by either (with the other's offloader); Stop it first, or RestartWith other options", o.Cluster, c.ZK.Addr, other.WebURL)
	}
	br := &Broker{Cluster: o.Cluster, ZK: c.ZK, BK: c, Dir: t.TempDir(), owner: t, build: b, opts: o,
		http: &http.Client{Timeout: 60 * time.Second}}
	br.WebPort, br.ServicePort = FreePort(t), FreePort(t)
	br.WebURL = fmt.Sprintf("http://127.0.0.1:%d", br.WebPort)
	br.ServiceURL = fmt.Sprintf("pulsar://127.0.0.1:%d", br.ServicePort)
	br.ConfPath = filepath.Join(br.Dir, "broker.conf")
	if err := os.WriteFile(br.ConfPath, []byte(br.confText()), 0o644); err != nil {
		t.Fatalf("broker: %v", err)
	}
	if err := br.initCluster(t); err != nil {
		t.Fatalf("broker: %v", err)
	}
	if err := br.start(t); err != nil {
		t.Fatalf("broker: %v", err)
	}
	brokers.Lock()
	brokers.m[key] = br
	brokers.Unlock()
	return br
}

// brokers are the brokers this process started, by ZooKeeper address and
// cluster: one cluster may have one running broker at a time (process-wide
// because the servers are).
var brokers = struct {
	sync.Mutex
	m map[string]*Broker
}{m: map[string]*Broker{}}

func runningBroker(key string) *Broker {
	brokers.Lock()
	b := brokers.m[key]
	brokers.Unlock()
	if b != nil && b.Running() {
		return b
	}
	return nil
}

func withBrokerDefaults(o BrokerOptions) BrokerOptions {
	if o.Cluster == "" {
		o.Cluster = "tierkeeper"
	}
	if o.MaxEntriesPerLedger == 0 {
		o.MaxEntriesPerLedger = 100
	}
	if o.EnsembleSize == 0 {
		o.EnsembleSize, o.WriteQuorum, o.AckQuorum = 2, 2, 2
	}
	if o.RetentionCheckInterval == 0 {
		o.RetentionCheckInterval = 3 * time.Second
	}
	if o.Heap == "" {
		o.Heap = "256m"
	}
	if o.DirectMemory == "" {
		o.DirectMemory = "256m"
	}
	if o.LogLevel == "" {
		o.LogLevel = "INFO"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 120 * time.Second
	}
	return o
}

func (br *Broker) confText() string {
	o := br.opts
	zk := "zk:" + br.ZK.Addr
	lines := []string{
		"clusterName=" + o.Cluster,
		"metadataStoreUrl=" + zk,
		"configurationMetadataStoreUrl=" + zk,
		"bookkeeperMetadataServiceUri=" + br.BK.MetadataServiceURI(),
		"metadataStoreSessionTimeoutMillis=10000",
		"bindAddress=127.0.0.1",
		"advertisedAddress=127.0.0.1",
		fmt.Sprintf("brokerServicePort=%d", br.ServicePort),
		fmt.Sprintf("webServicePort=%d", br.WebPort),
		"narExtractionDirectory=" + filepath.Join(br.build.Dir, "target", "nar-extract"),
		"offloadersDirectory=" + br.build.NarDir,
		// Keep every ledger: no retention limit, no inactive-topic deletion
		// (which would also trim ledgers nobody subscribed to).
		"defaultRetentionTimeInMinutes=-1",
		"defaultRetentionSizeInMB=-1",
		"brokerDeleteInactiveTopicsEnabled=false",
		fmt.Sprintf("retentionCheckIntervalInSeconds=%d", max(1, int(o.RetentionCheckInterval/time.Second))),
		// Many small ledgers.
		fmt.Sprintf("managedLedgerMaxEntriesPerLedger=%d", o.MaxEntriesPerLedger),
		"managedLedgerMinLedgerRolloverTimeMinutes=0",
		fmt.Sprintf("managedLedgerDefaultEnsembleSize=%d", o.EnsembleSize),
		fmt.Sprintf("managedLedgerDefaultWriteQuorum=%d", o.WriteQuorum),
		fmt.Sprintf("managedLedgerDefaultAckQuorum=%d", o.AckQuorum),
		"managedLedgerCacheSizeMB=32",
		"allowAutoTopicCreation=true",
		"allowAutoTopicCreationType=non-partitioned",
		// Small and quiet: no functions, transactions, websocket, system
		// topics (topic-level policies) or load shedding.
		"functionsWorkerEnabled=false",
		"transactionCoordinatorEnabled=false",
		"webSocketServiceEnabled=false",
		"systemTopicEnabled=false",
		"topicLevelPoliciesEnabled=false",
		"loadBalancerSheddingEnabled=false",
		"numIOThreads=2",
		"numHttpServerThreads=8",
		"brokerShutdownTimeoutMs=5000",
	}
	if o.DeletionLag > 0 {
		lines = append(lines, fmt.Sprintf("managedLedgerOffloadDeletionLagMs=%d", max(1, o.DeletionLag.Milliseconds())))
	} else {
		// "Never": ten years (the key is a plain long in broker.conf).
		lines = append(lines, "managedLedgerOffloadDeletionLagMs=315360000000")
	}
	if o.ReadBufferSize > 0 {
		lines = append(lines, fmt.Sprintf("managedLedgerOffloadReadBufferSizeInBytes=%d", o.ReadBufferSize))
	}
	if o.MaxBlockSize > 0 {
		lines = append(lines, fmt.Sprintf("managedLedgerOffloadMaxBlockSizeInBytes=%d", o.MaxBlockSize))
	}
	if off := o.Offload; off != nil {
		lines = append(lines,
			"managedLedgerOffloadDriver="+off.Driver,
			"managedLedgerOffloadBucket="+off.Bucket,
			"managedLedgerOffloadRegion="+off.Region,
			"managedLedgerOffloadServiceEndpoint="+off.Endpoint,
		)
		lines = append(lines, off.Conf...)
	}
	return strings.Join(mergeConf(lines, o.Conf), "\n") + "\n"
}

// mergeConf appends extra "key=value" lines to lines; an extra key that is
// already there replaces that line.
func mergeConf(lines, extra []string) []string {
	for _, e := range extra {
		k, _, _ := strings.Cut(e, "=")
		k = strings.TrimSpace(k)
		replaced := false
		for i, l := range lines {
			if lk, _, _ := strings.Cut(l, "="); strings.TrimSpace(lk) == k {
				lines[i], replaced = e, true
			}
		}
		if !replaced {
			lines = append(lines, e)
		}
	}
	return lines
}

func (br *Broker) jvmOptions() []string {
	o := br.opts
	opts := append(JVMOptions(o.Heap, false),
		"-XX:MaxDirectMemorySize="+o.DirectMemory,
		"--add-opens", "java.base/jdk.internal.platform=ALL-UNNAMED",
		"--add-opens", "java.base/java.lang=ALL-UNNAMED",
		"--add-opens", "java.base/sun.net=ALL-UNNAMED",
		"-Dtk.loglevel="+o.LogLevel,
		"-Dpulsar.allocator.exit_on_oom=true",
		"-Dio.netty.leakDetectionLevel=disabled",
		"-Dio.netty.recycler.maxCapacityPerThread=4096",
		"-Dzookeeper.sasl.client=false",
		// BookKeeper stream storage (a pulsar-broker dependency) brings
		// OpenTelemetry's GCP resource detector, which asks
		// http://metadata.google.internal for a project id at start.
		"-Dotel.java.disabled.resource.providers=io.opentelemetry.contrib.gcp.resource.GCPResourceProvider",
	)
	if off := o.Offload; off != nil {
		opts = append(opts, off.JVMArgs...)
	}
	return append(opts, o.JVMArgs...)
}

// initCluster writes the cluster's metadata (cluster, tenant public,
// namespace public/default) with Pulsar's own PulsarClusterMetadataSetup,
// on the existing BookKeeper metadata; skipped when the cluster exists.
func (br *Broker) initCluster(t testing.TB) error {
	conn, err := br.BK.zkConn()
	if err != nil {
		return fmt.Errorf("connect to ZooKeeper %s: %w", br.ZK.Addr, err)
	}
	ok, _, err := conn.Exists("/admin/clusters/" + br.Cluster)
	conn.Close()
	if err == nil && ok {
		return nil
	}
	opts := append(JVMOptions("128m", true), "-Dtk.loglevel=WARN")
	cds, done := br.build.CDS("pulsar-init")
	opts = append(opts, cds...)
	zk := "zk:" + br.ZK.Addr
	cmd := br.build.Command(opts, "org.apache.pulsar.PulsarClusterMetadataSetup",
		"--cluster", br.Cluster,
		"--metadata-store", zk,
		"--configuration-metadata-store", zk,
		"--existing-bk-metadata-service-uri", br.BK.MetadataServiceURI(),
		"--web-service-url", br.WebURL,
		"--broker-service-url", br.ServiceURL,
		"--default-namespace-bundle-number", "4",
		"--initial-num-transaction-coordinators", "1",
	)
	if out, err := runJava(t.Context(), 90*time.Second, cmd, done); err != nil {
		return fmt.Errorf("initialize cluster metadata: %w (stdout %s)", err, out)
	}
	return nil
}

func (br *Broker) start(t testing.TB) error {
	t.Helper()
	br.mu.Lock()
	br.gen++
	name := generationName("broker", br.gen)
	br.mu.Unlock()
	opts := br.jvmOptions()
	cds, done := br.build.CDS(brokerCDSRole)
	opts = append(opts, cds...)
	cmd := br.build.Command(opts, "org.apache.pulsar.PulsarBrokerStarter", "--broker-conf", br.ConfPath)
	// The working directory plays PULSAR_HOME: an offloader the broker makes
	// for namespace offload policies (a deletion lag, say) looks for its NAR
	// in the policy default "./offloaders", not in offloadersDirectory.
	cmd.Dir = filepath.Dir(br.build.NarDir)
	cmd.Env = append(os.Environ(), br.opts.Env...)
	if off := br.opts.Offload; off != nil {
		cmd.Env = append(cmd.Env, off.Env...)
	}
	began := time.Now()
	p := Start(cleanupOn{TB: t, owner: br.owner}, name, br.Dir, cmd)
	watchExit(p, done)
	br.mu.Lock()
	br.proc = p
	br.mu.Unlock()
	// Not t.Context(): a restart from a Cleanup (where it is already
	// cancelled) must work; waitReady is bounded by StartTimeout.
	if err := br.waitReady(context.WithoutCancel(t.Context()), p, br.opts.StartTimeout); err != nil {
		p.Stop()
		return err
	}
	br.mu.Lock()
	br.StartTimes = append(br.StartTimes, time.Since(began))
	br.mu.Unlock()
	return nil
}

// waitReady polls GET /admin/v2/brokers/ready and then the namespace
// public/default until both answer 200, p exits or timeout passes.
func (br *Broker) waitReady(ctx context.Context, p *Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for _, path := range []string{"/admin/v2/brokers/ready", "/admin/v2/namespaces/public/default"} {
		for {
			if done, err := p.Exited(); done {
				return fmt.Errorf("%s exited during start-up: %v; log tail:\n%s", p.Name, err, Tail(p.LogPath, 60))
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %s%s not ready after %s (last: %s); log tail:\n%s", p.Name, br.WebURL, path, timeout, last, Tail(p.LogPath, 60))
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := br.AdminDo(rctx, http.MethodGet, path, nil, nil)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%s: waiting for %s: %w", p.Name, path, ctx.Err())
			}
			last = err.Error()
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// Stop shuts the broker down gracefully (SIGTERM: topics closed, ledgers
// closed, ZooKeeper session closed; SIGKILL after 10 s).
func (br *Broker) Stop() {
	if p := br.process(); p != nil {
		p.Stop()
	}
}

// Kill ends the broker at once (SIGKILL), like a crash: its open ledgers
// stay open until the next owner recovers them, its ZooKeeper session (and
// bundle ownership) lingers until it expires (10 s).
func (br *Broker) Kill() {
	if p := br.process(); p != nil {
		p.Kill()
	}
}

// Restart stops the broker if it runs (gracefully) and starts it again
// with the same ports, configuration and metadata. After Kill the start may
// take up to the ZooKeeper session timeout longer. t is used for failures;
// the broker lives as long as whoever started it first.
func (br *Broker) Restart(t testing.TB) {
	t.Helper()
	br.Stop()
	if err := br.start(t); err != nil {
		t.Fatalf("broker restart: %v", err)
	}
}

// RestartWith stops the broker and starts it again on the same ports and
// metadata with new options (e.g. another offloader configuration). The
// cluster name cannot change.
func (br *Broker) RestartWith(t testing.TB, o BrokerOptions) {
	t.Helper()
	br.Stop()
	if o.Cluster != "" && o.Cluster != br.Cluster {
		t.Fatalf("broker RestartWith: cluster %q cannot become %q", br.Cluster, o.Cluster)
	}
	o.Cluster = br.Cluster
	br.opts = withBrokerDefaults(o)
	if err := os.WriteFile(br.ConfPath, []byte(br.confText()), 0o644); err != nil {
		t.Fatalf("broker: %v", err)
	}
	if err := br.start(t); err != nil {
		t.Fatalf("broker restart: %v", err)
	}
}

// Running reports whether the broker process is alive.
func (br *Broker) Running() bool {
	p := br.process()
	if p == nil {
		return false
	}
	done, _ := p.Exited()
	return !done
}

// Pid is the broker's process id (0 if it never started).
func (br *Broker) Pid() int {
	if p := br.process(); p != nil {
		return p.Pid()
	}
	return 0
}

// LogPath is the log file of the current (or last) broker process.
func (br *Broker) LogPath() string {
	if p := br.process(); p != nil {
		return p.LogPath
	}
	return ""
}

// RSS returns the broker process's resident set size in bytes.
func (br *Broker) RSS() (int64, error) { return ProcessRSS(br.Pid()) }

// ProcessRSS reads VmRSS of a process from /proc.
func ProcessRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS", pid)
}

func (br *Broker) process() *Process {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.proc
}

// ---- admin REST API

// AdminError is a non-2xx answer of the broker's admin API.
type AdminError struct {
	Method, Path string
	Status       int
	Body         string // the broker's message, at most 2 KiB
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("broker admin %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

// IsAdminStatus reports whether err is an AdminError with that status.
func IsAdminStatus(err error, status int) bool {
	var ae *AdminError
	return errors.As(err, &ae) && ae.Status == status
}

// AdminDo calls the admin REST API: path is absolute ("/admin/v2/..."),
// body (if not nil) is sent as JSON, a 2xx answer is decoded into out (if
// not nil) and also returned raw. Bounded by ctx and a 60 s client timeout.
func (br *Broker) AdminDo(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, br.WebURL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := br.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("broker admin %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("broker admin %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		msg := string(raw)
		if len(msg) > 2048 {
			msg = msg[:2048]
		}
		return raw, &AdminError{Method: method, Path: path, Status: resp.StatusCode, Body: strings.TrimSpace(msg)}
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return raw, fmt.Errorf("broker admin %s %s: decode answer: %w (%.300q)", method, path, err, raw)
		}
	}
	return raw, nil
}

// TopicPath is the admin v2 path of a topic ("persistent://t/ns/x",
// "t/ns/x" or a short name "x" = public/default): "/admin/v2/persistent/t/ns/x".
func TopicPath(topic string) (string, error) {
	domain, rest := "persistent", topic
	if d, r, ok := strings.Cut(topic, "://"); ok {
		domain, rest = d, r
	}
	parts := strings.Split(rest, "/")
	if len(parts) == 1 {
		parts = []string{"public", "default", parts[0]}
	}
	if len(parts) != 3 || domain != "persistent" && domain != "non-persistent" {
		return "", fmt.Errorf("topic %q: want [persistent://]tenant/namespace/name or a short name", topic)
	}
	for i, p := range parts {
		if p == "" {
			return "", fmt.Errorf("topic %q: empty name part", topic)
		}
		parts[i] = url.PathEscape(p)
	}
	return "/admin/v2/" + domain + "/" + strings.Join(parts, "/"), nil
}

func (br *Broker) topicCall(ctx context.Context, method, topic, suffix string, body, out any) ([]byte, error) {
	p, err := TopicPath(topic)
	if err != nil {
		return nil, err
	}
	return br.AdminDo(ctx, method, p+suffix, body, out)
}

// topicGet GETs a topic's admin path suffix and decodes the answer as T.
func topicGet[T any](ctx context.Context, br *Broker, topic, suffix string) (*T, error) {
	var v T
	if _, err := br.topicCall(ctx, http.MethodGet, topic, suffix, nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Unload closes the topic on the broker (all partitions of a partitioned
// topic); the next client reopens it from the stored metadata.
func (br *Broker) Unload(ctx context.Context, topic string) error {
	_, err := br.topicCall(ctx, http.MethodPut, topic, "/unload", nil, nil)
	return err
}

// CreatePartitionedTopic creates topic with n partitions.
func (br *Broker) CreatePartitionedTopic(ctx context.Context, topic string, n int) error {
	_, err := br.topicCall(ctx, http.MethodPut, topic, "/partitions", n, nil)
	return err
}

// Partitions returns the partition count of topic (0: not partitioned).
func (br *Broker) Partitions(ctx context.Context, topic string) (int, error) {
	var md struct {
		Partitions int `json:"partitions"`
	}
	_, err := br.topicCall(ctx, http.MethodGet, topic, "/partitions", nil, &md)
	return md.Partitions, err
}

// InternalInfo is GET .../internal-info: the managed ledger as stored in
// the metadata store right now (each ledger's offload state included).
type InternalInfo struct {
	Version            int64                `json:"version"`
	CreationDate       string               `json:"creationDate"`
	ModificationDate   string               `json:"modificationDate"`
	Ledgers            []InternalInfoLedger `json:"ledgers"`
	TerminatedPosition *struct {
		LedgerID int64 `json:"ledgerId"`
		EntryID  int64 `json:"entryId"`
	} `json:"terminatedPosition"`
	Cursors map[string]json.RawMessage `json:"cursors"`
}

// InternalInfoLedger is one ledger of InternalInfo.
type InternalInfoLedger struct {
	LedgerID             int64  `json:"ledgerId"`
	Entries              int64  `json:"entries"`
	Size                 int64  `json:"size"`
	Timestamp            int64  `json:"timestamp"`
	IsOffloaded          bool   `json:"isOffloaded"`
	OffloadedContextUUID string `json:"offloadedContextUuid"`
}

// InternalInfo returns the stored managed-ledger info of a (non-partitioned
// or partition) topic.
func (br *Broker) InternalInfo(ctx context.Context, topic string) (*InternalInfo, error) {
	return topicGet[InternalInfo](ctx, br, topic, "/internal-info")
}

// InternalStats is GET .../internalStats: the broker's in-memory view of
// the managed ledger (it shows an external metadata change only after an
// unload).
type InternalStats struct {
	EntriesAddedCounter  int64                      `json:"entriesAddedCounter"`
	NumberOfEntries      int64                      `json:"numberOfEntries"`
	TotalSize            int64                      `json:"totalSize"`
	CurrentLedgerEntries int64                      `json:"currentLedgerEntries"`
	State                string                     `json:"state"`
	LastConfirmedEntry   string                     `json:"lastConfirmedEntry"`
	Ledgers              []InternalStatsLedger      `json:"ledgers"`
	Cursors              map[string]json.RawMessage `json:"cursors"`
}

// InternalStatsLedger is one ledger of InternalStats.
type InternalStatsLedger struct {
	LedgerID        int64 `json:"ledgerId"`
	Entries         int64 `json:"entries"`
	Size            int64 `json:"size"`
	Offloaded       bool  `json:"offloaded"`
	UnderReplicated bool  `json:"underReplicated"`
}

// InternalStats returns the broker's internal stats of a (non-partitioned
// or partition) topic.
func (br *Broker) InternalStats(ctx context.Context, topic string) (*InternalStats, error) {
	return topicGet[InternalStats](ctx, br, topic, "/internalStats")
}

// OffloadPrefix asks the broker's own offloader to offload every closed
// ledger before ledgerID (PUT .../offload with a message id); 409 when an
// offload is already running.
func (br *Broker) OffloadPrefix(ctx context.Context, topic string, ledgerID, entryID int64) error {
	_, err := br.topicCall(ctx, http.MethodPut, topic, "/offload", map[string]int64{"ledgerId": ledgerID, "entryId": entryID, "partitionIndex": -1}, nil)
	return err
}

// OffloadStatus is GET .../offload.
type OffloadStatus struct {
	Status    string `json:"status"` // NOT_RUN, RUNNING, SUCCESS, ERROR
	LastError string `json:"lastError"`
}

// OffloadStatus returns the state of the broker's last offload of topic.
func (br *Broker) OffloadStatus(ctx context.Context, topic string) (*OffloadStatus, error) {
	return topicGet[OffloadStatus](ctx, br, topic, "/offload")
}
