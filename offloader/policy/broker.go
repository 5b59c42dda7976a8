package policy

import (
	"fmt"
	"time"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Running the broker's own offloader and tierkeeper on one topic loses
// data. A broker holds a managed ledger's ledger list in memory and sees
// tierkeeper's compare-and-set only at its next write or reload. When it
// starts an offload itself (an offload threshold, or an admin "topics
// offload"), ManagedLedgerImpl.prepareLedgerInfoForOffloaded first deletes
// the objects of the attempt its *in-memory* context names
// (cleanupOffloaded), and only then writes; that write fails on the
// version tierkeeper bumped, but the objects of tierkeeper's committed
// attempt are gone, and after the reload the broker's deletion lag removes
// the BookKeeper copy too. So a topic the broker may offload by itself is
// refused: see BrokerOffload.

// BrokerSettings are the broker-level offload thresholds
// (managedLedgerOffloadAutoTriggerSizeThresholdBytes,
// managedLedgerOffloadThresholdInSeconds; ServiceConfiguration, not
// dynamic) as read from the brokers' admin API or as configured.
type BrokerSettings struct {
	ThresholdBytes, ThresholdSeconds int64
	// Source says where they come from (shown in reasons).
	Source string
	// Err is set when they could not be read: every topic is then refused
	// (the broker might offload any of them).
	Err string
}

// TopicPolicy is a topic's own offload policies (topic-level policies, in
// the namespace's __change_events topic, read through the admin API).
type TopicPolicy struct {
	// Policy is nil when the topic has none.
	Policy *NamespacePolicy
	// Err is set when they could not be read (the topic is refused).
	Err string
}

// threshold is one effective broker threshold and where it came from.
type threshold struct {
	v      int64
	source string
}

// pick merges a setting as OffloadPoliciesImpl.mergeConfiguration does:
// topic over namespace over broker.
func pick(topic, ns *int64, broker int64, topicKey, nsKey, brokerSrc string) threshold {
	switch {
	case topic != nil:
		return threshold{*topic, "topic offload policy " + topicKey}
	case ns != nil:
		return threshold{*ns, "namespace offload policy " + nsKey}
	}
	return threshold{broker, brokerSrc}
}

// BrokerOffload says why the broker would offload ledgers of topic t by
// itself (so tierkeeper must not), or "" when it would not: an effective
// size or age threshold ≥ 0 (ManagedLedgerImpl.maybeOffloadInBackground
// offloads then), its settings unreadable, or a ledger whose unfinished
// offload attempt tierkeeper did not record (the broker's offloader is at
// work on the topic, or was interrupted there).
//
// Snapshot.Broker nil skips the broker-level thresholds: the service and
// plan always set it.
func BrokerOffload(t Topic, snap Snapshot) string {
	ns := t.Topic.NamespacePath()
	if e := snap.NamespaceErrors[ns]; e != "" {
		return "the namespace's offload policies cannot be read (" + e + "); the broker might offload the topic itself"
	}
	base := t.Topic.PartitionedTopic().String()
	tp := snap.TopicPolicies[base]
	if tp.Err != "" {
		return "the topic's offload policies cannot be read (" + tp.Err + "); the broker might offload the topic itself"
	}
	bs := snap.Broker
	if bs == nil {
		bs = &BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: -1, Source: "not looked up"}
	}
	if bs.Err != "" {
		return "the broker's offload settings cannot be read (" + bs.Err + "); the broker might offload any topic itself"
	}
	var tb, ts *int64
	if tp.Policy != nil {
		tb, ts = tp.Policy.ThresholdBytes, tp.Policy.ThresholdSeconds
	}
	var nb, nsec *int64
	if np := snap.Namespaces[ns]; np != nil {
		nb, nsec = np.ThresholdBytes, np.ThresholdSeconds
	}
	for _, th := range []threshold{
		pick(tb, nb, bs.ThresholdBytes, "managedLedgerOffloadThresholdInBytes", "threshold (bytes)",
			"broker managedLedgerOffloadAutoTriggerSizeThresholdBytes ("+bs.Source+")"),
		pick(ts, nsec, bs.ThresholdSeconds, "managedLedgerOffloadThresholdInSeconds", "threshold (seconds)",
			"broker managedLedgerOffloadThresholdInSeconds ("+bs.Source+")"),
	} {
		if th.v >= 0 {
			return fmt.Sprintf("the broker offloads this topic itself: %s = %d (≥ 0)", th.source, th.v)
		}
	}
	for i, l := range t.Ledgers {
		if i == len(t.Ledgers)-1 {
			break
		}
		if l.State == mledger.StateOffloading && !mledger.OwnAttempt(l.Attempt) {
			return fmt.Sprintf("ledger %d holds an unfinished offload attempt %s that tierkeeper did not record "+
				"(the broker's own offloader is at work on the topic, or was interrupted there)", l.ID, l.Attempt)
		}
	}
	return ""
}

// lastCommit is the newest completion time of an offload tierkeeper
// recorded on t (zero: none): each commit was followed by a reload.
func lastCommit(t Topic) time.Time {
	var last time.Time
	for _, l := range t.Ledgers {
		if !l.OffloadedAt.IsZero() && mledger.OwnAttempt(l.Attempt) && l.OffloadedAt.After(last) {
			last = l.OffloadedAt
		}
	}
	return last
}
