// Package pipeline moves one BookKeeper ledger of a Pulsar managed ledger to
// the object store and switches the managed-ledger metadata over, so stock
// brokers read it from there. It is a state machine whose state is the
// ledger's stored OffloadContext: a process killed at any instant resumes
// from ZooKeeper alone.
//
// # Steps
//
//	select   the ledger is closed in BookKeeper, not the last ledger, has
//	         entries, and its LedgerInfo agrees with the BookKeeper
//	         metadata (entries = lastEntryId+1, size = length)
//	prepare  CAS: a fresh attempt UUID and the driver metadata, complete
//	         unset, before any upload (docs/design.md invariant 4); the objects of a
//	         previous unfinished attempt are deleted (or, when that fails,
//	         listed in LedgerResult.Leftovers for the sweeper)
//	copy     entries streamed from the bookies (digest-checked, never
//	         fencing) into the block encoder and a multipart upload; reads
//	         and uploads overlap, memory is bounded by the parts in flight
//	verify   sizes, object metadata, index bytes, every block header, and
//	         entry by entry against what was read from BookKeeper (a CRC-32C
//	         and length per entry kept during the copy): all entries for
//	         ledgers up to Options.FullVerifyBytes (unless
//	         Options.AlwaysSample), otherwise three windows
//	         of about one block each (start, a random place, end)
//	commit   CAS: complete=true and the timestamp; on BadVersion re-read and
//	         re-apply to this ledger only; a different stored UUID is a
//	         conflict and is never overwritten (docs/design.md invariants 2 and 3)
//	trim     optional, after the deletion lag: CAS bookkeeperDeleted=true
//	         (docs/design.md invariant 5); after the reload, compare-and-delete the
//	         BookKeeper ledger
//	reload   unload the topic through the broker admin API and check in the
//	         broker's internalStats that it now serves the ledger from the
//	         object store (docs/design.md invariant 6)
//
// RunTopic runs the steps per topic, not per ledger: it selects all the
// given ledgers from one read of the managed ledger, prepares them in one
// compare-and-set, copies and verifies them one after the other, commits
// every verified one in one compare-and-set (with the bookkeeperDeleted
// mark when the deletion lag is zero; a failed copy's prepare is undone in
// the same write), marks the older complete ones whose lag has passed in
// one more, reloads the topic once, then deletes the marked BookKeeper
// ledgers. The broker writes the same znode at every ledger rollover and
// fences its managed ledger when a write meets an outside version: one
// write per step instead of one per ledger keeps its producers from
// stalling (Options.BatchBytes bounds the bytes copied between two
// writes). A conflict or refusal of one ledger does not stop the others.
// Run does the same for one ledger. Each step starts from what the stored
// state says:
//
//	stored state                          next step
//	no OffloadContext / no UUID           prepare a new attempt
//	UUID U, not complete, objects of U    verify U's objects against the
//	  present and whole                     bookies and commit U (a crash
//	                                        after the upload loses no work)
//	UUID U, not complete, otherwise       prepare a new attempt (U's
//	                                        objects are removed)
//	complete                              reload, then trim when asked
//	complete, bookkeeperDeleted           delete the BookKeeper ledger if it
//	                                        is still there
//
// # Failpoints
//
// Between every two steps (and once in the middle of the copy) the pipeline
// calls Failpoints.Hit with the failpoint's name (FailpointNames); tests
// inject errors there, and a real process takes them from the environment
// (ParseFailpoints, e.g. TIERKEEPER_FAILPOINTS="after-copy=kill" makes the
// process SIGKILL itself right after the upload). After a write for
// several ledgers (prepare, commit, mark) its failpoint is hit once per
// ledger, right after the write.
//
// # Without a broker admin URL
//
// The commit is still safe: a broker that has the topic loaded keeps
// reading the ledger from BookKeeper (its cached metadata says so) until it
// reloads the topic, which happens on its next write to the managed-ledger
// znode (the ledger rollover) — that write fails on the version the commit
// bumped, the broker fences and reopens the managed ledger with the new
// metadata. Trimming then has to wait until the broker has reloaded, so
// Options.Trim without a Broker is refused unless TrimWithoutReload is set.
//
// # Trim and the broker's own deletion lag
//
// A broker with an offload driver configured deletes the BookKeeper copy of
// offloaded ledgers itself, managedLedgerOffloadDeletionLagMs (default 4 h)
// after OffloadContext.timestamp, on its periodic retention check, for
// ledgers before the slowest cursor. Both deleters use the same
// bookkeeperDeleted flag first and treat "no such ledger" as done, so
// whichever lag ends first wins and nothing is deleted twice. To leave
// deletion to the broker, do not enable Trim; to have only tierkeeper
// delete, set the broker's lag longer than the pipeline's.
package pipeline
