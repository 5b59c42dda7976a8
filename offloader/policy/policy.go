package policy

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// ErrInvalidRule is wrapped by every error Validate returns.
var ErrInvalidRule = errors.New("policy: invalid rule")

// LagMode says who deletes the BookKeeper copy of an offloaded ledger.
type LagMode int

const (
	// LagBroker leaves BookKeeper deletion to the broker's own deletion
	// lag (the zero value).
	LagBroker LagMode = iota
	// LagAfter deletes the BookKeeper copy DeletionLag.After after the
	// offload committed.
	LagAfter
	// LagNever keeps the BookKeeper copy.
	LagNever
)

// DeletionLag says when the BookKeeper copy of an offloaded ledger goes.
type DeletionLag struct {
	Mode  LagMode
	After time.Duration // LagAfter only
}

func (d DeletionLag) String() string {
	switch d.Mode {
	case LagAfter:
		return d.After.String()
	case LagNever:
		return "never"
	}
	return "broker"
}

// Verify levels (passed to the pipeline).
const (
	// VerifyFull re-reads the uploaded objects and compares every entry
	// with what was read from BookKeeper (ledgers up to the pipeline's size
	// limit for it), on top of VerifyIndex.
	VerifyFull = "full"
	// VerifyIndex checks sizes, the index and every block header.
	VerifyIndex = "index"
)

// Rule is one offload rule with every setting resolved.
type Rule struct {
	// Name identifies the rule in candidates, plan and status.
	Name string
	// Match are topic patterns (see the package doc); empty matches every
	// topic (the default rule).
	Match []string
	// Offload false excludes the matched topics from offloading.
	Offload bool
	// After is the age trigger: a closed ledger this old is offloaded.
	// Negative: off.
	After time.Duration
	// KeepBytes keeps at most this many bytes of closed ledgers of each
	// topic on BookKeeper. Negative: off.
	KeepBytes int64
	// KeepLedgers keeps at most this many closed ledgers of each topic on
	// BookKeeper. Negative: off.
	KeepLedgers int
	// Pressure lets bookie disk pressure select ledgers early.
	Pressure bool
	// DeletionLag says when the BookKeeper copy is deleted.
	DeletionLag DeletionLag
	// BlockSize is the data-block size of the objects; 0: the pipeline's
	// default.
	BlockSize int64
	// Verify is VerifyFull or VerifyIndex; "": the pipeline's default.
	Verify string
}

// Pressure configures the disk-pressure trigger.
type Pressure struct {
	// Threshold is the ledger-disk usage ratio (0..1) at or above which a
	// bookie is under pressure. 0: pressure off.
	Threshold float64
	// MinAge is the youngest a ledger may be to be offloaded for pressure.
	MinAge time.Duration
}

// Rules is the whole policy.
type Rules struct {
	Rules   []Rule
	Default Rule
	// Include and Exclude filter topics before any rule (patterns as in
	// Rule.Match).
	Include, Exclude []string
	Pressure         Pressure
	// PulsarPolicies enables Pulsar's namespace offload policies
	// (Snapshot.Namespaces).
	PulsarPolicies bool
	// BrokerDefaults are the broker.conf values that apply where the
	// namespace policies leave a setting unset (null).
	BrokerDefaults BrokerDefaults
	// MinReloadInterval is the shortest time between two reloads of one
	// topic: after a commit (each is followed by a reload) the topic's
	// offload and trim candidates wait this long (pressure candidates do
	// not), so the ledgers due meanwhile go together in one job, one
	// metadata write and one reload. 0: no bound.
	MinReloadInterval time.Duration
}

// BrokerDefaults are the broker-level offload settings (broker.conf).
type BrokerDefaults struct {
	// ThresholdBytes is managedLedgerOffloadAutoTriggerSizeThresholdBytes
	// (-1: off).
	ThresholdBytes int64
	// ThresholdSeconds is managedLedgerOffloadThresholdInSeconds (-1: off).
	ThresholdSeconds int64
	// DeletionLag is managedLedgerOffloadDeletionLagMs; nil means the
	// broker's default 4 h. Negative: never.
	DeletionLag *time.Duration
}

// Validate checks patterns and values; errors name the rule.
func (r *Rules) Validate() error {
	var errs []error
	check := func(where string, rule Rule) {
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalidRule, where, fmt.Sprintf(format, a...)))
		}
		for _, p := range rule.Match {
			if err := checkPattern(p); err != nil {
				bad("match %q: %v", p, err)
			}
		}
		if rule.DeletionLag.Mode == LagAfter && rule.DeletionLag.After < 0 {
			bad("deletion_lag must not be negative")
		}
		if rule.BlockSize != 0 && (rule.BlockSize < 5<<20 || rule.BlockSize > 2<<30) {
			bad("block_size %d: want 5 MiB (the smallest multipart part) to 2 GiB", rule.BlockSize)
		}
		switch rule.Verify {
		case "", VerifyFull, VerifyIndex:
		default:
			bad("verify %q: want %s or %s", rule.Verify, VerifyFull, VerifyIndex)
		}
		if rule.Offload && rule.After < 0 && rule.KeepBytes < 0 && rule.KeepLedgers < 0 && !rule.Pressure && !r.PulsarPolicies {
			bad("offloads nothing: set after, keep_bytes, keep_ledgers or pressure (or offload: false)")
		}
	}
	seen := map[string]bool{}
	for i, rule := range r.Rules {
		where := fmt.Sprintf("rule %d", i+1)
		if rule.Name != "" {
			where = fmt.Sprintf("rule %d (%s)", i+1, rule.Name)
			if seen[rule.Name] {
				errs = append(errs, fmt.Errorf("%w: %s: name used twice", ErrInvalidRule, where))
			}
			seen[rule.Name] = true
		}
		if len(rule.Match) == 0 {
			errs = append(errs, fmt.Errorf("%w: %s: match is required (only the default rule matches everything)", ErrInvalidRule, where))
		}
		check(where, rule)
	}
	check("default rule", r.Default)
	for _, p := range append(slices.Clone(r.Include), r.Exclude...) {
		if err := checkPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("%w: include/exclude %q: %v", ErrInvalidRule, p, err))
		}
	}
	if r.Pressure.Threshold < 0 || r.Pressure.Threshold > 1 {
		errs = append(errs, fmt.Errorf("%w: pressure threshold %v: want a ratio 0..1", ErrInvalidRule, r.Pressure.Threshold))
	}
	return errors.Join(errs...)
}

func checkPattern(p string) error {
	parts := splitPattern(p)
	if len(parts) == 0 || len(parts) > 4 {
		return errors.New("want tenant[/namespace[/topic]] (v1: tenant/cluster/namespace/topic)")
	}
	for _, s := range parts {
		if s == "" {
			return errors.New("empty part")
		}
		if _, err := path.Match(s, ""); err != nil {
			return err
		}
	}
	return nil
}

func splitPattern(p string) []string {
	p = strings.TrimPrefix(strings.TrimSpace(p), mledger.DomainPersistent+"://")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// matchPattern reports whether pattern p matches the topic t: its k parts
// against t's first k names (tenant, [cluster,] namespace, local name), so
// a shorter pattern matches a whole tenant or namespace.
func matchPattern(p string, t mledger.TopicName) bool {
	pp := splitPattern(p)
	names := []string{t.Tenant}
	if t.Cluster != "" {
		names = append(names, t.Cluster)
	}
	names = append(names, t.Namespace, t.Local)
	if len(pp) == 0 || len(pp) > len(names) {
		return false
	}
	for i, s := range pp {
		if ok, _ := path.Match(s, names[i]); !ok {
			return false
		}
	}
	return true
}

// matchAny reports whether any pattern matches t or, for a partition, its
// partitioned topic.
func matchAny(patterns []string, t mledger.TopicName) bool {
	for _, p := range patterns {
		if matchPattern(p, t) {
			return true
		}
		if t.Partition >= 0 && matchPattern(p, t.PartitionedTopic()) {
			return true
		}
	}
	return false
}

// RuleFor returns the rule that decides for topic t (the first match, else
// the default) and whether the topic passes Include/Exclude.
func (r *Rules) RuleFor(t mledger.TopicName) (rule Rule, considered bool) {
	if (len(r.Include) > 0 && !matchAny(r.Include, t)) || matchAny(r.Exclude, t) {
		return Rule{}, false
	}
	for _, rule := range r.Rules {
		if matchAny(rule.Match, t) {
			return rule, true
		}
	}
	d := r.Default
	if d.Name == "" {
		d.Name = "default"
	}
	return d, true
}

// chosen is one candidate as the evaluation keeps it: its sort key (the package doc's order), where its ledger is, and
// the figure its reason is written from. They hold no pointers, so the
// garbage collector does not scan them; a Candidates list keeps them and
// makes a Candidate from one when asked.
type chosen struct {
	action   Action
	pressure float64 // negated usage; 2 when not a pressure candidate
	at       int64   // ClosedAt, OffloadedAt for trims (unix nanos)
	ml       int32   // rank of the managed ledger's name (set by the sort)
	ledger   int64   // ledger id
	topic    int32   // index in Snapshot.Topics
	li       int32   // index in the topic's Ledgers
	bookie   int32   // pressure: index of the fullest pressured bookie in Ledger.Bookies
	trigger  trig
	n        int64 // the reason's figure: age, bytes, ledgers or time since the offload
}

// trig is a Trigger as a small number, so chosen holds no pointer.
type trig uint8

const (
	trigPressure trig = iota + 1
	trigAge
	trigBytes
	trigLedgers
	trigLag
)

var triggers = [...]Trigger{trigPressure: TriggerPressure, trigAge: TriggerAge, trigBytes: TriggerBytes,
	trigLedgers: TriggerLedgers, trigLag: TriggerLag}

// sortKey is the part of a chosen's key that orders the common case:
// offloads not chosen for pressure, and trims (time, then name rank).
type sortKey struct {
	at int64
	ml int32
	i  int32 // index of the chosen
}

// sortChosen returns the indices of cands in the order the package doc
// says. The order is total (a
// managed ledger's name and ledger id end every tie; the topic's place in
// the snapshot only between two topics of one name). Names are replaced by
// their rank among the topics' names, so ties on time compare integers,
// not strings; the candidates are split by action and pressure first, and
// the bulk (age, size and count offloads; trims) sorts small keys.
func sortChosen(cands []chosen, topics []Topic) []int32 {
	order := make([]int32, len(topics))
	for i := range order {
		order[i] = int32(i)
	}
	if !slices.IsSortedFunc(topics, func(a, b Topic) int { return strings.Compare(a.ML, b.ML) }) {
		slices.SortFunc(order, func(a, b int32) int { return strings.Compare(topics[a].ML, topics[b].ML) })
	}
	rank := make([]int32, len(topics))
	for r, ti := range order {
		if r > 0 && topics[ti].ML == topics[order[r-1]].ML {
			rank[ti] = rank[order[r-1]]
			continue
		}
		rank[ti] = int32(r)
	}
	// Groups in the final order: pressure offloads, other offloads, trims.
	var press, trims []sortKey
	offloads := make([]sortKey, 0, len(cands))
	for i := range cands {
		c := &cands[i]
		c.ml = rank[c.topic]
		switch {
		case c.trigger == trigPressure:
			press = append(press, sortKey{i: int32(i)})
		case c.action == ActionOffload:
			offloads = append(offloads, sortKey{at: c.at, ml: c.ml, i: int32(i)})
		default:
			trims = append(trims, sortKey{at: c.at, ml: c.ml, i: int32(i)})
		}
	}
	slices.SortFunc(press, func(ka, kb sortKey) int {
		a, b := &cands[ka.i], &cands[kb.i]
		if a.pressure != b.pressure {
			return cmp.Compare(a.pressure, b.pressure)
		}
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		if a.ml != b.ml {
			return cmp.Compare(a.ml, b.ml)
		}
		if a.ledger != b.ledger {
			return cmp.Compare(a.ledger, b.ledger)
		}
		return cmp.Compare(a.topic, b.topic)
	})
	byKey := func(a, b sortKey) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		if a.ml != b.ml {
			return cmp.Compare(a.ml, b.ml)
		}
		ca, cb := &cands[a.i], &cands[b.i]
		if ca.ledger != cb.ledger {
			return cmp.Compare(ca.ledger, cb.ledger)
		}
		return cmp.Compare(ca.topic, cb.topic)
	}
	slices.SortFunc(offloads, byKey)
	slices.SortFunc(trims, byKey)
	out := make([]int32, 0, len(cands))
	for _, g := range [][]sortKey{press, offloads, trims} {
		for _, k := range g {
			out = append(out, k.i)
		}
	}
	return out
}
