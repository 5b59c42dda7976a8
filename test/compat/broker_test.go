package compat

// The stock broker harness (testenv.StartBroker) and the Pulsar Java client
// tool: partitioned topics, a producer that keeps writing, the admin API.
// Produce, read back and restart with the same data are covered by
// TestBrokerReadsGoOffloadS3 (broker_offload_test.go), which does them on
// its way to reading offloaded ledgers.

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

var (
	brokerOnce once[*testenv.Broker]
	topicSeq   atomic.Int64
	// brokerBucket is the sharedBroker's offload bucket on testenv.StartS3;
	// brokerOptions its options.
	brokerBucket  string
	brokerOptions testenv.BrokerOptions
)

// sharedBroker returns the package's stock broker on sharedBookies: 100
// entries per ledger, offloader aws-s3 to brokerBucket on the package's
// versitygw (deletion lag: never). Tests may restart it but must leave it
// running with these options; a test that needs other options uses
// sharedBrokerWith (a second broker of the cluster cannot start).
func sharedBroker(t testing.TB) *testenv.Broker {
	t.Helper()
	c := sharedBookies(t)
	return brokerOnce.get(t, "broker", func(tb testing.TB) *testenv.Broker {
		s3 := testenv.StartS3(tb)
		brokerBucket = s3.NewBucket(tb)
		brokerOptions = testenv.BrokerOptions{Offload: testenv.S3Offload(s3, brokerBucket)}
		b := testenv.StartBroker(tb, c, brokerOptions)
		rss, _ := b.RSS()
		fmt.Fprintf(os.Stderr, "compat: broker start %s, RSS %d MiB\n", b.StartTimes[0].Round(time.Millisecond), rss>>20)
		return b
	})
}

// sharedBrokerWith restarts the shared broker with options o for the rest
// of t and restores its own options when t ends. A cluster has one broker
// at a time (testenv.StartBroker), so this is how a test gets a broker
// configured otherwise (another offloader, a deletion lag ...).
func sharedBrokerWith(t *testing.T, o testenv.BrokerOptions) *testenv.Broker {
	t.Helper()
	b := sharedBroker(t)
	b.RestartWith(t, o)
	t.Cleanup(func() { b.RestartWith(t, brokerOptions) })
	return b
}

// uniqueTopic returns a fresh topic name in public/default.
func uniqueTopic(t testing.TB) string {
	return fmt.Sprintf("persistent://public/default/%s-%d", nonName.ReplaceAllString(t.Name(), "_"), topicSeq.Add(1))
}

// checkPayloads checks every message against the payload its seed and
// index regenerate.
func checkPayloads(t testing.TB, msgs []testenv.Message, seed int64) {
	t.Helper()
	for _, m := range msgs {
		if m.Index < 0 {
			t.Fatalf("message %s has no index property", m.MessageID)
		}
		want := sha256hex(testenv.Payload(seed, m.Index, m.Length))
		if m.SHA256 != want {
			t.Fatalf("message %d (%s): payload sha256 %s, regenerated %s", m.Index, m.MessageID, m.SHA256, want)
		}
	}
}

// sameMessages checks that read holds exactly the produced messages (same
// ids, same payloads), in order for a non-partitioned topic.
func sameMessages(t testing.TB, produced, read *testenv.Messages, ordered bool) {
	t.Helper()
	if read.Count != produced.Count || len(read.Messages) != len(produced.Messages) {
		t.Fatalf("read %d messages, produced %d", read.Count, produced.Count)
	}
	if read.SHA256OfSortedDigests != produced.SHA256OfSortedDigests {
		t.Fatalf("payload digests differ: read %s, produced %s", read.SHA256OfSortedDigests, produced.SHA256OfSortedDigests)
	}
	if ordered && read.SHA256OfAllPayloads != produced.SHA256OfAllPayloads {
		t.Fatalf("sha256 of all payloads: read %s, produced %s", read.SHA256OfAllPayloads, produced.SHA256OfAllPayloads)
	}
	byID := map[string]testenv.Message{}
	for _, m := range produced.Messages {
		byID[fmt.Sprintf("%d:%d:%d", m.Partition, m.LedgerID, m.EntryID)] = m
	}
	for i, m := range read.Messages {
		p, ok := byID[fmt.Sprintf("%d:%d:%d", m.Partition, m.LedgerID, m.EntryID)]
		if !ok || p.SHA256 != m.SHA256 || p.Index != m.Index {
			t.Fatalf("read message %d %s (index %d, sha256 %s) was not produced with that id and payload (%+v)", i, m.MessageID, m.Index, m.SHA256, p)
		}
		if ordered && m.Index != produced.Messages[i].Index {
			t.Fatalf("read message %d has index %d, want %d", i, m.Index, produced.Messages[i].Index)
		}
	}
}

// TestBrokerPartitionedTopic: a partitioned topic created with Pulsar's
// admin client; messages spread over 3 partitions, each with its own
// ledgers, and read back through one Reader.
func TestBrokerPartitionedTopic(t *testing.T) {
	b := sharedBroker(t)
	j := sharedJava(t)
	ctx := t.Context()
	topic := uniqueTopic(t)
	if err := j.CreatePartitionedTopicJava(ctx, b, topic, 3); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Partitions(ctx, topic); err != nil || n != 3 {
		t.Fatalf("partitions: %d, %v", n, err)
	}
	prod, err := j.Produce(ctx, b, topic, testenv.ProduceOptions{Count: 330, Seed: 12, Size: 300})
	if err != nil {
		t.Fatal(err)
	}
	checkPayloads(t, prod.Messages, 12)
	parts := prod.LedgerIDs()
	if len(parts) != 3 {
		t.Fatalf("messages went to partitions %v, want 0, 1, 2", parts)
	}
	for p := range 3 {
		if len(parts[p]) < 2 {
			t.Errorf("partition %d: ledgers %v, want >= 2 (330 messages round-robin, 100 per ledger)", p, parts[p])
		}
		if _, err := b.InternalStats(ctx, fmt.Sprintf("%s-partition-%d", topic, p)); err != nil {
			t.Fatal(err)
		}
	}
	read, err := j.ReadAll(ctx, b, topic, testenv.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, prod, read, false)

	// The REST call creates partitioned topics too; unload closes them.
	topic2 := uniqueTopic(t)
	if err := b.CreatePartitionedTopic(ctx, topic2, 2); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Partitions(ctx, topic2); err != nil || n != 2 {
		t.Fatalf("partitions of %s: %d, %v", topic2, n, err)
	}
	if err := b.Unload(ctx, topic); err != nil {
		t.Fatal(err)
	}
}

// TestBrokerKeepProducing: a producer writing at a steady rate keeps every
// acknowledged message through a topic unload (the broker closes the topic,
// the client reconnects); a Reader then gets exactly the acknowledged ones.
func TestBrokerKeepProducing(t *testing.T) {
	b := sharedBroker(t)
	j := sharedJava(t)
	ctx := t.Context()
	topic := uniqueTopic(t)
	p := j.StartProducer(t, b, topic, testenv.KeepProducingOptions{Rate: 250, Seed: 13, Size: 200, MaxDuration: 2 * time.Minute})
	if err := p.WaitAcked(150, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.Unload(ctx, topic); err != nil {
		t.Fatal(err)
	}
	n := p.Acked()
	if err := p.WaitAcked(n+150, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := p.Terminate() // SIGTERM: the report still comes, every ack recorded
	if err != nil {
		t.Fatal(err)
	}
	if res.Acked < 300 || res.Sent != res.Acked+res.Failed {
		t.Fatalf("producer: sent %d acked %d failed %d (%s)", res.Sent, res.Acked, res.Failed, res.FirstError)
	}
	t.Logf("producer: sent %d, acked %d, failed %d in %.1fs", res.Sent, res.Acked, res.Failed, res.Seconds)
	checkPayloads(t, res.AckedMessages, 13)
	read, err := j.ReadAll(ctx, b, topic, testenv.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkPayloads(t, read.Messages, 13)
	// At-least-once: a message whose acknowledgement was lost in the
	// unload is sent again, so it may be stored twice; every acknowledged
	// message must be read at the position it was acknowledged with.
	at := map[string]testenv.Message{}
	for _, m := range read.Messages {
		at[fmt.Sprintf("%d:%d", m.LedgerID, m.EntryID)] = m
	}
	for _, a := range res.AckedMessages {
		m, ok := at[fmt.Sprintf("%d:%d", a.LedgerID, a.EntryID)]
		if !ok || m.Index != a.Index || m.SHA256 != a.SHA256 {
			t.Fatalf("acknowledged message %d at %d:%d was not read back there (read %+v; %d read, %d acked)", a.Index, a.LedgerID, a.EntryID, m, len(read.Messages), len(res.AckedMessages))
		}
	}
	t.Logf("read %d messages for %d acknowledged", len(read.Messages), len(res.AckedMessages))
}

// TestBrokerAdminErrors: the admin helpers name what failed.
func TestBrokerAdminErrors(t *testing.T) {
	b := sharedBroker(t)
	ctx := t.Context()
	_, err := b.InternalStats(ctx, "persistent://public/default/never-created-"+t.Name())
	if !testenv.IsAdminStatus(err, 404) {
		t.Fatalf("internalStats of a missing topic: %v, want HTTP 404", err)
	}
	if _, err := testenv.TopicPath("a/b"); err == nil {
		t.Fatal("TopicPath accepted a two-part name")
	}
	if p, err := testenv.TopicPath("x y"); err != nil || p != "/admin/v2/persistent/public/default/x%20y" {
		t.Fatalf("TopicPath(short name) = %q, %v", p, err)
	}
}
