// Package mledger reads and updates Apache Pulsar's managed-ledger metadata in
// ZooKeeper: the ManagedLedgerInfo protobuf at /managed-ledgers/<ml name>
// that lists a topic's BookKeeper ledgers and, per ledger, the
// OffloadContext that tells the broker a ledger lives in tiered storage.
//
// # Names
//
// A persistent topic's managed-ledger name is
// tenant/namespace/persistent/<local name encoded like Java's URLEncoder>
// (legacy v1: tenant/cluster/namespace/persistent/...). EncodeName and
// DecodeName reproduce java.net.URLEncoder/URLDecoder with UTF-8, which
// differ from Go's url.QueryEscape ('*' kept, '~' escaped). ParseTopic,
// TopicName.MLName and ParseMLName convert between topic and managed-ledger
// names; each partition of a partitioned topic is its own managed ledger.
// Store.List walks tenants, namespaces and their "persistent" domain nodes;
// the children of a managed-ledger node are its cursors, never listed.
//
// # Values
//
// Decode reads plain protobuf (a 0-byte node is an empty info) and the
// compression wrapper brokers write with managedLedgerInfoCompressionType
// LZ4, ZLIB, ZSTD or SNAPPY (layout in codec.go), bounded by
// Limits.MaxDecompressedBytes. Encode writes plain by default: every broker
// reads plain whatever its compression setting, and rewrites with its own
// setting on its next write. Options.PreserveCodec keeps a compressed node
// compressed with the same codec, for operators who rely on compression to
// stay under ZooKeeper's jute.maxbuffer; Options.WriteCodec with
// CompressThresholdBytes (16 KiB default, as the broker) mirrors the
// broker's own policy. A value that would exceed ZooKeeper's jute.maxbuffer
// plain keeps its stored compression (Options.MaxValueBytes). Unknown
// protobuf fields (from newer brokers) survive a read-modify-write.
//
// # Updates
//
// Store.UpdateOffloadContext changes one ledger's OffloadContext with a
// compare-and-set on the znode version and keeps every other field,
// retrying on BadVersion by re-reading and re-applying (bounded, with
// backoff, honouring ctx). It refuses the last ledger, which the broker
// replaces when it reopens the managed ledger. PrepareOffload,
// CompleteOffload and MarkBookkeeperDeleted are the idempotent steps of
// the offload state machine on top of it. Store.UpdateOffloadContexts
// applies edits of several ledgers (PrepareEdit, CompleteEdit,
// MarkBookkeeperDeletedEdit, AbandonEdit) in one compare-and-set, each
// re-applied to its own ledger only after a lost race and refused on its
// own: one write per step of a topic instead of one per ledger, so a broker
// writing the same znode meets fewer BadVersion failures.
//
// # Caveats
//
// The broker caches the info it read at open and does not watch the node:
// after an external write its next write fails with BadVersion, the managed
// ledger is fenced and the topic reloads. Unload the topic after a commit
// (docs/design.md invariant 6) to make the change visible at once.
//
// go-zookeeper calls have no context; a call outlives a cancelled ctx in
// the background until ZooKeeper answers or the connection drops. If a Set
// fails with a connection error its outcome is unknown; the helpers are
// idempotent, so call them again.
package mledger
