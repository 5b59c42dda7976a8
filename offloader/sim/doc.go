// Package sim is a deterministic simulation of the offload protocol: the
// real pipeline (offloader/pipeline), the real scheduler and the real
// topic leases (offloader) run as 1–3 service replicas and as
// `offloader offload` CLI runs, on simulated parts — a ZooKeeper server
// (versions, compare-and-set, ephemeral nodes per session, session
// expiry, atomic multi), BookKeeper (ledger metadata, entries,
// compare-and-delete), the bucket (offloader/blob/memblob behind a yield
// point per request) and a model of the owning Pulsar 4.0.8 broker (see
// brokerModel) with producers acknowledging entries — the real
// managed-ledger store (pulsar/mledger) runs over the simulated
// ZooKeeper.
//
// # Determinism
//
// One actor proceeds at a time. Every request an actor makes (each
// ZooKeeper call, store request, BookKeeper read or delete, broker admin
// call, and every pipeline failpoint) is a yield point: the calling
// goroutine waits until the driver grants it. The driver waits until every
// goroutine of the run is blocked (synctest.Wait, so Run must be called
// inside a testing/synctest bubble, whose fake clock also makes every
// timer, ticker and timeout of the real code simulated time), then picks
// the next decision with a seeded random source: grant one pending
// request (possibly losing it or its answer, crashing the process at a
// failpoint, or failing the failpoint's step), advance the clock, a broker
// action (produce, rollover, its own offload step, trim, unload), offer
// the policy's candidates to a replica, expire a replica's session,
// partition it from ZooKeeper or heal it, restart a crashed replica, start
// a CLI run. An event that would wake several processes at once is
// split: expired sessions and failed calls of a crashed process are ended
// one at a time, with the run quiescent in between, and lines that woken
// goroutines trace outside a granted request are written once the run is
// quiescent, by actor. The same seed gives the same trace; UUIDs are
// printed by order of appearance (U1, U2, ...).
//
// # Invariants
//
// After every decision, on the stored state:
//
//   - complete-context-has-objects: every complete offload context names
//     objects that exist in its bucket, whose index describes the ledger
//     (entries, length) and whose data object has the index's length;
//   - acknowledged-entries-stay-readable: every entry acknowledged to a
//     producer is in BookKeeper, or its ledger is complete in the store;
//
// and as things happen:
//
//   - bk-deleted-only-when-verified: when a BookKeeper ledger is deleted
//     (by a replica, the CLI or the broker) its stored context is complete
//     and its objects whole;
//   - one-replica-writes-a-topic: a replica changes the managed ledger
//     only while its session owns the topic's lease node.
//
// A violation stops the run; Shrink replays its decisions with parts left
// out (delta debugging) and with fewer actors to find a shorter schedule
// that breaks the same invariant.
package sim
