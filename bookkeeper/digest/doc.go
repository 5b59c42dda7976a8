// Package digest computes and verifies the per-entry digests that BookKeeper
// clients attach to every entry they write, and decodes the 32-byte header
// those digests cover.
//
// # Stored entry layout
//
// A bookie returns an entry exactly as the writer sent it (all integers
// big-endian):
//
//	 0               8               16              24              32
//	+---------------+---------------+---------------+---------------+--------+-------------+
//	|   ledgerId    |    entryId    | lastAddConfirm|    length     | digest | payload ... |
//	|    int64      |     int64     |  int64 (-1 ok)| int64 cumul.  | D bytes|             |
//	+---------------+---------------+---------------+---------------+--------+-------------+
//
// length is the cumulative ledger payload length including this entry.
// The digest covers bytes [0,32) followed by the payload (the digest bytes
// themselves excluded). It is computed per entry from a fresh state:
//
//	type    D   algorithm
//	CRC32   8   IEEE CRC-32 as a big-endian int64 (top 4 bytes zero)
//	CRC32C  4   CRC-32C (Castagnoli) as a big-endian uint32
//	HMAC   20   HMAC-SHA1, key = SHA1("mac" || password)
//	DUMMY   0   none
//
// A Digester checks the digest and then that the header names the ledger and
// entry that were asked for, as BookKeeper's DigestManager does.
package digest
