// Package metadata reads BookKeeper's ledger metadata from ZooKeeper: the
// ledger-manager layout, the znode path of every ledger id, ledger listing,
// the three metadata formats, bookie address resolution, and
// compare-and-delete of closed ledgers.
//
// # Layout and paths
//
// `<root>/LAYOUT` (root is usually /ledgers) names the ledger manager:
//
//	2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1
//
// and the manager decides where a ledger's znode lives:
//
//	manager             id             path
//	hierarchical        < 2147483647   <root>/00/0000/L0001           (2-4-4 digits of %010d)
//	hierarchical        >= 2147483647  <root>/000/0000/0042/9496/L7296 (3-4-4-4-4 of %019d)
//	longhierarchical    any            long form
//	legacyhierarchical  any            short form
//	flat                any            <root>/L0000000001
//
// # Metadata formats
//
// A ledger znode holds `BookieMetadataFormatVersion\t<v>\n` then:
//
//	v3  varint32 length + binary LedgerMetadataFormat (BookKeeper >= 4.9, Pulsar)
//	v2  protobuf text format of LedgerMetadataFormat
//	v1  lines: writeQuorum, ensembleSize, length, then
//	    "firstEntryId\tbookie\tbookie..." per segment, then optionally
//	    "lastEntryId\tCLOSED" (or "-102\tCLOSED" while in recovery)
//
// v1 carries no digest type or password: the caller supplies them.
//
// # Bookie addresses
//
// A bookie id (an ensemble member) is usually "host:port" but may be any
// name. ResolveBookie reads `<root>/available/<id>`, then
// `<root>/available/readonly/<id>`, and uses the "bookie-rpc" endpoint of the
// BookieServiceInfoFormat protobuf stored there; empty data, or a bookie that
// is registered nowhere, falls back to parsing the id as host:port.
//
// # Deleting
//
// DeleteLedger is a compare-and-delete: it re-reads the ledger, checks that
// it is still CLOSED with the expected lastEntryId and length, and deletes
// the znode at exactly the version it read. A concurrent change (BadVersion)
// makes it re-read and re-check; a missing znode means already deleted.
// Only the metadata znode is removed: bookies reclaim the space by their own
// garbage collection, as with BookKeeper's own deleteLedger.
package metadata
