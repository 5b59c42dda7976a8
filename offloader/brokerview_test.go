package offloader

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// fakeAdmin answers the broker admin calls of the broker view (fault
// injection: a broker whose answers the test picks).
type fakeAdmin struct {
	mu      sync.Mutex
	runtime string // body of configuration/runtime; "" → 500
	topic   map[string]string
	status  int // for topic policies; 0 → 200/204
	calls   []string
}

func (f *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.URL.Path)
	switch {
	case r.URL.Path == "/admin/v2/brokers/configuration/runtime":
		if f.runtime == "" {
			http.Error(w, `{"reason":"internal"}`, 500)
			return
		}
		_, _ = w.Write([]byte(f.runtime))
	case strings.HasSuffix(r.URL.Path, "/offloadPolicies"):
		if f.status != 0 {
			w.WriteHeader(f.status)
			_, _ = w.Write([]byte(`{"reason":"Topic level policies is disabled"}`))
			return
		}
		body, ok := f.topic[r.URL.Path]
		if !ok {
			w.WriteHeader(204)
			return
		}
		_, _ = w.Write([]byte(body))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeAdmin) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func viewTopic(t *testing.T, name string) policy.Topic {
	tn, err := mledger.ParseTopic(name)
	if err != nil {
		t.Fatal(err)
	}
	return policy.Topic{ML: tn.MLName(), Topic: tn}
}

// TestBrokerViewReadsAndCaches: the broker's thresholds are read from the
// runtime configuration and cached; a failed read keeps the last good one
// until it is stale, then refuses (Err); topic policies are read per
// partitioned topic, cached, skipped altogether when the broker answers
// 405, and bounded per evaluation.
func TestBrokerViewReadsAndCaches(t *testing.T) {
	f := &fakeAdmin{runtime: `{"managedLedgerOffloadAutoTriggerSizeThresholdBytes":"-1","managedLedgerOffloadThresholdInSeconds":"60"}`,
		topic: map[string]string{"/admin/v2/persistent/t/ns/b/offloadPolicies": `{"managedLedgerOffloadThresholdInBytes":0}`}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	admin, err := brokeradmin.New(brokeradmin.Config{URL: srv.URL, Timeout: blob.Duration(2 * time.Second)}, brokeradmin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1e9, 0)
	v := newBrokerViewWith(admin, policy.BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: -1}, nil)
	v.now = func() time.Time { return now }
	ctx := t.Context()
	bs := v.broker(ctx)
	if bs.Err != "" || bs.ThresholdBytes != -1 || bs.ThresholdSeconds != 60 || !strings.Contains(bs.Source, "configuration/runtime") {
		t.Fatalf("broker settings %+v", bs)
	}
	calls := f.n()
	v.broker(ctx)
	if f.n() != calls {
		t.Fatal("cached settings read again")
	}
	f.mu.Lock()
	f.runtime = ""
	f.mu.Unlock()
	now = now.Add(brokerViewTTL)
	if bs := v.broker(ctx); bs.Err != "" || bs.ThresholdSeconds != 60 {
		t.Fatalf("a failed read within %s keeps the last good one: %+v", brokerStale, bs)
	}
	now = now.Add(brokerStale)
	if bs := v.broker(ctx); !strings.Contains(bs.Err, "broker answered 500") {
		t.Fatalf("stale settings: %+v", bs)
	}

	rules := &policy.Rules{Exclude: []string{"t/ns/excluded"}}
	topics := []policy.Topic{viewTopic(t, "persistent://t/ns/a"), viewTopic(t, "persistent://t/ns/b-partition-0"),
		viewTopic(t, "persistent://t/ns/b-partition-1"), viewTopic(t, "persistent://t/ns/excluded"), viewTopic(t, "persistent://t/ns/__change_events")}
	calls = f.n()
	tps := v.topicPolicies(ctx, topics, rules)
	if len(tps) != 2 || tps["persistent://t/ns/a"].Policy != nil || tps["persistent://t/ns/b"].Policy == nil ||
		*tps["persistent://t/ns/b"].Policy.ThresholdBytes != 0 || f.n()-calls != 2 {
		t.Fatalf("topic policies %+v after %d calls", tps, f.n()-calls)
	}
	v.topicPolicies(ctx, topics, rules)
	if f.n()-calls != 2 {
		t.Fatal("cached topic policies read again")
	}
	// Topic-level policies disabled: one call, then none for a while.
	f.mu.Lock()
	f.status = 405
	f.mu.Unlock()
	now = now.Add(brokerViewTTL)
	calls = f.n()
	if tps := v.topicPolicies(ctx, topics, rules); len(tps) != 0 || f.n()-calls != 1 {
		t.Fatalf("disabled: %+v after %d calls", tps, f.n()-calls)
	}
	if v.topicPolicies(ctx, topics, rules); f.n()-calls != 1 {
		t.Fatal("asked again while disabled")
	}
	// Other failures refuse the topic with the error.
	f.mu.Lock()
	f.status = 500
	f.mu.Unlock()
	now = now.Add(brokerViewTTL)
	if tps := v.topicPolicies(ctx, topics, rules); !strings.Contains(tps["persistent://t/ns/a"].Err, "500") {
		t.Fatalf("failure: %+v", tps)
	}
	// At most topicLookupsPerRound lookups per evaluation; the rest wait,
	// refused meanwhile.
	var many []policy.Topic
	for i := range topicLookupsPerRound + 5 {
		many = append(many, viewTopic(t, "persistent://t/many/x"+strings.Repeat("y", i)))
	}
	f.mu.Lock()
	f.status = 0
	f.mu.Unlock()
	calls = f.n()
	tps = v.topicPolicies(ctx, many, rules)
	waiting := 0
	for _, tp := range tps {
		if strings.Contains(tp.Err, "not looked up yet") {
			waiting++
		}
	}
	if f.n()-calls != topicLookupsPerRound || waiting != 5 {
		t.Fatalf("%d lookups, %d waiting", f.n()-calls, waiting)
	}
}
