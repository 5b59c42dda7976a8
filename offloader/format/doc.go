// Package format is Pulsar's tiered-storage object format for one
// BookKeeper ledger, as the broker's jcloud offloader writes it
// (BlobStoreManagedLedgerOffloader.offload) and reads it
// (BlobStoreBackedReadHandleImpl): a V1 data object made of blocks and a V1
// index object. Objects written here are read by stock Pulsar brokers, and
// objects written by Pulsar are read here.
//
// # Objects
//
//	<uuid>-ledger-<ledgerId>        data: blocks B1..BN back to back
//	<uuid>-ledger-<ledgerId>-index  index: block table + BK ledger metadata
//
// Both carry user metadata s3managedledgeroffloaderformatversion=1 (checked
// on every read, as Pulsar does), role=data|index, the software version and
// the managed-ledger name (see ObjectInfo). The byte layouts are drawn in
// block.go (data block) and index.go (index).
//
// # Block sizes
//
// Every block but the last is exactly the maximum block size, padded with
// FE DC DE AD; the last block is exactly as long as its records. This is
// Pulsar's rule (BlockAwareSegmentInputStreamImpl.calculateBlockSize), and
// it needs the number of entries and the ledger length before the first
// block is written — both are in the ledger's BookKeeper metadata, which
// an offloader reads anyway (only closed ledgers are offloaded). Following
// it exactly, rather than merely producing some readable layout, makes our
// objects byte-identical to the broker's for the same ledger, which the
// compatibility suite checks byte for byte, and keeps every part but the
// last at the full part size that S3 multipart requires. The Encoder
// therefore takes a Ledger{ID, LastEntryID, Length} up front and refuses
// entries that do not add up to it (ErrLengthMismatch) or whose record
// cannot fit in one block (ErrRecordTooLarge; Pulsar would write a broken
// object).
//
// # Streaming and memory
//
// The Encoder holds one block buffer at a time, taken from a BufferSource
// (Pool bounds how many exist), and hands finished blocks to a callback;
// package upload turns them into multipart parts. Memory is O(blocks in
// flight × block size), independent of the ledger size.
//
// # Reading
//
// Reader opens the index once (one GET), then serves entry ranges from
// ranged GETs of the data object, each bounded by the end of the block
// holding the last entry asked for (a random entry costs at most its
// block), keeping the stream open with a read-ahead buffer for sequential
// reads and remembering record offsets for random ones. Everything read is
// checked: every block header against the index (block 0's too), lengths
// bounded by the enclosing block before allocation, entry ids in sequence,
// padding bytes, and the object's size against dataObjectLength.
package format
