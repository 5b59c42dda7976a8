package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

func i64(v int64) *int64 { return &v }

// TestBrokerOffloadRefusesTheBrokersTopics: every way the broker would
// offload a topic by itself refuses it, with the reason in the topic plan,
// and no candidate; without any, the topic is offloaded.
func TestBrokerOffloadRefusesTheBrokersTopics(t *testing.T) {
	const h = time.Hour
	rules := Rules{Default: rule("default", func(r *Rule) { r.After = 0 })}
	off := &BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: -1, Source: "admin API"}
	base := func() Snapshot {
		return Snapshot{Topics: []Topic{topic("t/ns/a-partition-0", 2*h, h)}, Broker: off}
	}
	cases := []struct {
		name string
		edit func(*Snapshot)
		want string // in TopicPlan.Refused; "" = offloaded
	}{
		{"nothing set", func(*Snapshot) {}, ""},
		{"broker size threshold", func(s *Snapshot) {
			s.Broker = &BrokerSettings{ThresholdBytes: 0, ThresholdSeconds: -1, Source: "admin API"}
		},
			"broker managedLedgerOffloadAutoTriggerSizeThresholdBytes (admin API) = 0"},
		{"broker age threshold", func(s *Snapshot) {
			s.Broker = &BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: 3600, Source: "admin API"}
		}, "broker managedLedgerOffloadThresholdInSeconds (admin API) = 3600"},
		{"broker settings unreadable", func(s *Snapshot) { s.Broker = &BrokerSettings{Err: "no answer within 30s"} },
			"the broker's offload settings cannot be read (no answer within 30s)"},
		{"namespace threshold", func(s *Snapshot) {
			s.Namespaces = map[string]*NamespacePolicy{"t/ns": {ThresholdBytes: i64(1 << 30)}}
		}, "namespace offload policy threshold (bytes) = 1073741824"},
		{"namespace policies unreadable", func(s *Snapshot) { s.NamespaceErrors = map[string]string{"t/ns": "ZooKeeper unavailable"} },
			"the namespace's offload policies cannot be read (ZooKeeper unavailable)"},
		{"topic policy on the partitioned topic", func(s *Snapshot) {
			s.TopicPolicies = map[string]TopicPolicy{"persistent://t/ns/a": {Policy: &NamespacePolicy{ThresholdSeconds: i64(0)}}}
		}, "topic offload policy managedLedgerOffloadThresholdInSeconds = 0"},
		{"topic policy -1 wins over the namespace's threshold", func(s *Snapshot) {
			s.Namespaces = map[string]*NamespacePolicy{"t/ns": {ThresholdBytes: i64(0)}}
			s.TopicPolicies = map[string]TopicPolicy{"persistent://t/ns/a": {Policy: &NamespacePolicy{ThresholdBytes: i64(-1)}}}
		}, ""},
		{"namespace -1 wins over the broker's threshold", func(s *Snapshot) {
			s.Broker = &BrokerSettings{ThresholdBytes: 10, ThresholdSeconds: -1}
			s.Namespaces = map[string]*NamespacePolicy{"t/ns": {ThresholdBytes: i64(-1)}}
		}, ""},
		{"topic policies unreadable", func(s *Snapshot) {
			s.TopicPolicies = map[string]TopicPolicy{"persistent://t/ns/a": {Err: "broker answered 500"}}
		}, "the topic's offload policies cannot be read (broker answered 500)"},
		{"an unfinished attempt the broker recorded", func(s *Snapshot) {
			s.Topics[0] = with(s.Topics[0], 1, func(l *Ledger) { l.State, l.Attempt = mledger.StateOffloading, uuid.New() })
		}, "ledger 1 holds an unfinished offload attempt"},
		{"an unfinished attempt of ours is resumed", func(s *Snapshot) {
			s.Topics[0] = with(s.Topics[0], 1, func(l *Ledger) { l.State, l.Attempt = mledger.StateOffloading, mledger.NewAttemptUUID() })
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := base()
			tc.edit(&snap)
			res := Evaluate(snap, now, rules)
			tp := res.Topics[0]
			if tc.want == "" {
				if tp.Refused != "" || res.Candidates.Len() != 2 {
					t.Fatalf("refused %q, candidates %s; want both ledgers offloaded", tp.Refused, ids(res.Candidates.Slice()))
				}
				return
			}
			if !strings.Contains(tp.Refused, tc.want) || res.Candidates.Len() != 0 {
				t.Fatalf("refused %q, candidates %s; want refused with %q", tp.Refused, ids(res.Candidates.Slice()), tc.want)
			}
		})
	}
}

// TestReloadBoundHoldsCandidates: after a commit of ours the topic's
// offload and trim candidates wait min_reload_interval (still counted as
// lag), pressure ones do not; the broker's commits do not count.
func TestReloadBoundHoldsCandidates(t *testing.T) {
	const h = time.Hour
	committed := func(ago time.Duration, own bool) func(*Ledger) {
		return func(l *Ledger) {
			l.State, l.OffloadedAt, l.Attempt = mledger.StateOffloaded, now.Add(-ago), uuid.New()
			if own {
				l.Attempt = mledger.NewAttemptUUID()
			}
		}
	}
	rules := Rules{MinReloadInterval: 10 * time.Minute, Pressure: Pressure{Threshold: 0.9},
		Default: rule("default", func(r *Rule) { r.After = 0; r.Pressure = true; r.DeletionLag = DeletionLag{Mode: LagAfter} })}
	snap := Snapshot{Topics: []Topic{
		with(topic("t/ns/held", 3*h, 2*h, h), 1, committed(4*time.Minute, true)),
		with(topic("t/ns/free", 3*h, 2*h), 1, committed(11*time.Minute, true)),
		with(topic("t/ns/brokers", 3*h, 2*h), 1, committed(time.Minute, false)),
		with(with(topic("t/ns/pressed", 3*h, 2*h), 1, committed(time.Minute, true)), 2, func(l *Ledger) { l.Bookies = []string{"b1"} }),
	}, BookieUsage: map[string]float64{"b1": 0.95}}
	res := Evaluate(snap, now, rules)
	want := "t/ns/pressed:2/offload/pressure/default t/ns/brokers:2/offload/age/default t/ns/free:2/offload/age/default " +
		"t/ns/free:1/trim/deletion-lag/default t/ns/brokers:1/trim/deletion-lag/default"
	if got := ids(res.Candidates.Slice()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	tp := res.Topics[0]
	if !strings.Contains(tp.Held, "last commit (and reload) 4m0s ago < min_reload_interval 10m0s") || tp.EligibleLedgers != 2 {
		t.Fatalf("held topic plan: %+v", tp)
	}
	if res.Topics[1].Held != "" || res.Topics[2].Held != "" {
		t.Fatalf("not held: %+v %+v", res.Topics[1], res.Topics[2])
	}
}

// TestRefusedTopicKeepsOthersCandidates: a topic the broker offloads
// itself, evaluated after one that has candidates, leaves those
// candidates in the result (Evaluate appends every topic's into one
// slice).
func TestRefusedTopicKeepsOthersCandidates(t *testing.T) {
	const h = time.Hour
	now := time.Now()
	rules := Rules{Default: rule("default", func(r *Rule) { r.After = 0 })}
	snap := Snapshot{Topics: []Topic{topic("t/ns/a-partition-0", 2*h, h), topic("t/ns2/b", 2*h, h)},
		Broker:     &BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: -1, Source: "admin API"},
		Namespaces: map[string]*NamespacePolicy{"t/ns2": {ThresholdBytes: i64(1 << 30)}}}
	res := Evaluate(snap, now, rules)
	if res.Topics[1].Refused == "" || res.Candidates.Len() != 2 || res.Candidates.At(0).ML != snap.Topics[0].ML {
		t.Fatalf("refused %q, candidates %s; want t/ns2/b refused and both ledgers of the first topic offloaded",
			res.Topics[1].Refused, ids(res.Candidates.Slice()))
	}
}
