package offloader

import (
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/policy"
)

// PlanReport is a PlanResult as offloader plan prints it (-o json): the
// candidates in the service's work order, the topics, the totals and what
// could not be read.
type PlanReport struct {
	At             time.Time          `json:"at"`
	Candidates     []PlanCandidate    `json:"candidates"`
	Topics         []PlanTopic        `json:"topics"`
	Totals         PlanTotals         `json:"totals"`
	RuleTopics     map[string]int     `json:"ruleTopics"`
	UnusedRules    []string           `json:"unusedRules"`
	UnusedIncludes []string           `json:"unusedIncludes"`
	BookieUsage    map[string]float64 `json:"bookieUsage,omitempty"`
	Pressured      map[string]float64 `json:"pressuredBookies,omitempty"`
	ReadErrors     map[string]string  `json:"readErrors,omitempty"`
	PressureErrors []string           `json:"pressureErrors,omitempty"`
	PolicyErrors   []string           `json:"policyErrors,omitempty"`
	BrokerErrors   []string           `json:"brokerErrors,omitempty"`
	LedgerErrors   []string           `json:"ledgerErrors,omitempty"`
	ScanSeconds    float64            `json:"scanSeconds"`
	// Warnings are what the service's /status warns of for the same
	// evaluation (unread managed ledgers, pressure, policies, the broker,
	// unused rules and includes, ledger metadata).
	Warnings []string `json:"-"`
}

// PlanCandidate is one ledger the service would offload or trim next.
type PlanCandidate struct {
	// Order is the candidate's place in the work order, from 1.
	Order       int        `json:"order"`
	Action      string     `json:"action"`
	Topic       string     `json:"topic"`
	ML          string     `json:"managedLedger"`
	LedgerID    int64      `json:"ledgerId"`
	Entries     int64      `json:"entries"`
	Bytes       int64      `json:"bytes"`
	Rule        string     `json:"rule"`
	Trigger     string     `json:"trigger"`
	Reason      string     `json:"reason"`
	ClosedAt    time.Time  `json:"closedAt"`
	OffloadedAt *time.Time `json:"offloadedAt,omitempty"`
	BlockSize   int64      `json:"blockSize,omitempty"`
	Verify      string     `json:"verify,omitempty"`
	DeletionLag string     `json:"deletionLag"`
}

// PlanTopic is one topic's view in a plan.
type PlanTopic struct {
	Topic           string     `json:"topic"`
	Rule            string     `json:"rule,omitempty"`
	Excluded        bool       `json:"excluded,omitempty"`
	ExcludedWhy     string     `json:"excludedWhy,omitempty"`
	Refused         string     `json:"refused,omitempty"`
	Held            string     `json:"held,omitempty"`
	BKBytes         int64      `json:"bookkeeperBytes"`
	OffloadedBytes  int64      `json:"offloadedBytes"`
	EligibleBytes   int64      `json:"eligibleBytes"`
	EligibleLedgers int        `json:"eligibleLedgers"`
	OldestEligible  *time.Time `json:"oldestEligible,omitempty"`
	TrimBytes       int64      `json:"trimBytes"`
}

// PlanTotals add up a plan's candidates and topics.
type PlanTotals struct {
	OffloadLedgers int   `json:"offloadLedgers"`
	OffloadBytes   int64 `json:"offloadBytes"`
	TrimLedgers    int   `json:"trimLedgers"`
	TrimBytes      int64 `json:"trimBytes"`
	Topics         int   `json:"topics"`
	Excluded       int   `json:"excludedTopics"`
	Refused        int   `json:"refusedTopics"`
	Held           int   `json:"heldTopics"`
}

// Doc returns the plan as offloader plan prints it, times in UTC.
func (res *PlanResult) Doc() PlanReport {
	r := res.Result
	doc := PlanReport{At: res.At.UTC(), Candidates: []PlanCandidate{}, Topics: []PlanTopic{}, RuleTopics: r.RuleTopics,
		UnusedRules: r.UnusedRules, UnusedIncludes: r.UnusedIncludes, BookieUsage: res.BookieUsage, Pressured: r.PressuredBookies,
		ReadErrors: res.ReadErrors, PressureErrors: res.Report.PressureErrors, PolicyErrors: res.Report.PolicyErrors,
		BrokerErrors: res.Report.BrokerErrors, LedgerErrors: res.Report.LedgerErrors, ScanSeconds: res.Scan.Took.Seconds(),
		Warnings: snapshotWarnings(res.ReadErrors, res.Report, r)}
	if doc.UnusedRules == nil {
		doc.UnusedRules = []string{}
	}
	if doc.UnusedIncludes == nil {
		doc.UnusedIncludes = []string{}
	}
	for i, c := range r.Candidates.All() {
		cj := PlanCandidate{Order: i + 1, Action: c.Action.String(), Topic: c.Topic, ML: c.ML, LedgerID: c.LedgerID,
			Entries: c.Entries, Bytes: c.Size, Rule: c.Rule, Trigger: string(c.Trigger), Reason: c.Reason(),
			ClosedAt: c.ClosedAt.UTC(), BlockSize: c.Settings.BlockSize, Verify: c.Settings.Verify,
			DeletionLag: c.Settings.DeletionLag.String()}
		if !c.OffloadedAt.IsZero() {
			t := c.OffloadedAt.UTC()
			cj.OffloadedAt = &t
		}
		doc.Candidates = append(doc.Candidates, cj)
		if c.Action == policy.ActionTrim {
			doc.Totals.TrimLedgers++
			doc.Totals.TrimBytes += c.Size
		} else {
			doc.Totals.OffloadLedgers++
			doc.Totals.OffloadBytes += c.Size
		}
	}
	for _, t := range r.Topics {
		tj := PlanTopic{Topic: t.Topic, Rule: t.Rule, Excluded: t.Excluded, ExcludedWhy: t.ExcludedWhy, Refused: t.Refused, Held: t.Held,
			BKBytes: t.BKBytes, OffloadedBytes: t.OffloadedBytes,
			EligibleBytes: t.EligibleBytes, EligibleLedgers: t.EligibleLedgers, TrimBytes: t.TrimBytes}
		if !t.OldestEligible.IsZero() {
			o := t.OldestEligible.UTC()
			tj.OldestEligible = &o
		}
		doc.Topics = append(doc.Topics, tj)
		doc.Totals.Topics++
		if t.Excluded {
			doc.Totals.Excluded++
		}
		if t.Refused != "" {
			doc.Totals.Refused++
		}
		if t.Held != "" {
			doc.Totals.Held++
		}
	}
	return doc
}
