package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Ledger is one ledger of a managed ledger as the policy sees it.
type Ledger struct {
	ID      int64
	Entries int64
	Size    int64
	// ClosedAt is LedgerInfo.timestamp (zero for the open ledger).
	ClosedAt time.Time
	State    mledger.LedgerState
	// OffloadedAt is OffloadContext.timestamp of a complete offload.
	OffloadedAt time.Time
	// Bookies are the bookie ids holding replicas (every ensemble of the
	// ledger), nil when not looked up.
	Bookies []string
	// Attempt is the offload attempt UUID recorded in the ledger's
	// OffloadContext (prepared or complete); uuid.Nil when none.
	Attempt uuid.UUID
}

// Topic is one managed ledger.
type Topic struct {
	// ML is the managed-ledger name (tenant/namespace/persistent/topic).
	ML    string
	Topic mledger.TopicName
	// Ledgers in stored (ascending id) order; the last is the open one.
	Ledgers []Ledger
}

// TopicFromInfo builds a Topic from decoded managed-ledger metadata.
func TopicFromInfo(ml string, info *mlproto.ManagedLedgerInfo) (Topic, error) {
	tn, err := mledger.ParseMLName(ml)
	if err != nil {
		return Topic{}, err
	}
	states := mledger.States(info)
	t := Topic{ML: ml, Topic: tn, Ledgers: make([]Ledger, 0, len(info.GetLedgerInfo()))}
	for i, li := range info.GetLedgerInfo() {
		l := Ledger{ID: li.GetLedgerId(), Entries: li.GetEntries(), Size: li.GetSize(), State: states[i]}
		if ts := li.GetTimestamp(); ts > 0 {
			l.ClosedAt = time.UnixMilli(ts)
		}
		if oc := li.GetOffloadContext(); oc.GetComplete() && oc.GetTimestamp() > 0 {
			l.OffloadedAt = time.UnixMilli(oc.GetTimestamp())
		}
		if id, ok := mledger.AttemptUUID(li.GetOffloadContext()); ok {
			l.Attempt = id
		}
		t.Ledgers = append(t.Ledgers, l)
	}
	return t, nil
}

// Snapshot is everything Evaluate looks at.
type Snapshot struct {
	Topics []Topic
	// BookieUsage is the ledger-disk usage ratio (0..1) per bookie id, for
	// the bookies whose usage is known.
	BookieUsage map[string]float64
	// Namespaces holds Pulsar namespace policies by namespace path
	// ("tenant/namespace"), for namespaces that have them;
	// NamespaceErrors the namespaces whose policies could not be read.
	Namespaces      map[string]*NamespacePolicy
	NamespaceErrors map[string]string
	// TopicPolicies are topic-level offload policies by partitioned topic
	// name ("persistent://t/ns/x"), for topics looked up.
	TopicPolicies map[string]TopicPolicy
	// Broker are the broker-level thresholds (read from the admin API, or
	// as configured); nil: not checked (BrokerOffload).
	Broker *BrokerSettings
}

// Action is what a candidate asks for.
type Action int

const (
	// ActionOffload copies the ledger to the object store and commits.
	ActionOffload Action = iota
	// ActionTrim deletes the BookKeeper copy of an offloaded ledger.
	ActionTrim
	// ActionRepair clears the offload context of a committed ledger whose
	// objects the scrubber found missing or wrong while BookKeeper still
	// has it (never chosen by Evaluate: the service's scrubber offers it).
	ActionRepair
)

func (a Action) String() string {
	switch a {
	case ActionTrim:
		return "trim"
	case ActionRepair:
		return "repair"
	}
	return "offload"
}

// Trigger says which condition chose a candidate.
type Trigger string

// Triggers.
const (
	TriggerPressure Trigger = "pressure"
	TriggerAge      Trigger = "age"
	TriggerBytes    Trigger = "bytes"
	TriggerLedgers  Trigger = "ledgers"
	TriggerLag      Trigger = "deletion-lag"
)

// Settings are what the pipeline needs from the rule.
type Settings struct {
	BlockSize   int64
	Verify      string
	DeletionLag DeletionLag
}

// Candidate is one ledger to work on, with the reason.
type Candidate struct {
	mledger.LedgerRef
	Topic   string
	Entries int64
	Size    int64
	Action  Action
	// Rule is the name of the deciding rule; with Pulsar namespace
	// policies, "pulsar:<tenant>/<namespace>".
	Rule    string
	Trigger Trigger
	// Detail says in words why, for a candidate made outside the policy
	// (the scrubber's finding); Reason returns it. The policy's own
	// candidates leave it empty and keep the figures instead.
	Detail string
	// Pressure is the usage of the fullest pressured bookie holding a
	// replica (pressure candidates only).
	Pressure    float64
	ClosedAt    time.Time
	OffloadedAt time.Time
	Settings    Settings

	why why
}

// why holds the figures a policy candidate's reason is written from, so
// that the words are formatted only for the candidates someone reads.
type why struct {
	n, limit  int64   // age or time since the offload (ns), bytes or ledgers; the rule's bound
	threshold float64 // pressure: the threshold
	bookie    string  // pressure: the fullest pressured bookie holding a replica
}

// Reason says in words why, e.g. "closed 26h0m0s ago ≥ after 24h0m0s".
func (c Candidate) Reason() string {
	if c.Detail != "" {
		return c.Detail
	}
	w := c.why
	switch c.Trigger {
	case TriggerPressure:
		return fmt.Sprintf("replica on bookie %s, ledger disks %.0f%% ≥ %.0f%%", w.bookie, c.Pressure*100, w.threshold*100)
	case TriggerAge:
		return fmt.Sprintf("closed %s ago ≥ after %s", time.Duration(w.n).Round(time.Second), time.Duration(w.limit))
	case TriggerBytes:
		return fmt.Sprintf("%s in this and newer closed ledgers > keep_bytes %s", units.HumanBytes(w.n), units.HumanBytes(w.limit))
	case TriggerLedgers:
		return fmt.Sprintf("%d closed ledgers this new or newer > keep_ledgers %d", w.n, w.limit)
	case TriggerLag:
		return fmt.Sprintf("offloaded %s ago ≥ deletion_lag %s", time.Duration(w.n).Round(time.Second), time.Duration(w.limit))
	}
	return ""
}

// TopicPlan summarizes one topic for plan and status.
type TopicPlan struct {
	ML    string
	Topic string
	// Rule decides for the topic ("" when excluded): the matching rule's
	// name, or "pulsar:<namespace>" when Pulsar's namespace policy applies.
	Rule string
	// MatchedRule is the configured rule that matched (the default's name
	// when none did), whatever Pulsar's policies say.
	MatchedRule string
	Excluded    bool
	// ExcludedWhy says why an excluded topic is (include/exclude, or a
	// Pulsar system topic).
	ExcludedWhy string
	// Refused says why tierkeeper leaves the topic to the broker's own
	// offloader (BrokerOffload); no candidates then.
	Refused string
	// Held says why the topic's candidates wait (the reload bound); its
	// lag is still counted.
	Held string
	// BKBytes counts closed ledgers whose data is still on BookKeeper
	// (offloaded or not); OffloadedBytes the complete offloads.
	BKBytes, OffloadedBytes int64
	// EligibleBytes/EligibleLedgers are the offload candidates: the
	// offload lag in bytes. OldestEligible is the close time of the oldest.
	EligibleBytes   int64
	EligibleLedgers int
	OldestEligible  time.Time
	// TrimBytes are offloaded ledgers due for BookKeeper deletion.
	TrimBytes int64
}

// Result is the full evaluation.
type Result struct {
	Candidates Candidates
	Topics     []TopicPlan
	// RuleTopics counts the topics each configured rule matched (by rule
	// name, the default included): a rule with 0 matches nothing.
	RuleTopics map[string]int
	// UnusedRules are the configured rules (not the default) that matched
	// no topic, in configuration order: probably a mistyped pattern.
	UnusedRules []string
	// UnusedIncludes are the Include patterns that matched no topic.
	UnusedIncludes []string
	// PressuredBookies are the bookies at or above the threshold.
	PressuredBookies map[string]float64
}

// Evaluate applies the rules to every topic of snap. The result's
// Candidates hold snap.Topics and make candidates from them later: the
// caller leaves them as they are.
func Evaluate(snap Snapshot, now time.Time, rules Rules) Result {
	res := Result{RuleTopics: map[string]int{}, PressuredBookies: map[string]float64{}, Topics: make([]TopicPlan, 0, len(snap.Topics))}
	for _, r := range rules.Rules {
		res.RuleTopics[r.Name] = 0
	}
	def := rules.Default.Name
	if def == "" {
		def = "default"
	}
	res.RuleTopics[def] = 0
	if th := rules.Pressure.Threshold; th > 0 {
		for b, u := range snap.BookieUsage {
			if u >= th {
				res.PressuredBookies[b] = u
			}
		}
	}
	// The effective rule of each topic with candidates (for their
	// settings and reasons).
	eff := make([]Rule, len(snap.Topics))
	closed := 0 // at most one candidate per closed ledger
	for i := range snap.Topics {
		closed += max(0, len(snap.Topics[i].Ledgers)-1)
	}
	cands := make([]chosen, 0, closed)
	for i := range snap.Topics {
		var tp TopicPlan
		tp, cands = evaluateTopic(int32(i), &snap.Topics[i], snap, now, &rules, res.PressuredBookies, &eff[i], cands)
		res.Topics = append(res.Topics, tp)
		if !tp.Excluded {
			res.RuleTopics[tp.MatchedRule]++
		}
	}
	res.Candidates = Candidates{ev: &evaluated{topics: snap.Topics, plans: res.Topics, eff: eff, cands: cands, threshold: rules.Pressure.Threshold},
		order: sortChosen(cands, snap.Topics)}
	for _, r := range rules.Rules {
		if res.RuleTopics[r.Name] == 0 {
			res.UnusedRules = append(res.UnusedRules, r.Name)
		}
	}
	for _, p := range rules.Include {
		if !slices.ContainsFunc(snap.Topics, func(t Topic) bool { return matchAny([]string{p}, t.Topic) }) {
			res.UnusedIncludes = append(res.UnusedIncludes, p)
		}
	}
	return res
}

// evaluateTopic plans topic ti (t), sets its effective rule in eff and
// appends its candidates to out.
func evaluateTopic(ti int32, t *Topic, snap Snapshot, now time.Time, rules *Rules, pressured map[string]float64, eff *Rule, out []chosen) (TopicPlan, []chosen) {
	tp := TopicPlan{ML: t.ML, Topic: t.Topic.String()}
	rule, ok := rules.RuleFor(t.Topic)
	why := "excluded by policy.include/exclude"
	if sys, isSys := SystemTopic(t.Topic); isSys {
		ok, why = false, "excluded: "+sys
	}
	n := len(t.Ledgers)
	for i, l := range t.Ledgers {
		if i == n-1 {
			break
		}
		if l.State != mledger.StateOffloadedBKDeleted {
			tp.BKBytes += l.Size
		}
		if l.State == mledger.StateOffloaded || l.State == mledger.StateOffloadedBKDeleted {
			tp.OffloadedBytes += l.Size
		}
	}
	if !ok {
		tp.Excluded, tp.ExcludedWhy = true, why
		return tp, out
	}
	tp.Rule, tp.MatchedRule = rule.Name, rule.Name
	if tp.Refused = BrokerOffload(*t, snap); tp.Refused != "" {
		return tp, out
	}
	if rules.PulsarPolicies {
		if np := snap.Namespaces[t.Topic.NamespacePath()]; np.Set() {
			rule = np.effective(rule, rules.BrokerDefaults)
			tp.Rule = "pulsar:" + t.Topic.NamespacePath()
		}
	}
	*eff = rule
	var holdUntil time.Time
	if last := lastCommit(*t); rules.MinReloadInterval > 0 && !last.IsZero() && now.Sub(last) < rules.MinReloadInterval {
		holdUntil = last.Add(rules.MinReloadInterval)
		tp.Held = fmt.Sprintf("reload bound: last commit (and reload) %s ago < min_reload_interval %s; next after %s",
			now.Sub(last).Round(time.Second), rules.MinReloadInterval, holdUntil.UTC().Format(time.RFC3339))
	}
	var sum int64
	newer := 0
	// Newest closed ledger first: the running sum and rank include the
	// ledger itself, as the broker's size trigger does.
	for i := n - 2; i >= 0; i-- {
		l := &t.Ledgers[i]
		if l.ClosedAt.IsZero() {
			continue // not closed (the broker skips timestamp 0)
		}
		sum += l.Size
		newer++
		p := chosen{pressure: 2, at: l.ClosedAt.UnixNano(), ledger: l.ID, topic: ti, li: int32(i)}
		switch l.State {
		case mledger.StateBookKeeper, mledger.StateOffloading:
			if !rule.Offload || l.Entries <= 0 || l.Size <= 0 {
				continue
			}
			age := now.Sub(l.ClosedAt)
			var press float64
			pressBookie := -1
			if rule.Pressure && age >= rules.Pressure.MinAge {
				for bi, b := range l.Bookies {
					if u, ok := pressured[b]; ok && u > press {
						press, pressBookie = u, bi
					}
				}
			}
			switch {
			case pressBookie >= 0:
				p.trigger, p.pressure, p.bookie = trigPressure, -press, int32(pressBookie)
			case rule.After >= 0 && age >= rule.After:
				p.trigger, p.n = trigAge, int64(age)
			case rule.KeepBytes >= 0 && sum > rule.KeepBytes:
				p.trigger, p.n = trigBytes, sum
			case rule.KeepLedgers >= 0 && newer > rule.KeepLedgers:
				p.trigger, p.n = trigLedgers, int64(newer)
			default:
				continue
			}
			p.action = ActionOffload
			tp.EligibleBytes += l.Size
			tp.EligibleLedgers++
			if tp.OldestEligible.IsZero() || l.ClosedAt.Before(tp.OldestEligible) {
				tp.OldestEligible = l.ClosedAt
			}
			if !holdUntil.IsZero() && p.trigger != trigPressure {
				continue // counted as lag, offered after the reload bound
			}
			out = append(out, p)
		case mledger.StateOffloaded:
			if rule.DeletionLag.Mode != LagAfter || l.OffloadedAt.IsZero() {
				continue
			}
			since := now.Sub(l.OffloadedAt)
			if since < rule.DeletionLag.After {
				continue
			}
			p.action, p.trigger, p.n, p.at = ActionTrim, trigLag, int64(since), l.OffloadedAt.UnixNano()
			tp.TrimBytes += l.Size
			if !holdUntil.IsZero() {
				continue
			}
			out = append(out, p)
		}
	}
	return tp, out
}
