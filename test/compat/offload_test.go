package compat

// The offloader's main job end to end with a stock Pulsar 4.0.8 broker and
// real Pulsar clients: messages produced through the broker, their closed
// ledgers offloaded by the real `offloader offload` binary (Go) to
// versitygw, the BookKeeper copies deleted, the broker restarted, every
// message read back by a Reader from the earliest position.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

var offBrokerOnce once[*offloadBroker]

// offloadBroker is a stock broker with an aws-s3 offloader on a versitygw
// bucket (so it reads offloaded ledgers back); its own deletion lag is
// "never", so only tierkeeper deletes BookKeeper copies unless a namespace
// policy says otherwise.
type offloadBroker struct {
	*testenv.Broker
	s3     *testenv.S3
	bucket string
	store  string // blob config file for the offloader
}

// sharedOffloadBroker is the package's sharedBroker (same configuration: aws-s3 on
// brokerBucket, deletion lag never): a cluster has one running broker at a
// time, a second one would split the namespace bundles with it.
func sharedOffloadBroker(t testing.TB) *offloadBroker {
	t.Helper()
	b := sharedBroker(t)
	s3 := testenv.StartS3(t)
	return offBrokerOnce.get(t, "broker with an S3 offloader", func(tb testing.TB) *offloadBroker {
		return &offloadBroker{Broker: b, s3: s3, bucket: brokerBucket, store: s3test.StoreFile(tb, s3, brokerBucket)}
	})
}

// offloadRun is the part of `offloader offload -o json` the tests read.
type offloadRun struct {
	ManagedLedgers []struct {
		Name    string `json:"name"`
		Ledgers []struct {
			LedgerID int64  `json:"ledgerId"`
			Outcome  string `json:"outcome"`
			UUID     string `json:"uuid"`
			Error    string `json:"error"`
			Verify   *struct {
				Level   string `json:"level"`
				Entries int64  `json:"entries"`
			} `json:"verify"`
			Trim *struct {
				Deleted    bool  `json:"bookkeeperLedgerDeleted"`
				FreedBytes int64 `json:"freedBytes"`
			} `json:"trim"`
			Leftovers  []string `json:"leftovers"`
			Superseded []string `json:"superseded"`
		} `json:"ledgers"`
		Reload *struct {
			Done     bool   `json:"done"`
			Unloaded bool   `json:"unloaded"`
			Note     string `json:"note"`
		} `json:"reload"`
	} `json:"managedLedgers"`
	Totals struct {
		Ledgers      int   `json:"ledgers"`
		Offloaded    int   `json:"offloaded"`
		Failed       int   `json:"failed"`
		Bytes        int64 `json:"bytes"`
		BKBytesFreed int64 `json:"bookkeeperBytesFreed"`
		BKDeleted    int   `json:"bookkeeperLedgersDeleted"`
	} `json:"totals"`
}

// runOffload runs `offloader offload -o json` and decodes its result; the
// error is the process's (stderr in the message).
func runOffload(ctx context.Context, t testing.TB, env []string, args ...string) (*offloadRun, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, testenv.BuiltCommand(t, "offloader"), append([]string{"offload", "-o", "json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var res offloadRun
	if out.Len() > 0 {
		if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil && err == nil {
			return nil, fmt.Errorf("offloader output: %v: %.500q", jerr, out.String())
		}
	}
	if err != nil {
		return &res, fmt.Errorf("offloader %s: %v; stderr: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return &res, nil
}

// bkGone reports whether a ledger's BookKeeper metadata is gone.
func bkGone(t testing.TB, ctx context.Context, id int64) bool {
	t.Helper()
	sess := sharedZK(t).Session(t, tkzk.Options{})
	defer sess.Close()
	st, err := metadata.NewStore(ctx, sess.Conn, metadata.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.ReadLedger(ctx, id)
	if err != nil && !errors.Is(err, metadata.ErrNoSuchLedger) {
		t.Fatal(err)
	}
	return errors.Is(err, metadata.ErrNoSuchLedger)
}

// runTool runs an offloader subcommand and returns its stdout.
func runTool(ctx context.Context, t testing.TB, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, testenv.BuiltCommand(t, "offloader"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("offloader %s: %v; stderr: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// TestOffloadStockBrokerS3: ten ledgers produced through a stock broker are
// offloaded by `offloader offload` (verified in full, committed, the topic
// unloaded through the admin API); `offloader verify` compares them with
// BookKeeper entry by entry and `offloader status` shows the broker
// reading them from the object store. A second run with
// --delete-bookkeeper takes the ledger the reload closed and deletes every
// BookKeeper copy; verify then checks the objects against their index and
// `ledger read --store` reads a ledger from the objects. After a broker
// restart a Reader from the earliest position reads every message with the
// same payload and the broker's internalStats say offloaded. A third run
// finds nothing to do.
func TestOffloadStockBrokerS3(t *testing.T) {
	b := sharedOffloadBroker(t)
	j := sharedJava(t)
	ctx := t.Context()
	topic := uniqueTopic(t)
	const n = 1050 // 10 full ledgers of 100 entries + the current one
	prod, err := j.Produce(ctx, b.Broker, topic, testenv.ProduceOptions{Count: n, Seed: 21, Sizes: []int{0, 10, 1000, 20000, 70000}})
	if err != nil {
		t.Fatal(err)
	}
	ledgers := prod.LedgerIDs()[-1]
	if len(ledgers) != 11 {
		t.Fatalf("produced into ledgers %v, want 11", ledgers)
	}
	zkArgs := []string{"--zk", sharedZK(t).Addr, "--store", b.store}
	res, err := runOffload(ctx, t, nil, append(zkArgs, "--admin-url", b.WebURL, topic)...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Offloaded != 10 || res.Totals.Failed != 0 || res.Totals.BKDeleted != 0 || len(res.ManagedLedgers) != 1 {
		t.Fatalf("offload totals %+v", res.Totals)
	}
	ml := res.ManagedLedgers[0]
	if ml.Reload == nil || !ml.Reload.Done || !ml.Reload.Unloaded {
		t.Fatalf("reload %+v", ml.Reload)
	}
	for i, l := range ml.Ledgers {
		if l.LedgerID != ledgers[i] || l.Outcome != "offloaded" || l.Verify == nil || l.Verify.Level != "full" || l.Verify.Entries != 100 {
			t.Fatalf("ledger %d: %+v", ledgers[i], l)
		}
	}
	type verifyOut struct {
		OK      bool `json:"ok"`
		Ledgers []struct {
			LedgerID int64 `json:"ledgerId"`
			OK       bool  `json:"ok"`
			Report   struct {
				Level   string `json:"level"`
				Entries int64  `json:"entries"`
			} `json:"report"`
		} `json:"ledgers"`
	}
	verify := func(level string, want int) {
		t.Helper()
		out, err := runTool(ctx, t, append(append([]string{"verify", "-o", "json"}, zkArgs...), topic)...)
		if err != nil {
			t.Fatal(err)
		}
		var v verifyOut
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		if !v.OK || len(v.Ledgers) != want {
			t.Fatalf("verify: %s", out)
		}
		for _, l := range v.Ledgers {
			if !l.OK || l.Report.Level != level || l.Report.Entries < 50 {
				t.Fatalf("verify ledger %d: %+v", l.LedgerID, l)
			}
		}
	}
	verify("full", 10)
	out, err := runTool(ctx, t, append(append([]string{"status", "-o", "json", "--admin-url", b.WebURL}, zkArgs...), topic)...)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		ManagedLedgers []struct {
			Ledgers []struct {
				LedgerID   int64  `json:"ledgerId"`
				State      string `json:"state"`
				ReadsFrom  string `json:"readsFrom"`
				Source     string `json:"readsFromSource"`
				BookKeeper string `json:"bookkeeper"`
				Objects    *struct {
					Data, Index bool
				} `json:"objects"`
			} `json:"ledgers"`
		} `json:"managedLedgers"`
	}
	if err := json.Unmarshal(out, &st); err != nil || len(st.ManagedLedgers) != 1 {
		t.Fatalf("status: %v %s", err, out)
	}
	for _, l := range st.ManagedLedgers[0].Ledgers[:10] {
		if l.State != "offloaded" || l.ReadsFrom != "object store" || l.Source != "broker" || l.BookKeeper != "present" ||
			l.Objects == nil || !l.Objects.Data || !l.Objects.Index {
			t.Fatalf("status of ledger %d: %+v", l.LedgerID, l)
		}
	}

	// The reload closed the ledger that was current (the broker recovers
	// it and opens a new one): the second run takes that one too.
	res, err = runOffload(ctx, t, nil, append(zkArgs, "--admin-url", b.WebURL, "--delete-bookkeeper", topic)...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Offloaded != 1 || res.Totals.BKDeleted != 11 {
		t.Fatalf("second run totals %+v", res.Totals)
	}
	for _, l := range res.ManagedLedgers[0].Ledgers {
		if l.Trim == nil || !l.Trim.Deleted || l.Trim.FreedBytes == 0 || !bkGone(t, ctx, l.LedgerID) {
			t.Fatalf("ledger %d after trim: %+v", l.LedgerID, l.Trim)
		}
	}
	verify("objects", 11)
	out, err = runTool(ctx, t, "ledger", "read", "-o", "json", "--verify-only", "--zk", sharedZK(t).Addr, "--store", b.store,
		"--topic", topic, "--ledger", fmt.Sprint(ledgers[3]))
	if err != nil {
		t.Fatal(err)
	}
	var rs struct {
		Entries int64 `json:"entries"`
		Bytes   int64 `json:"bytes"`
	}
	if err := json.Unmarshal(out, &rs); err != nil || rs.Entries != 100 || rs.Bytes == 0 {
		t.Fatalf("ledger read --store: %v %s", err, out)
	}

	// The broker serves them from the object store, before and after a restart.
	read, err := j.ReadAll(ctx, b.Broker, topic, testenv.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, prod, read, true)
	b.Restart(t)
	read, err = j.ReadAll(ctx, b.Broker, topic, testenv.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, prod, read, true)
	checkPayloads(t, read.Messages, 21)
	stats, err := b.InternalStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for _, l := range stats.Ledgers {
		if l.Offloaded {
			off++
		}
	}
	if off != 11 {
		t.Fatalf("internalStats: %d ledgers offloaded, want 11: %+v", off, stats.Ledgers)
	}
	res, err = runOffload(ctx, t, nil, append(zkArgs, "--admin-url", b.WebURL, "--delete-bookkeeper", topic)...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Offloaded != 0 || res.Totals.BKBytesFreed != 0 {
		t.Fatalf("third run: %+v", res.Totals)
	}
}

// TestOffloadBrokerDeletesBookKeeperCopy: without --delete-bookkeeper the
// broker's own trimmer removes the BookKeeper copies after its deletion lag
// (a namespace policy of 0 ms here), once the unload made it read the
// offloaded metadata; the messages stay readable.
func TestOffloadBrokerDeletesBookKeeperCopy(t *testing.T) {
	b := sharedOffloadBroker(t)
	j := sharedJava(t)
	ctx := t.Context()
	ns := fmt.Sprintf("public/lag0-%d", topicSeq.Add(1))
	if _, err := b.AdminDo(ctx, "PUT", "/admin/v2/namespaces/"+ns, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AdminDo(ctx, "PUT", "/admin/v2/namespaces/"+ns+"/offloadDeletionLagMs", 0, nil); err != nil {
		t.Fatal(err)
	}
	topic := "persistent://" + ns + "/" + nonName.ReplaceAllString(t.Name(), "_")
	prod, err := j.Produce(ctx, b.Broker, topic, testenv.ProduceOptions{Count: 350, Seed: 22, Size: 2000})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runOffload(ctx, t, nil, "--zk", sharedZK(t).Addr, "--store", b.store, "--admin-url", b.WebURL, topic)
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.Offloaded != 3 || res.Totals.BKDeleted != 0 {
		t.Fatalf("offload totals %+v", res.Totals)
	}
	ids := prod.LedgerIDs()[-1][:3]
	deadline := time.Now().Add(60 * time.Second)
	for {
		gone := 0
		for _, id := range ids {
			if bkGone(t, ctx, id) {
				gone++
			}
		}
		if gone == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			st, _ := b.InternalStats(ctx, topic)
			out, _ := exec.Command("grep", "-i", "-E", "offload|trim|lag", b.LogPath()).CombinedOutput()
			t.Fatalf("the broker deleted %d of the BookKeeper copies of %v in 60 s; stats %+v\n%s", gone, ids, st, out)
		}
		time.Sleep(time.Second)
	}
	read, err := j.ReadAll(ctx, b.Broker, topic, testenv.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, prod, read, true)
}

// TestOffloadPartitionedTopic: the base name of a partitioned topic means
// every partition; each partition's closed ledgers are offloaded and the
// messages of all three read back.
func TestOffloadPartitionedTopic(t *testing.T) {
	b := sharedOffloadBroker(t)
	j := sharedJava(t)
	ctx := t.Context()
	topic := uniqueTopic(t)
	if err := b.CreatePartitionedTopic(ctx, topic, 3); err != nil {
		t.Fatal(err)
	}
	prod, err := j.Produce(ctx, b.Broker, topic, testenv.ProduceOptions{Count: 960, Seed: 23, Size: 3000})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, ls := range prod.LedgerIDs() {
		want += len(ls) - 1
	}
	res, err := runOffload(ctx, t, nil, "--zk", sharedZK(t).Addr, "--store", b.store, "--admin-url", b.WebURL,
		"--delete-bookkeeper", strings.TrimPrefix(topic, "persistent://"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ManagedLedgers) != 3 || res.Totals.Offloaded != want || want < 3 || res.Totals.BKDeleted != want {
		t.Fatalf("partitions %d, totals %+v, want %d offloaded", len(res.ManagedLedgers), res.Totals, want)
	}
	for i, m := range res.ManagedLedgers {
		if !strings.HasSuffix(m.Name, fmt.Sprintf("-partition-%d", i)) || m.Reload == nil || !m.Reload.Done {
			t.Fatalf("managed ledger %d: %s reload %+v", i, m.Name, m.Reload)
		}
	}
	read, err := j.ReadAll(ctx, b.Broker, topic, testenv.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, prod, read, false)
}

// TestOffloadWhileProducing: offloads commit while a producer keeps writing
// and ledgers keep rolling (the broker meets the version Go's writes
// bumped, fences and reopens the managed ledger; the unload closes the
// topic; the producer reconnects). Three rounds, each started once the
// broker has closed a ledger written after the previous round's commit:
// every round offloads and trims new ledgers (never the current one), the
// producer goes on writing into new ledgers after each, the broker ends
// serving exactly the offloaded ledgers from the object store with their
// BookKeeper copies gone, and every acknowledged message is read back,
// those of the offloaded ledgers from the object store.
func TestOffloadWhileProducing(t *testing.T) {
	b := sharedOffloadBroker(t)
	j := sharedJava(t)
	ctx := t.Context()
	topic := uniqueTopic(t)
	// 150 msg/s: a rollover every 0.7 s (100 entries per ledger), fewer
	// than a loaded machine offloads, so the rounds do not grow.
	p := j.StartProducer(t, b.Broker, topic, testenv.KeepProducingOptions{Rate: 150, Seed: 24, Size: 1500, MaxDuration: 5 * time.Minute})
	// waitLedgers waits until acknowledged messages went to n ledgers above
	// id: with n = 2 the first of them, current when the last round ran, has
	// been closed by a rollover since, so there is a new ledger to offload.
	waitLedgers := func(id int64, n int) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			ms, err := p.AckedSoFar()
			if err != nil {
				t.Fatal(err)
			}
			above := map[int64]bool{}
			for _, m := range ms {
				if m.LedgerID > id {
					above[m.LedgerID] = true
				}
			}
			if len(above) >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 90 s the producer's messages went to %d ledgers above %d, want %d (%d acknowledged in all)", len(above), id, n, len(ms))
			}
			time.Sleep(100 * time.Millisecond) // polling the producer's record, not a wait for the broker
		}
	}
	if err := p.WaitAcked(150, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	waitLedgers(-1, 3)
	offloaded := map[int64]bool{}
	last := int64(-1)
	for round := 0; round < 3; round++ {
		res, err := runOffload(ctx, t, nil, "--zk", sharedZK(t).Addr, "--store", b.store, "--admin-url", b.WebURL, "--delete-bookkeeper", topic)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(res.ManagedLedgers) != 1 {
			t.Fatalf("round %d: %d managed ledgers", round, len(res.ManagedLedgers))
		}
		m := res.ManagedLedgers[0]
		fresh := 0
		for _, l := range m.Ledgers {
			switch {
			case l.Trim == nil || !l.Trim.Deleted:
				t.Fatalf("round %d: ledger %d not trimmed: %+v", round, l.LedgerID, l)
			case l.Outcome == "offloaded" && l.LedgerID > last:
				offloaded[l.LedgerID] = true
				fresh++
			case l.Outcome == "already-offloaded" && offloaded[l.LedgerID]:
			default:
				t.Fatalf("round %d: ledger %d %s (ledgers up to %d offloaded before): %s", round, l.LedgerID, l.Outcome, last, l.Error)
			}
		}
		for id := range offloaded {
			last = max(last, id)
		}
		if fresh == 0 || m.Reload == nil || !m.Reload.Done {
			t.Fatalf("round %d: %d new ledgers offloaded, reload %+v", round, fresh, m.Reload)
		}
		t.Logf("round %d: %d ledgers offloaded, up to ledger %d", round, fresh, last)
		waitLedgers(last, 2)
	}
	pr, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	// Everything the broker has, not just pr.Acked messages: a send whose
	// acknowledgement was lost in a topic close is sent again, so the topic
	// may hold more messages than were acknowledged (at-least-once).
	read, err := j.ReadAll(ctx, b.Broker, topic, testenv.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range read.Messages {
		got[fmt.Sprintf("%d:%d:%d", m.LedgerID, m.EntryID, m.BatchIndex)] = m.SHA256
	}
	fromStore, after := 0, 0
	for _, m := range pr.AckedMessages {
		if got[fmt.Sprintf("%d:%d:%d", m.LedgerID, m.EntryID, m.BatchIndex)] != m.SHA256 {
			t.Fatalf("acknowledged message %s (index %d) not read back", m.MessageID, m.Index)
		}
		switch {
		case offloaded[m.LedgerID]:
			fromStore++
		case m.LedgerID > last:
			after++
		}
	}
	if fromStore == 0 || after == 0 {
		t.Fatalf("%d acknowledged messages read from offloaded ledgers, %d written after the last offload", fromStore, after)
	}
	ids := make([]int64, 0, len(offloaded))
	bk := bkStore(t, sharedBookies(t))
	for id := range offloaded {
		ids = append(ids, id)
		if _, err := bk.ReadLedger(ctx, id); !errors.Is(err, metadata.ErrNoSuchLedger) {
			t.Errorf("ledger %d: BookKeeper copy still there (%v)", id, err)
		}
	}
	checkOffloaded(t, ctx, b.Broker, topic, ids, true)
	t.Logf("%d ledgers offloaded while producing; %d acknowledged messages (%d from offloaded ledgers, %d after the last offload), %d read, failed sends %d",
		len(offloaded), pr.Acked, fromStore, after, read.Count, pr.Failed)
}

// TestOffloadBadInput: a topic that does not exist, the current ledger, a
// store that refuses writes, a broker admin URL that refuses the topic,
// an unreachable ZooKeeper: each is a clear error naming the thing, in
// bounded time, and the managed-ledger metadata is unchanged byte for
// byte (same znode version).
func TestOffloadBadInput(t *testing.T) {
	b := sharedOffloadBroker(t)
	j := sharedJava(t)
	ctx := t.Context()
	topic := uniqueTopic(t)
	prod, err := j.Produce(ctx, b.Broker, topic, testenv.ProduceOptions{Count: 250, Seed: 25, Size: 5000})
	if err != nil {
		t.Fatal(err)
	}
	ledgers := prod.LedgerIDs()[-1]
	mlPath := "/managed-ledgers/public/default/persistent/" + strings.TrimPrefix(topic, "persistent://public/default/")
	sess := sharedZK(t).Session(t, tkzk.Options{})
	snapshot := func() (string, int32) {
		data, st, err := sess.Conn.Get(mlPath)
		if err != nil {
			t.Fatal(err)
		}
		return string(data), st.Version
	}
	s3 := testenv.StartS3(t)
	badStore := filepath.Join(t.TempDir(), "bad-store.json")
	badCfg := fmt.Sprintf(`{"type":"s3","config":{"bucket":%q,"region":%q,"endpoint":%q,"addressing":"path",
		"credentials":{"source":"static","access_key_id":%q,"secret_access_key":"WRONG-SECRET"}}}`, b.bucket, s3.Region, s3.Endpoint, s3.AccessKey)
	if err := os.WriteFile(badStore, []byte(badCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	zk := sharedZK(t).Addr
	for _, c := range []struct {
		name string
		args []string
		want []string // substrings of the error
	}{
		{"missing topic", []string{"--zk", zk, "--store", b.store, "persistent://public/default/no-such-topic"},
			[]string{"not found", "no-such-topic"}},
		{"current ledger", []string{"--zk", zk, "--store", b.store, "--ledger", fmt.Sprint(ledgers[len(ledgers)-1]), topic},
			[]string{"current ledger", fmt.Sprint(ledgers[len(ledgers)-1])}},
		{"unknown ledger", []string{"--zk", zk, "--store", b.store, "--ledger", "999999", topic},
			[]string{"not in managed ledger", "999999"}},
		{"store refuses writes", []string{"--zk", zk, "--store", badStore, topic},
			[]string{"copy", "access denied", fmt.Sprintf("ledger-%d", ledgers[0])}},
		{"broker refuses", []string{"--zk", zk, "--store", b.store, "--admin-url", s3.Endpoint, topic},
			[]string{"broker", "nothing was changed", strings.TrimPrefix(topic, "persistent://")}},
		{"zookeeper unreachable", []string{"--zk", "127.0.0.1:1", "--zk-connect-timeout", "2s", "--store", b.store, topic},
			[]string{"zookeeper 127.0.0.1:1"}},
	} {
		before, ver := snapshot()
		start := time.Now()
		_, err := runOffload(ctx, t, nil, c.args...)
		el := time.Since(start)
		if err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not mention %q: %v", c.name, w, err)
			}
		}
		if strings.Contains(err.Error(), "WRONG-SECRET") || strings.Contains(err.Error(), s3.SecretKey) {
			t.Errorf("%s: error shows a secret: %v", c.name, err)
		}
		if el > 60*time.Second {
			t.Errorf("%s: took %s", c.name, el)
		}
		// A refused upload undoes its prepare: the same bytes, two writes later
		// (every ledger prepared in one, every prepare undone in one).
		wantVer := ver
		if c.name == "store refuses writes" {
			wantVer = ver + 2
		}
		if after, ver2 := snapshot(); after != before || ver2 != wantVer {
			t.Errorf("%s: the managed-ledger metadata changed (version %d -> %d, want %d)", c.name, ver, ver2, wantVer)
		}
		t.Logf("%s (%s): %v", c.name, el.Round(time.Millisecond), err)
	}
	// Nothing was written to the bucket for this topic, and a good run still works.
	res, err := runOffload(ctx, t, nil, "--zk", zk, "--store", b.store, topic)
	if err != nil || res.Totals.Offloaded != len(ledgers)-1 {
		t.Fatalf("after the bad runs: %+v %v", res, err)
	}
}

// TestOffloadSIGKILLResumes: the real offloader process is SIGKILLed during
// a multi-ledger offload (with BookKeeper trim) at a random moment, or at
// a random named failpoint through TIERKEEPER_FAILPOINTS, once per seed on
// its own partition of a 20-partition topic; then the same command runs
// again to completion. After each rerun: every closed ledger of the
// partition is offloaded and trimmed, the bucket holds exactly the one
// object pair the metadata references for each of them and no incomplete
// multipart upload, and the rerun lists what it replaced. At the end a
// Reader through the stock broker reads every message of every partition.
func TestOffloadSIGKILLResumes(t *testing.T) {
	const seeds = 20
	b := sharedOffloadBroker(t)
	j := sharedJava(t)
	ctx := t.Context()
	topic := uniqueTopic(t)
	if err := b.CreatePartitionedTopic(ctx, topic, seeds); err != nil {
		t.Fatal(err)
	}
	// 320 entries per partition: three closed ledgers of 100 and the current one.
	prod, err := j.Produce(ctx, b.Broker, topic, testenv.ProduceOptions{Count: seeds * 320, Seed: 26, Sizes: []int{800, 8000, 30000}})
	if err != nil {
		t.Fatal(err)
	}
	parts := prod.LedgerIDs()
	sess := sharedZK(t).Session(t, tkzk.Options{})
	ml := mledger.New(sess.Conn, nil)
	killedMidway := 0
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 26))
		partition := fmt.Sprintf("%s-partition-%d", topic, seed)
		args := []string{"--zk", sharedZK(t).Addr, "--store", b.store, "--admin-url", b.WebURL, "--delete-bookkeeper", partition}
		cmd := exec.CommandContext(ctx, testenv.BuiltCommand(t, "offloader"), append([]string{"offload", "-o", "json"}, args...)...)
		how := ""
		if seed%2 == 1 {
			fp := pipeline.FailpointNames[rng.IntN(len(pipeline.FailpointNames))]
			nth := 1 + rng.IntN(3)
			how = fmt.Sprintf("%s@%d=kill", fp, nth)
			cmd.Env = append(os.Environ(), pipeline.FailpointEnv+"="+how)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if how == "" {
			d := time.Duration(rng.IntN(900)) * time.Millisecond
			how = "SIGKILL after " + d.String()
			done := make(chan struct{})
			go func() {
				select {
				case <-time.After(d):
					_ = cmd.Process.Kill()
				case <-done:
				}
			}()
			err = cmd.Wait()
			close(done)
		} else {
			err = cmd.Wait()
		}
		killed := false
		if ee, ok := err.(*exec.ExitError); ok {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				killed = true
			}
		}
		if err != nil && !killed {
			t.Fatalf("seed %d (%s): the run failed without being killed: %v\n%s", seed, how, err, stderr.String())
		}
		if killed {
			killedMidway++
		}
		res, err := runOffload(ctx, t, nil, args...)
		if err != nil {
			t.Fatalf("seed %d (%s): rerun: %v", seed, how, err)
		}
		var superseded, leftovers []string
		for _, l := range res.ManagedLedgers[0].Ledgers {
			leftovers = append(leftovers, l.Leftovers...)
			superseded = append(superseded, l.Superseded...)
		}
		// The metadata: every closed ledger offloaded, trimmed, and gone from
		// BookKeeper; exactly its object pair in the bucket.
		snap, err := ml.Get(ctx, mlName(partition))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		ids := map[int64]bool{}
		for _, id := range parts[seed][:len(parts[seed])-1] {
			ids[id] = true
		}
		for _, li := range snap.Info.GetLedgerInfo() {
			if !ids[li.GetLedgerId()] {
				continue
			}
			oc := li.GetOffloadContext()
			u, ok := mledger.AttemptUUID(oc)
			if !ok || !oc.GetComplete() || !oc.GetBookkeeperDeleted() || !bkGone(t, ctx, li.GetLedgerId()) {
				t.Fatalf("seed %d (%s): ledger %d after the rerun: %v", seed, how, li.GetLedgerId(), oc)
			}
			want[format.DataKey(u, li.GetLedgerId())], want[format.IndexKey(u, li.GetLedgerId())] = true, true
		}
		if len(want) != 2*len(ids) {
			t.Fatalf("seed %d: %d referenced objects for %d ledgers", seed, len(want), len(ids))
		}
		got := bucketKeysOf(t, ctx, b.s3, b.bucket, ids)
		for _, k := range got {
			if !want[k] && !slices.Contains(leftovers, k) {
				t.Fatalf("seed %d (%s): object %s is referenced by no ledger and not listed as left over (superseded %v)", seed, how, k, superseded)
			}
		}
		for k := range want {
			if !slices.Contains(got, k) {
				t.Fatalf("seed %d (%s): referenced object %s missing", seed, how, k)
			}
		}
		if ups := uploadsOf(t, ctx, b.s3, b.bucket, ids); len(ups) > 0 {
			t.Fatalf("seed %d (%s): incomplete multipart uploads left: %v", seed, how, ups)
		}
		t.Logf("seed %d: %s (killed %v); rerun offloaded %d, superseded %v, leftovers %v", seed, how, killed, res.Totals.Offloaded, superseded, leftovers)
	}
	if killedMidway < seeds/2 {
		t.Fatalf("only %d of %d runs were killed before they finished", killedMidway, seeds)
	}
	read, err := j.ReadAll(ctx, b.Broker, topic, testenv.ReadOptions{Expect: int(prod.Count)})
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, prod, read, false)
}

// mlName is a topic's managed-ledger name.
func mlName(topic string) string {
	n, err := mledger.MLNameForTopic(topic)
	if err != nil {
		panic(err)
	}
	return n
}

// ledgerOfKey returns the ledger id an offload object key names.
func ledgerOfKey(key string) (int64, bool) {
	_, id, _, err := format.ParseKey(key)
	return id, err == nil
}

// bucketKeysOf lists the bucket's objects of the given ledgers.
func bucketKeysOf(t testing.TB, ctx context.Context, s3 *testenv.S3, bucket string, ids map[int64]bool) []string {
	t.Helper()
	var out []string
	p := awss3.NewListObjectsV2Paginator(s3.Client(), &awss3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			if id, ok := ledgerOfKey(aws.ToString(o.Key)); ok && ids[id] {
				out = append(out, aws.ToString(o.Key))
			}
		}
	}
	return out
}

// uploadsOf lists the bucket's incomplete multipart uploads of the given ledgers.
func uploadsOf(t testing.TB, ctx context.Context, s3 *testenv.S3, bucket string, ids map[int64]bool) []string {
	t.Helper()
	res, err := s3.Client().ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range res.Uploads {
		if id, ok := ledgerOfKey(aws.ToString(u.Key)); ok && ids[id] {
			out = append(out, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
		}
	}
	return out
}
