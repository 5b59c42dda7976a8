package compat

// The broker's own offloader and tierkeeper on one topic (docs/service.md,
// "Topics the broker offloads itself"): a stock Pulsar 4.0.8 broker keeps
// the managed ledger's ledger list in memory, and when it offloads
// (ManagedLedgerImpl.offloadPrefix) it first deletes the objects of the
// attempt its in-memory context names, even when its own write then fails
// on the version tierkeeper bumped. The reproduction: tierkeeper prepares
// the ledgers, the broker reloads the topic (so it holds the attempts
// unfinished), tierkeeper commits, an admin "topics offload" runs before
// tierkeeper's unload, the broker's deletion lag is 0, the broker
// restarts, and a Reader from the earliest position must still get every
// message. tierkeeper refuses the topic when its namespace sets an offload
// threshold (the broker offloads it itself); on a topic without one, where
// only an operator's admin offload makes the broker offload, the objects
// carry a UUID the broker never holds, so nothing is lost either.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// offloaderNamespace creates namespace public/<name> whose policies set
// an offload threshold of 1 GiB (the broker offloads its topics itself,
// though not while these tests write a few MiB) and a deletion lag of 0
// (the broker deletes the BookKeeper copy of a ledger at its first
// retention check after the offload), as pulsar-admin namespaces create,
// set-offload-threshold and set-offload-deletion-lag do. It returns the
// namespace ("public/<name>").
func offloaderNamespace(t *testing.T, ctx context.Context, b *testenv.Broker, name string, threshold bool) string {
	t.Helper()
	ns := "public/" + name
	if _, err := b.AdminDo(ctx, "PUT", "/admin/v2/namespaces/"+ns, nil, nil); err != nil {
		t.Fatal(err)
	}
	if threshold {
		if _, err := b.AdminDo(ctx, "PUT", "/admin/v2/namespaces/"+ns+"/offloadThreshold", int64(1<<30), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.AdminDo(ctx, "PUT", "/admin/v2/namespaces/"+ns+"/offloadDeletionLagMs", int64(0), nil); err != nil {
		t.Fatal(err)
	}
	return ns
}

// offloadContexts returns, per ledger of ml, whether an offload attempt
// is recorded and whether tierkeeper recorded it.
func offloadContexts(t *testing.T, ctx context.Context, meta *mledger.Store, ml string) (attempts, ours, complete int) {
	t.Helper()
	snap, err := meta.Get(ctx, ml)
	if err != nil {
		t.Fatal(err)
	}
	for _, li := range snap.Info.GetLedgerInfo() {
		if id, ok := mledger.AttemptUUID(li.GetOffloadContext()); ok {
			attempts++
			if mledger.OwnAttempt(id) {
				ours++
			}
			if li.GetOffloadContext().GetComplete() {
				complete++
			}
		}
	}
	return attempts, ours, complete
}

// brokerOffloadAll has the broker offload every closed ledger of topic
// (pulsar-admin topics offload up to the current ledger) and waits for it
// to end; it returns the broker's final status.
func brokerOffloadAll(t *testing.T, ctx context.Context, b *testenv.Broker, topic string) *testenv.OffloadStatus {
	t.Helper()
	st, err := b.InternalStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	last := st.Ledgers[len(st.Ledgers)-1].LedgerID
	if err := b.OffloadPrefix(ctx, topic, last, 0); err != nil {
		t.Fatal(err)
	}
	var s *testenv.OffloadStatus
	testenv.WaitFor(t, "the broker's offload of "+topic, 2*time.Minute, 200*time.Millisecond, func() bool {
		s, err = b.OffloadStatus(ctx, topic)
		return err == nil && (s.Status == "SUCCESS" || s.Status == "ERROR")
	})
	return s
}

// waitBKDeleted waits for the BookKeeper ledgers ids to be deleted (the
// broker's deletion lag is 0).
func waitBKDeleted(t *testing.T, ctx context.Context, bk *metadata.Store, ids []int64) {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("the broker to delete BookKeeper ledgers %v", ids), time.Minute, 250*time.Millisecond, func() bool {
		for _, id := range ids {
			if _, err := bk.ReadLedger(ctx, id); !errors.Is(err, metadata.ErrNoSuchLedger) {
				return false
			}
		}
		return true
	})
}

// TestBrokerOffloaderTopicRefused runs the reproduction with `offloader
// offload`: failpoints hold the run after its prepare (the test has the
// broker reload the topic then) and after its commit (the test runs the
// admin offload then). The command refuses the topic before writing
// anything, the broker offloads it itself, deletes the BookKeeper copies,
// restarts, and serves every message. (On a tierkeeper that does not
// refuse, the same run loses the first ledger: its objects are deleted by
// the broker's offload, then its BookKeeper copy by the deletion lag.)
func TestBrokerOffloaderTopicRefused(t *testing.T) {
	b := sharedBroker(t)
	ctx := t.Context()
	topic, ml, prod, closed := raceTopic(t, ctx, b, "brokeroffload", true, 41)
	meta, _ := mlStore(t)
	bk := bkStore(t, sharedBookies(t))

	r := runWithBrokerOffload(t, ctx, b, meta, ml, topic)
	// Refused before anything was written: exit status 1, the reason named.
	if r.err == nil || !strings.Contains(r.stderr.String(), "left to the broker's own offloader") ||
		!strings.Contains(r.stderr.String(), "namespace offload policy threshold (bytes) = 1073741824") {
		t.Errorf("offloader offload: %v, want the topic refused for its namespace's offload threshold; stdout %s; stderr:\n%s", r.err, r.stdout.String(), r.stderr.String())
	}
	if attempts, ours, _ := offloadContexts(t, ctx, meta, ml); attempts != 0 || ours != 0 || r.reloaded {
		t.Errorf("after the refusal: %d offload attempts recorded (%d by tierkeeper), reloaded %v; want none", attempts, ours, r.reloaded)
	}
	t.Logf("offloader offload refused the topic: %s", lastLine(r.stderr.String()))

	// The broker offloads the topic itself, its deletion lag (0) removes
	// the BookKeeper copies, it restarts, and every message comes back.
	if !r.brokerOffloaded {
		if s := brokerOffloadAll(t, ctx, b, topic); s.Status != "SUCCESS" {
			t.Fatalf("the broker's own offload: %+v", s)
		}
	}
	waitBKDeleted(t, ctx, bk, closed)
	b.Restart(t)
	readAllFromStore(t, ctx, b, topic, prod)
	t.Logf("after the broker's offload, its BookKeeper deletion of ledgers %v and a restart, a Reader from the earliest position got all %d messages", closed, prod.Count)
}

// raceTopic produces 350 messages (ledgers of 100) into a topic of a new
// namespace public/<prefix>-N (with an offload threshold or not, deletion
// lag 0) and returns the topic, its managed ledger, the messages and the
// closed ledgers.
func raceTopic(t *testing.T, ctx context.Context, b *testenv.Broker, prefix string, threshold bool, seed int64) (topic, ml string, prod *testenv.Messages, closed []int64) {
	t.Helper()
	ns := offloaderNamespace(t, ctx, b, fmt.Sprintf("%s-%d", prefix, topicSeq.Add(1)), threshold)
	topic = fmt.Sprintf("persistent://%s/orders", ns)
	prod = produceLedgers(t, ctx, b, topic, 350, seed)
	ml, err := mledger.MLNameForTopic(topic)
	if err != nil {
		t.Fatal(err)
	}
	closed = prod.LedgerIDs()[-1]
	return topic, ml, prod, closed[:len(closed)-1]
}

// brokerRace is what runWithBrokerOffload saw.
type brokerRace struct {
	err                       error // the command's exit
	stdout, stderr            bytes.Buffer
	reloaded, brokerOffloaded bool
}

// runWithBrokerOffload runs `offloader offload` on topic with failpoints
// that hold it after its prepare and after its commit, and plays the
// broker's side meanwhile: once tierkeeper's attempts are recorded it
// reloads the topic (the broker then holds them unfinished in memory),
// once they are committed (and before the command's unload) it runs an
// admin offload of every closed ledger.
func runWithBrokerOffload(t *testing.T, ctx context.Context, b *testenv.Broker, meta *mledger.Store, ml, topic string) *brokerRace {
	t.Helper()
	bin := testenv.BuiltCommand(t, "offloader")
	cmd := exec.CommandContext(ctx, bin, "offload", "-o", "json", "--zk", sharedZK(t).Addr, "--store", s3test.StoreFile(t, testenv.StartS3(t), brokerBucket),
		"--admin-url", b.WebURL, topic)
	cmd.Env = append(os.Environ(), pipeline.FailpointEnv+"="+pipeline.FPAfterPrepare+"@1=sleep:8s,"+pipeline.FPAfterCommit+"@1=sleep:15s")
	r := &brokerRace{}
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(3 * time.Minute)
	for {
		select {
		case r.err = <-done:
			return r
		case <-deadline:
			t.Fatalf("offloader offload did not end within 3m; stderr:\n%s", r.stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		attempts, _, complete := offloadContexts(t, ctx, meta, ml)
		switch {
		case attempts > 0 && complete == 0 && !r.reloaded:
			if err := b.Unload(ctx, topic); err != nil {
				t.Fatal(err)
			}
			if _, err := b.InternalStats(ctx, topic); err != nil { // loads it again: the broker holds the attempts unfinished
				t.Fatal(err)
			}
			r.reloaded = true
			t.Logf("tierkeeper prepared %d ledgers; the broker reloaded the topic", attempts)
		case complete > 0 && !r.brokerOffloaded:
			s := brokerOffloadAll(t, ctx, b, topic)
			r.brokerOffloaded = true
			t.Logf("tierkeeper committed %d ledgers; the broker's admin offload then ended %s %s", complete, s.Status, s.LastError)
		}
	}
}

// TestOperatorOffloadKeepsCommittedObjects: the reproduction on a topic
// that no policy makes the broker offload (no threshold anywhere), so
// the command does not refuse it, and an operator's admin offload runs
// between tierkeeper's commit and its unload. The broker cleans up the
// attempts its memory holds, which are prepare UUIDs that name no object
// (docs/design.md invariant 11); its write then fails on the version the
// commit bumped. Its deletion lag (0) removes the BookKeeper copies, it
// restarts, and a Reader from the earliest position gets every message
// from tierkeeper's objects. (Before the prepare and the objects had two
// UUIDs, this run lost the ledgers: the broker's cleanup deleted the
// committed objects, then the deletion lag their BookKeeper copies.)
func TestOperatorOffloadKeepsCommittedObjects(t *testing.T) {
	b := sharedBroker(t)
	ctx := t.Context()
	topic, ml, prod, closed := raceTopic(t, ctx, b, "operatoroffload", false, 44)
	meta, _ := mlStore(t)
	bk := bkStore(t, sharedBookies(t))

	r := runWithBrokerOffload(t, ctx, b, meta, ml, topic)
	if r.err != nil || !r.reloaded || !r.brokerOffloaded {
		t.Fatalf("offloader offload: %v (broker reloaded %v, admin offload run %v); stdout %s; stderr:\n%s", r.err, r.reloaded, r.brokerOffloaded, r.stdout.String(), r.stderr.String())
	}
	if attempts, ours, complete := offloadContexts(t, ctx, meta, ml); ours != len(closed) || complete != len(closed) || attempts != len(closed) {
		t.Fatalf("%d attempts recorded, %d by tierkeeper, %d complete; want tierkeeper's %d, complete", attempts, ours, complete, len(closed))
	}
	waitBKDeleted(t, ctx, bk, closed)
	b.Restart(t)
	readAllFromStore(t, ctx, b, topic, prod)
	t.Logf("after the operator's offload, the broker's BookKeeper deletion of ledgers %v and a restart, a Reader from the earliest position got all %d messages", closed, prod.Count)
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}

// TestBrokerOffloaderTopicRefusedByService: the same with `offloader run`
// and pulsar_namespace_policies enabled. The service offloads a topic of
// a namespace without offload threshold (the broker's runtime
// configuration, read through the admin API, has none; topic-level
// policies are disabled on the broker, which it answers with 405), and
// leaves the topic of the namespace with a threshold to the broker, with
// the reason in /status; the broker's admin offload, its deletion lag of
// 0 and a restart lose nothing.
func TestBrokerOffloaderTopicRefusedByService(t *testing.T) {
	b := sharedBroker(t)
	ctx := t.Context()
	seq := topicSeq.Add(1)
	nsBroker := offloaderNamespace(t, ctx, b, fmt.Sprintf("svc-broker-%d", seq), true)
	nsOurs := offloaderNamespace(t, ctx, b, fmt.Sprintf("svc-ours-%d", seq), false)
	theirs, ours := "persistent://"+nsBroker+"/orders", "persistent://"+nsOurs+"/orders"
	prodTheirs := produceLedgers(t, ctx, b, theirs, 250, 42)
	prodOurs := produceLedgers(t, ctx, b, ours, 250, 43)
	mlTheirs, _ := mledger.MLNameForTopic(theirs)
	mlOurs, _ := mledger.MLNameForTopic(ours)
	meta, _ := mlStore(t)

	s3 := testenv.StartS3(t)
	doc := fmt.Sprintf("zookeeper: {servers: %q, session_timeout: 10s, connect_timeout: 10s}\nbookkeeper: {ledgers_root: %q}\nadmin: {url: %q, timeout: 10s}\n",
		sharedZK(t).Addr, sharedBookies(t).LedgersRoot, b.WebURL) + s3test.StoreYAML(s3, brokerBucket, "TK_S3_SECRET") + fmt.Sprintf(`
scheduler: {interval: 1s, retry_initial: 1s, retry_max: 5s, stop_timeout: 10s, min_reload_interval: 0s}
policy:
  include: [%q, %q]
  default: {after: 0s}
  pulsar_namespace_policies: {enabled: true}
`, nsBroker, nsOurs)
	cfg, err := offloader.Parse([]byte(doc), offloader.ParseOptions{Getenv: func(string) string { return s3.SecretKey }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := offloader.New(ctx, cfg, offloader.Deps{Listener: ln, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- svc.Run(sctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Error("the service did not stop within 30s")
		}
	})
	defer stop()

	var st offloader.Status
	testenv.WaitFor(t, "the service to offload "+ours+" and refuse "+theirs, 2*time.Minute, 250*time.Millisecond, func() bool {
		st = svc.Status()
		_, _, complete := offloadContexts(t, ctx, meta, mlOurs)
		refused := false
		for _, ts := range st.Topics {
			if ts.Topic == theirs && strings.Contains(ts.Refused, "namespace offload policy threshold (bytes) = 1073741824") {
				refused = true
			}
		}
		return refused && complete == len(prodOurs.LedgerIDs()[-1])-1
	})
	for _, ts := range st.Topics {
		t.Logf("/status %s: refused %q, next %q", ts.Topic, ts.Refused, ts.NextAction)
	}
	if attempts, _, _ := offloadContexts(t, ctx, meta, mlTheirs); attempts != 0 || st.Totals.RefusedTopics != 1 {
		t.Fatalf("%d offload attempts recorded on the refused topic, %d topics refused; want 0 and 1", attempts, st.Totals.RefusedTopics)
	}
	if raw, err := json.Marshal(st); err != nil || !strings.Contains(string(raw), `"refused":"the broker offloads this topic itself`) {
		t.Fatalf("/status JSON does not carry the refusal: %v %.500s", err, raw)
	}

	// The broker offloads its topic itself while the service runs; the
	// service still does not touch it.
	if s := brokerOffloadAll(t, ctx, b, theirs); s.Status != "SUCCESS" {
		t.Fatalf("the broker's own offload: %+v", s)
	}
	time.Sleep(2 * time.Second) // two more evaluations
	if _, ours, _ := offloadContexts(t, ctx, meta, mlTheirs); ours != 0 {
		t.Fatalf("the service recorded %d attempts on the broker's topic", ours)
	}
	stop()
	closed := prodTheirs.LedgerIDs()[-1]
	waitBKDeleted(t, ctx, bkStore(t, sharedBookies(t)), closed[:len(closed)-1])
	b.Restart(t)
	readAllFromStore(t, ctx, b, theirs, prodTheirs)
	readAllFromStore(t, ctx, b, ours, prodOurs)
	t.Logf("after a restart every message of both topics came back: %d (the broker's offload) and %d (tierkeeper's)", prodTheirs.Count, prodOurs.Count)
}
