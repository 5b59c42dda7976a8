package policy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const MiB = 1 << 20

// topic builds a managed ledger whose ledgers closed ago[i] before now
// (ledger ids 1..n, each size MiB), plus an open last ledger.
func topic(name string, ago ...time.Duration) Topic {
	tn, err := mledger.ParseTopic(name)
	if err != nil {
		panic(err)
	}
	t := Topic{ML: tn.MLName(), Topic: tn}
	for i, a := range ago {
		t.Ledgers = append(t.Ledgers, Ledger{ID: int64(i + 1), Entries: 10, Size: MiB, ClosedAt: now.Add(-a), State: mledger.StateBookKeeper})
	}
	t.Ledgers = append(t.Ledgers, Ledger{ID: int64(len(ago) + 1), State: mledger.StateOpen})
	return t
}

func with(t Topic, id int64, f func(*Ledger)) Topic {
	for i := range t.Ledgers {
		if t.Ledgers[i].ID == id {
			f(&t.Ledgers[i])
		}
	}
	return t
}

func off() Rule { return Rule{Offload: true, After: -1, KeepBytes: -1, KeepLedgers: -1} }

func rule(name string, f func(*Rule), match ...string) Rule {
	r := off()
	r.Name, r.Match = name, match
	f(&r)
	return r
}

func ids(cs []Candidate) string {
	var b []string
	for _, c := range cs {
		b = append(b, fmt.Sprintf("%s:%d/%s/%s/%s", c.Topic[len("persistent://"):], c.LedgerID, c.Action, c.Trigger, c.Rule))
	}
	return strings.Join(b, " ")
}

func TestSelect(t *testing.T) {
	h := time.Hour
	tests := []struct {
		name  string
		snap  Snapshot
		rules Rules
		want  string
	}{
		{
			name:  "age: only ledgers at least After old; never the open ledger",
			snap:  Snapshot{Topics: []Topic{topic("t/ns/a", 30*h, 25*h, 23*h)}},
			rules: Rules{Default: rule("default", func(r *Rule) { r.After = 24 * h })},
			want:  "t/ns/a:1/offload/age/default t/ns/a:2/offload/age/default",
		},
		{
			name:  "after 0 offloads every closed ledger, oldest first",
			snap:  Snapshot{Topics: []Topic{topic("t/ns/a", 1*h, 3*h)}},
			rules: Rules{Default: rule("default", func(r *Rule) { r.After = 0 })},
			want:  "t/ns/a:2/offload/age/default t/ns/a:1/offload/age/default",
		},
		{
			name: "keep_bytes: running sum newest→oldest including the ledger must exceed it",
			snap: Snapshot{Topics: []Topic{topic("t/ns/a", 4*h, 3*h, 2*h, 1*h)}},
			// sums from newest: l4=1, l3=2, l2=3, l1=4 MiB; > 2 MiB → l2, l1
			rules: Rules{Default: rule("default", func(r *Rule) { r.KeepBytes = 2 * MiB })},
			want:  "t/ns/a:1/offload/bytes/default t/ns/a:2/offload/bytes/default",
		},
		{
			name:  "keep_bytes 0 offloads every closed ledger (Pulsar's threshold 0)",
			snap:  Snapshot{Topics: []Topic{topic("t/ns/a", 2*h, 1*h)}},
			rules: Rules{Default: rule("default", func(r *Rule) { r.KeepBytes = 0 })},
			want:  "t/ns/a:1/offload/bytes/default t/ns/a:2/offload/bytes/default",
		},
		{
			name:  "keep_ledgers: keep the newest N closed ledgers",
			snap:  Snapshot{Topics: []Topic{topic("t/ns/a", 4*h, 3*h, 2*h, 1*h)}},
			rules: Rules{Default: rule("default", func(r *Rule) { r.KeepLedgers = 3 })},
			want:  "t/ns/a:1/offload/ledgers/default",
		},
		{
			name: "first matching rule wins, else default; partitions match their topic",
			snap: Snapshot{Topics: []Topic{
				topic("t/ns/orders-partition-0", 2*h), topic("t/ns/other", 2*h), topic("t/audit/x", 2*h)}},
			rules: Rules{
				Rules: []Rule{
					rule("orders", func(r *Rule) { r.After = h }, "t/ns/orders"),
					rule("ns", func(r *Rule) { r.After = 10 * h }, "t/ns"),
					rule("audit", func(r *Rule) { r.Offload = false; r.After = 0 }, "t/audit/*"),
				},
				Default: rule("default", func(r *Rule) { r.After = 0 }),
			},
			want: "t/ns/orders-partition-0:1/offload/age/orders",
		},
		{
			name: "include and exclude filter before the rules",
			snap: Snapshot{Topics: []Topic{topic("t/ns/a", 2*h), topic("t/ns/__change_events", 2*h), topic("u/ns/b", 2*h)}},
			rules: Rules{Include: []string{"t"}, Exclude: []string{"*/*/__change_events"},
				Default: rule("default", func(r *Rule) { r.After = 0 })},
			want: "t/ns/a:1/offload/age/default",
		},
		{
			name: "skips empty, offloaded and BK-deleted ledgers; resumes an unfinished attempt",
			snap: Snapshot{Topics: []Topic{
				with(with(with(topic("t/ns/a", 5*h, 4*h, 3*h, 2*h), 1, func(l *Ledger) { l.Entries, l.Size = 0, 0 }),
					2, func(l *Ledger) { l.State = mledger.StateOffloaded; l.OffloadedAt = now }),
					3, func(l *Ledger) { l.State, l.Attempt = mledger.StateOffloading, mledger.NewAttemptUUID() })}},
			rules: Rules{Default: rule("default", func(r *Rule) { r.After = 0 })},
			want:  "t/ns/a:3/offload/age/default t/ns/a:4/offload/age/default",
		},
		{
			name: "pressure first (fullest bookie first), then oldest; min age holds",
			snap: Snapshot{
				Topics: []Topic{
					with(topic("t/ns/a", 30*h, 2*h), 2, func(l *Ledger) { l.Bookies = []string{"b1:3181", "b2:3181"} }),
					with(with(topic("t/ns/b", 40*h, 3*h, time.Minute), 2, func(l *Ledger) { l.Bookies = []string{"b3:3181"} }),
						3, func(l *Ledger) { l.Bookies = []string{"b3:3181"} }),
				},
				BookieUsage: map[string]float64{"b1:3181": 0.5, "b2:3181": 0.9, "b3:3181": 0.95},
			},
			rules: Rules{Pressure: Pressure{Threshold: 0.85, MinAge: 10 * time.Minute},
				Default: rule("default", func(r *Rule) { r.After = 24 * h; r.Pressure = true })},
			want: "t/ns/b:2/offload/pressure/default t/ns/a:2/offload/pressure/default t/ns/b:1/offload/age/default t/ns/a:1/offload/age/default",
		},
		{
			name: "pressure off in a rule",
			snap: Snapshot{
				Topics:      []Topic{with(topic("t/ns/a", 2*h), 1, func(l *Ledger) { l.Bookies = []string{"b1"} })},
				BookieUsage: map[string]float64{"b1": 0.99},
			},
			rules: Rules{Pressure: Pressure{Threshold: 0.85}, Default: rule("default", func(r *Rule) { r.After = 24 * h })},
			want:  "",
		},
		{
			name: "trim after the deletion lag, not before; broker and never modes trim nothing",
			snap: Snapshot{Topics: []Topic{
				with(with(topic("t/ns/a", 9*h, 8*h, 7*h), 1, func(l *Ledger) { l.State = mledger.StateOffloaded; l.OffloadedAt = now.Add(-5 * h) }),
					2, func(l *Ledger) { l.State = mledger.StateOffloaded; l.OffloadedAt = now.Add(-3 * h) }),
				with(topic("t/keep/b", 9*h), 1, func(l *Ledger) { l.State = mledger.StateOffloaded; l.OffloadedAt = now.Add(-50 * h) }),
				with(topic("t/brk/c", 9*h), 1, func(l *Ledger) { l.State = mledger.StateOffloaded; l.OffloadedAt = now.Add(-50 * h) }),
			}},
			rules: Rules{
				Rules: []Rule{
					rule("keep", func(r *Rule) { r.After = h; r.DeletionLag = DeletionLag{Mode: LagNever} }, "t/keep"),
					rule("brk", func(r *Rule) { r.After = h }, "t/brk"),
				},
				Default: rule("default", func(r *Rule) { r.After = 24 * h; r.DeletionLag = DeletionLag{Mode: LagAfter, After: 4 * h} }),
			},
			want: "t/ns/a:1/trim/deletion-lag/default",
		},
		{
			name: "a namespace offload threshold (legacy offload_threshold) is the broker's: refused, the others not",
			snap: Snapshot{
				Topics:     []Topic{topic("t/pol/a", 4*h, 3*h, 2*h, 1*h), topic("t/nopol/b", 4*h)},
				Namespaces: map[string]*NamespacePolicy{"t/pol": mustNS(t, `{"offload_threshold": 2097152, "offload_threshold_in_seconds": -1}`)},
			},
			rules: Rules{PulsarPolicies: true, BrokerDefaults: BrokerDefaults{ThresholdBytes: -1, ThresholdSeconds: -1},
				Default: rule("default", func(r *Rule) { r.After = 0 })},
			want: "t/nopol/b:1/offload/age/default",
		},
		{
			name: "Pulsar offload_policies win over the legacy fields (-1 there: off); a namespace deletion lag replaces the rule's",
			snap: Snapshot{
				Topics: []Topic{with(topic("t/pol/a", 2*h, 1*h), 1, func(l *Ledger) {
					l.State, l.OffloadedAt, l.Attempt = mledger.StateOffloaded, now.Add(-2*h), mledger.NewAttemptUUID()
				})},
				Namespaces: map[string]*NamespacePolicy{"t/pol": mustNS(t, `{"offload_threshold_in_seconds": 999999, "offload_threshold": 5,
					"offload_policies": {"managedLedgerOffloadDriver": "aws-s3", "managedLedgerOffloadThresholdInSeconds": -1,
					"managedLedgerOffloadThresholdInBytes": -1, "managedLedgerOffloadDeletionLagInMillis": 3600000}}`)},
			},
			rules: Rules{PulsarPolicies: true, BrokerDefaults: BrokerDefaults{ThresholdBytes: -1, ThresholdSeconds: -1},
				Default: rule("default", func(r *Rule) { r.After = 0 })},
			want: "t/pol/a:2/offload/age/pulsar:t/pol t/pol/a:1/trim/deletion-lag/pulsar:t/pol",
		},
		{
			name: "Pulsar policies disabled: a namespace threshold still makes the topic the broker's",
			snap: Snapshot{
				Topics:     []Topic{topic("t/pol/a", 2*h)},
				Namespaces: map[string]*NamespacePolicy{"t/pol": mustNS(t, `{"offload_threshold": 0}`)},
			},
			rules: Rules{Default: rule("default", func(r *Rule) { r.After = 0 })},
			want:  "",
		},
		{
			name: "Pulsar's system topics are never offloaded",
			snap: Snapshot{Topics: []Topic{topic("pulsar/system/__transaction_log_0", 2*h), topic("t/ns/__change_events", 2*h),
				topic("t/ns/__change_events-partition-1", 2*h), topic("t/ns/orders-sub__transaction_pending_ack", 2*h),
				topic("t/ns/__transaction_buffer_snapshot_segments", 2*h), topic("pulsar/10.0.0.1:8080/healthcheck", 2*h),
				topic("t/ns/orders", 2*h)}},
			rules: Rules{Default: rule("default", func(r *Rule) { r.After = 0 })},
			want:  "t/ns/orders:1/offload/age/default",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.rules.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := ids(Evaluate(tc.snap, now, tc.rules).Candidates.Slice()); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func mustNS(t *testing.T, js string) *NamespacePolicy {
	t.Helper()
	p, err := ParseNamespacePolicies([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEvaluateTopicPlanAndRuleCounts(t *testing.T) {
	h := time.Hour
	a := with(topic("t/ns/a", 30*h, 25*h, 2*h), 1, func(l *Ledger) { l.State = mledger.StateOffloaded; l.OffloadedAt = now.Add(-h) })
	res := Evaluate(Snapshot{Topics: []Topic{a, topic("x/y/z", h)}}, now, Rules{
		Rules:   []Rule{rule("unused", func(r *Rule) { r.After = 0 }, "nobody/*")},
		Exclude: []string{"x"},
		Default: rule("", func(r *Rule) { r.After = 24 * h; r.DeletionLag = DeletionLag{Mode: LagAfter, After: 2 * h} }),
	})
	if got := res.RuleTopics; got["unused"] != 0 || got["default"] != 1 || len(got) != 2 {
		t.Errorf("RuleTopics = %v", got)
	}
	if fmt.Sprint(res.UnusedRules) != "[unused]" {
		t.Errorf("UnusedRules = %v", res.UnusedRules)
	}
	// The default matching nothing is no mistake (the rules cover every
	// topic); the bytes trigger explains itself in sizes.
	r2 := Evaluate(Snapshot{Topics: []Topic{topic("t/ns/a", 3*h, 2*h, h)}}, now, Rules{
		Include: []string{"t/ns", "t/typo"},
		Rules:   []Rule{rule("all", func(r *Rule) { r.KeepBytes = MiB; r.After = -1 }, "t")},
	})
	if fmt.Sprint(r2.UnusedIncludes) != "[t/typo]" {
		t.Errorf("UnusedIncludes = %v", r2.UnusedIncludes)
	}
	if len(r2.UnusedRules) != 0 || r2.RuleTopics["default"] != 0 || r2.Candidates.Len() != 2 ||
		r2.Candidates.At(0).Reason() != "3.0 MiB in this and newer closed ledgers > keep_bytes 1.0 MiB" {
		t.Errorf("unused %v, per rule %v, candidates %+v", r2.UnusedRules, r2.RuleTopics, r2.Candidates.Slice())
	}
	tp := res.Topics[0]
	if tp.Rule != "default" || tp.BKBytes != 3*MiB || tp.OffloadedBytes != MiB || tp.EligibleBytes != MiB ||
		tp.EligibleLedgers != 1 || !tp.OldestEligible.Equal(now.Add(-25*h)) || tp.TrimBytes != 0 {
		t.Errorf("topic plan = %+v", tp)
	}
	if !res.Topics[1].Excluded || res.Topics[1].Rule != "" {
		t.Errorf("excluded topic plan = %+v", res.Topics[1])
	}
	c := res.Candidates.At(0)
	if c.Reason() != "closed 25h0m0s ago ≥ after 24h0m0s" || c.Settings.DeletionLag.After != 2*h {
		t.Errorf("candidate = %+v", c)
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern, topic string
		want           bool
	}{
		{"t/ns/a", "persistent://t/ns/a", true},
		{"persistent://t/ns/a", "persistent://t/ns/a", true},
		{"t/ns/*", "persistent://t/ns/a", true},
		{"t/*/a", "persistent://t/ns/a", true},
		{"t/ns", "persistent://t/ns/a", true},
		{"t", "persistent://t/ns/a", true},
		{"t/ns/b*", "persistent://t/ns/a", false},
		{"u", "persistent://t/ns/a", false},
		{"t/ns/a/x", "persistent://t/ns/a", false},
		{"t/c1/ns/a", "persistent://t/c1/ns/a", true},
		{"t/c1/ns", "persistent://t/c1/ns/a", true},
		{"t/*/orders-?", "persistent://t/ns/orders-1", true},
	}
	for _, tc := range tests {
		tn, err := mledger.ParseTopic(tc.topic)
		if err != nil {
			t.Fatal(err)
		}
		if got := matchPattern(tc.pattern, tn); got != tc.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", tc.pattern, tc.topic, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		rules Rules
		want  string
	}{
		{"bad glob", Rules{Default: off(), Rules: []Rule{rule("x", func(r *Rule) { r.After = 0 }, "t/[ns")}}, `rule 1 (x): match "t/[ns"`},
		{"no match", Rules{Default: off(), Rules: []Rule{rule("x", func(r *Rule) { r.After = 0 })}}, "match is required"},
		{"duplicate name", Rules{Default: rule("", func(r *Rule) { r.After = 0 }), Rules: []Rule{
			rule("x", func(r *Rule) { r.After = 0 }, "a"), rule("x", func(r *Rule) { r.After = 0 }, "b")}}, "rule 2 (x): name used twice"},
		{"offloads nothing", Rules{Default: off()}, "default rule: offloads nothing"},
		{"block size", Rules{Default: rule("", func(r *Rule) { r.After = 0; r.BlockSize = 1 << 20 })}, "block_size"},
		{"verify", Rules{Default: rule("", func(r *Rule) { r.After = 0; r.Verify = "some" })}, `verify "some"`},
		{"threshold", Rules{Default: rule("", func(r *Rule) { r.After = 0 }), Pressure: Pressure{Threshold: 85}}, "want a ratio"},
		{"empty pattern part", Rules{Default: rule("", func(r *Rule) { r.After = 0 }), Exclude: []string{"t//x"}}, "empty part"},
	}
	for _, tc := range tests {
		err := tc.rules.Validate()
		if err == nil || !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an ErrInvalidRule containing %q", tc.name, err, tc.want)
		}
	}
}

func TestParseNamespacePolicies(t *testing.T) {
	// Shape of a Pulsar 4.0 namespace policies node (fields unrelated to
	// offload abbreviated).
	js := `{"auth_policies":{"namespace_auth":{},"destination_auth":{},"subscription_auth_roles":{}},
	"replication_clusters":["standalone"],"bundles":{"boundaries":["0x00000000","0xffffffff"],"numBundles":1},
	"backlog_quota_map":{},"deleted":false,"encryption_required":false,"subscription_auth_mode":"None",
	"offload_threshold":-1,"offload_threshold_in_seconds":-1,"offload_deletion_lag_ms":600000,
	"schema_compatibility_strategy":"UNDEFINED","schema_validation_enforced":false,
	"offload_policies":{"offloadersDirectory":"./offloaders","managedLedgerOffloadDriver":"aws-s3",
	"managedLedgerOffloadMaxThreads":2,"managedLedgerOffloadPrefetchRounds":1,
	"managedLedgerOffloadThresholdInSeconds":3600,"managedLedgerOffloadThresholdInBytes":null,
	"managedLedgerOffloadDeletionLagInMillis":null,"managedLedgerOffloadedReadPriority":"TIERED_STORAGE_FIRST",
	"s3ManagedLedgerOffloadMaxBlockSizeInBytes":67108864,"managedLedgerOffloadBucket":"b",
	"managedLedgerOffloadMaxBlockSizeInBytes":16777216},"properties":{}}`
	p, err := ParseNamespacePolicies([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if p.ThresholdBytes != nil || p.ThresholdSeconds == nil || *p.ThresholdSeconds != 3600 ||
		p.DeletionLagMs == nil || *p.DeletionLagMs != 600000 || p.Driver != "aws-s3" ||
		p.MaxBlockSizeBytes == nil || *p.MaxBlockSizeBytes != 16<<20 || !p.Set() {
		t.Errorf("parsed %+v", p)
	}
	r := p.effective(off(), BrokerDefaults{ThresholdBytes: 100, ThresholdSeconds: -1})
	if r.After != time.Hour || r.KeepBytes != 100 || r.DeletionLag != (DeletionLag{Mode: LagAfter, After: 10 * time.Minute}) {
		t.Errorf("effective %+v", r)
	}
	empty, err := ParseNamespacePolicies([]byte(`{"offload_threshold":-1,"offload_threshold_in_seconds":-1,"offload_policies":null}`))
	if err != nil || empty.Set() {
		t.Errorf("unset policies: %+v, %v", empty, err)
	}
	if _, err := ParseNamespacePolicies([]byte(`{"offload_threshold":"x"}`)); err == nil {
		t.Error("bad JSON accepted")
	}
}

// TestSortCandidatesOrder checks Evaluate's order against the order the
// package doc gives, written as a plain comparator, on candidates with many
// ties (equal times, names, pressures) from topics in a shuffled order.
func TestSortCandidatesOrder(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	base := now.Add(-10 * time.Hour)
	snap := Snapshot{BookieUsage: map[string]float64{"b90": 0.9, "b95": 0.95, "cool": 0.1}}
	for i := 0; i < 40; i++ {
		tp := topic(fmt.Sprintf("t/ns/topic-%d", i))
		tp.Ledgers = nil
		for j := 0; j < 75; j++ {
			l := Ledger{ID: int64(i*100 + j), Entries: 1, Size: 1, State: mledger.StateBookKeeper,
				ClosedAt: base.Add(time.Duration(rnd.IntN(5)) * time.Second), Bookies: []string{"cool"}}
			if rnd.IntN(2) == 0 {
				l.State, l.OffloadedAt = mledger.StateOffloaded, base.Add(time.Duration(rnd.IntN(5))*time.Second)
			} else if rnd.IntN(3) == 0 {
				l.Bookies = append(l.Bookies, []string{"b90", "b95"}[rnd.IntN(2)])
			}
			tp.Ledgers = append(tp.Ledgers, l)
		}
		tp.Ledgers = append(tp.Ledgers, Ledger{ID: int64(i*100 + 99), State: mledger.StateOpen})
		snap.Topics = append(snap.Topics, tp)
	}
	rnd.Shuffle(len(snap.Topics), func(i, j int) { snap.Topics[i], snap.Topics[j] = snap.Topics[j], snap.Topics[i] })
	cs := Evaluate(snap, now, Rules{Default: Rule{Offload: true, After: 0, KeepBytes: -1, KeepLedgers: -1, Pressure: true,
		DeletionLag: DeletionLag{Mode: LagAfter}}, Pressure: Pressure{Threshold: 0.9}}).Candidates.Slice()
	if len(cs) != 40*75 {
		t.Fatalf("%d candidates, want every one of the %d closed ledgers", len(cs), 40*75)
	}
	pressure := 0
	for _, c := range cs {
		if c.Trigger == TriggerPressure {
			pressure++
		}
	}
	if pressure < 100 {
		t.Fatalf("only %d pressure candidates", pressure)
	}
	less := func(a, b Candidate) bool {
		if a.Action != b.Action {
			return a.Action < b.Action
		}
		if (a.Trigger == TriggerPressure) != (b.Trigger == TriggerPressure) {
			return a.Trigger == TriggerPressure
		}
		if a.Pressure != b.Pressure {
			return a.Pressure > b.Pressure
		}
		at, bt := a.ClosedAt, b.ClosedAt
		if a.Action == ActionTrim {
			at, bt = a.OffloadedAt, b.OffloadedAt
		}
		if !at.Equal(bt) {
			return at.Before(bt)
		}
		if a.ML != b.ML {
			return a.ML < b.ML
		}
		return a.LedgerID < b.LedgerID
	}
	for i := 1; i < len(cs); i++ {
		if less(cs[i], cs[i-1]) || !less(cs[i-1], cs[i]) {
			t.Fatalf("position %d: %+v after %+v", i, cs[i], cs[i-1])
		}
	}
}

// TestCandidatesList checks the list an evaluation returns: Ref and
// Action agree with the Candidate At makes, All and Slice give the same
// order, and Append leaves the list it was called on as it was (two
// appends to one list do not share their tail).
func TestCandidatesList(t *testing.T) {
	snap := Snapshot{BookieUsage: map[string]float64{"hot": 0.95}}
	for i := range 6 {
		tp := topic(fmt.Sprintf("t/ns/topic-%d", i))
		tp.Ledgers = []Ledger{
			{ID: int64(10*i + 1), Entries: 1, Size: 10, State: mledger.StateBookKeeper, ClosedAt: now.Add(-time.Duration(i+2) * time.Hour), Bookies: []string{"hot"}},
			{ID: int64(10*i + 2), Entries: 2, Size: 20, State: mledger.StateOffloaded, ClosedAt: now.Add(-3 * time.Hour), OffloadedAt: now.Add(-time.Duration(i+2) * time.Hour)},
			{ID: int64(10*i + 3), Entries: 3, Size: 30, State: mledger.StateBookKeeper, ClosedAt: now.Add(-time.Duration(i+2) * time.Hour)},
			{ID: int64(10*i + 9), State: mledger.StateOpen},
		}
		snap.Topics = append(snap.Topics, tp)
	}
	l := Evaluate(snap, now, Rules{Default: Rule{Name: "d", Offload: true, After: time.Hour, KeepBytes: -1, KeepLedgers: -1, Pressure: true,
		DeletionLag: DeletionLag{Mode: LagAfter, After: time.Hour}, BlockSize: 1 << 20}, Pressure: Pressure{Threshold: 0.9}}).Candidates
	if l.Len() != 18 {
		t.Fatalf("%d candidates, want 18 (6 topics: a pressure and an age offload, a trim)", l.Len())
	}
	all := l.Slice()
	triggers := map[Trigger]int{}
	for i, c := range l.All() {
		if c != all[i] || l.At(i) != c {
			t.Fatalf("place %d: All gives %+v, Slice %+v", i, c, all[i])
		}
		if l.Ref(i) != c.LedgerRef || l.Action(i) != c.Action {
			t.Fatalf("place %d: Ref %v and Action %v, the candidate %v and %v", i, l.Ref(i), l.Action(i), c.LedgerRef, c.Action)
		}
		if c.Topic != "persistent://"+strings.Replace(c.ML, "/persistent/", "/", 1) || c.Rule != "d" || c.Settings.BlockSize != 1<<20 || c.Reason() == "" {
			t.Fatalf("place %d: %+v (reason %q)", i, c, c.Reason())
		}
		triggers[c.Trigger]++
	}
	if triggers[TriggerPressure] != 6 || triggers[TriggerAge] != 6 || triggers[TriggerLag] != 6 {
		t.Fatalf("triggers %v, want 6 of each", triggers)
	}
	if r := all[0].Reason(); r != "replica on bookie hot, ledger disks 95% ≥ 90%" {
		t.Fatalf("pressure reason %q", r)
	}
	x := Candidate{LedgerRef: mledger.LedgerRef{ML: "x", LedgerID: 1}, Detail: "x"}
	y := Candidate{LedgerRef: mledger.LedgerRef{ML: "y", LedgerID: 1}, Detail: "y"}
	// Four appended make a tail with room to spare (append grows it).
	lx := l.Append(x, x, x).Append(x)
	lxx, lxy := lx.Append(x), lx.Append(y)
	if l.Len() != 18 || lx.Len() != 22 || lxx.Len() != 23 || lxx.At(22) != x || lxy.At(22) != y || lxy.At(21) != x || lxy.Ref(22) != y.LedgerRef {
		t.Fatalf("appends share their tail: %d %d %d, %v %v", l.Len(), lx.Len(), lxy.Len(), lxx.At(22).ML, lxy.At(22).ML)
	}
	if e := (Candidates{}); e.Len() != 0 || len(e.Slice()) != 0 || ListOf().Len() != 0 {
		t.Fatal("the zero list is not empty")
	}
}
