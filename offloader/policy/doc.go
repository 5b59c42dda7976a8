// Package policy decides which ledgers the offload service works on next,
// and why. It is pure: Evaluate takes a snapshot of the managed ledgers
// (plus bookie disk usage and Pulsar namespace policies) and the time, and
// returns candidates; no I/O, no clock, no randomness.
//
// # Rules
//
// Rules are matched per topic, in order; the first whose Match patterns
// match the topic decides, else the Default rule. A pattern is
// "tenant/namespace/topic" (each part a path.Match glob, so "*" never
// crosses a "/"), "tenant/namespace" (every topic of the namespace) or
// "tenant" (every topic of the tenant); a leading "persistent://" is
// ignored; v1 names have four parts (tenant/cluster/namespace/topic). A
// partition ("orders-partition-3") matches patterns for itself and for its
// partitioned topic ("orders"). Include and Exclude filter every topic
// before the rules: a topic is considered when it matches an Include
// pattern (or Include is empty) and no Exclude pattern.
//
// # Triggers (what makes a ledger a candidate)
//
// Only closed ledgers count: never the last ledger of a managed ledger (the
// broker replaces it on reopen), never one with no entries or size 0. A
// ledger that is not offloaded yet (state bookkeeper, or offloading: an
// attempt recorded but not complete, which the pipeline resumes) becomes an
// offload candidate when any trigger of its rule fires:
//
//   - age: now − close time ≥ After (After < 0: off; 0: every closed ledger);
//   - bytes: walking the closed ledgers newest → oldest and summing their
//     sizes, the sum including this ledger exceeds KeepBytes (Pulsar's
//     size-threshold semantics; < 0: off);
//   - ledgers: more than KeepLedgers closed ledgers are newer or this one
//     (< 0: off);
//   - pressure: one of the ledger's replicas is on a bookie whose ledger
//     disks are at or above Pressure.Threshold, and the ledger is at least
//     Pressure.MinAge old (rule field Pressure false: off).
//
// # Topics that are never candidates
//
// Pulsar's system topics (SystemTopic) and the topics the broker offloads
// by itself (BrokerOffload: an effective offload threshold ≥ 0 from the
// topic's, the namespace's or the broker's settings, settings that cannot
// be read, or an unfinished attempt tierkeeper did not record): the
// broker's offloader works from its in-memory view and deletes the objects
// of an attempt tierkeeper committed meanwhile. TopicPlan.ExcludedWhy and
// TopicPlan.Refused say why.
//
// With Pulsar namespace policies enabled (Snapshot.Namespaces holds the
// parsed /admin/policies/<tenant>/<namespace>), a namespace whose policies
// set a deletion lag replaces the rule's (a threshold there makes the
// topic the broker's, above); the rule still gives the triggers, block
// size, verify level and pressure.
//
// # Reload bound
//
// With Rules.MinReloadInterval, a topic whose newest offload by tierkeeper
// committed less than that long ago has its offload and trim candidates
// held (still counted as lag; TopicPlan.Held says until when), except
// pressure candidates, so one job takes what became due meanwhile.
//
// An offloaded ledger whose BookKeeper copy still exists becomes a trim
// candidate when its rule's DeletionLag is a duration and now − offload
// time ≥ that lag. DeletionLag "broker" leaves the deletion to the broker's
// own lag (managedLedgerOffloadDeletionLagMs); "never" keeps it.
//
// # Order
//
// Pressure candidates first (fullest bookie first), then oldest closed
// first; trims come after offloads, oldest offload first. Ties break by
// managed-ledger name and ledger id, so the order is deterministic.
package policy
