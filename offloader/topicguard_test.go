package offloader

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// TestTopicGuardRefusesBeforeAJob: the check a job makes right before it
// writes, on a real ZooKeeper: a topic nobody else offloads passes; a
// namespace offload threshold, a topic offload policy (through the admin
// API), an unfinished attempt the broker recorded, or an admin API that
// does not answer refuse it (or fail: nothing may be written then).
func TestTopicGuardRefusesBeforeAJob(t *testing.T) {
	z, c := mltest.ZooKeeper(t)
	now := time.Now()
	for _, ml := range []string{"t/ns/persistent/a", "t/ns/persistent/b", "t/pol/persistent/c"} {
		if err := c.CreateML(ml, mltest.Info(mltest.Closed(1, 2, 1<<20, now.Add(-time.Hour))...)); err != nil {
			t.Fatal(err)
		}
	}
	// b: ledger 1 holds an unfinished attempt with a random (version-4) UUID.
	info := mltest.Info(mltest.Closed(1, 2, 1<<20, now.Add(-time.Hour))...)
	u := uuid.New()
	msb, lsb := mledger.UUIDToBits(u)
	info.LedgerInfo[0].OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(msb), UidLsb: proto.Int64(lsb)}
	if _, err := c.Conn.Set(mledger.Path("t/ns/persistent/b"), mltest.Encode(info), -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Create("/admin/policies/t/pol", []byte(`{"offload_threshold":-1,"offload_policies":{"managedLedgerOffloadThresholdInSeconds":3600}}`)); err != nil {
		t.Fatal(err)
	}
	f := &fakeAdmin{runtime: `{"managedLedgerOffloadAutoTriggerSizeThresholdBytes":"-1","managedLedgerOffloadThresholdInSeconds":"-1"}`,
		topic: map[string]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	admin, err := brokeradmin.New(brokeradmin.Config{URL: srv.URL, Timeout: blob.Duration(2 * time.Second)}, brokeradmin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess := z.Session(t, tzk.Options{})
	g := NewTopicGuard(sess, mledger.New(sess, nil), admin, "", policy.BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: -1}, nil)
	ctx := t.Context()
	check := func(ml, want string) {
		t.Helper()
		why, err := g.Refused(ctx, ml)
		if err != nil {
			t.Fatalf("%s: %v", ml, err)
		}
		if (want == "") != (why == "") || !strings.Contains(why, want) {
			t.Fatalf("%s: refused %q, want %q", ml, why, want)
		}
	}
	check("t/ns/persistent/a", "")
	check("t/ns/persistent/b", "ledger 1 holds an unfinished offload attempt "+u.String())
	check("t/pol/persistent/c", "namespace offload policy threshold (seconds) = 3600")
	// A topic policy set since the last evaluation is seen at once.
	f.mu.Lock()
	f.topic["/admin/v2/persistent/t/ns/a/offloadPolicies"] = `{"managedLedgerOffloadThresholdInBytes":0}`
	f.mu.Unlock()
	check("t/ns/persistent/a", "topic offload policy managedLedgerOffloadThresholdInBytes = 0")
	// A broker that does not answer: refused, nothing may be written.
	srv.Close()
	check("t/ns/persistent/a", "the topic's offload policies cannot be read")
	// ZooKeeper gone: an error, no verdict.
	z.Stop()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := g.Refused(sctx, "t/ns/persistent/a"); err == nil {
		t.Fatal("no error without ZooKeeper")
	}
}
