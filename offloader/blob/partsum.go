package blob

import "context"

type partCRC32CKey struct{}

// WithPartCRC32C returns ctx carrying the CRC-32C of the part an
// UploadPart called with it uploads, computed by the caller from pieces it
// had already checked (an offload's block: the bookies' verified entry
// CRCs and the block's own headers and padding, see format.Block.CRC32C).
// A store that sends a CRC-32C with its parts (S3 with checksum crc32c)
// sends this one instead of hashing the part again; its server verifies it
// against the bytes it received and refuses a mismatch (ErrBadDigest), so
// a wrong value fails the upload, it does not store wrong bytes. Stores
// that check parts another way ignore it. Parts.SendSummed sets it.
func WithPartCRC32C(ctx context.Context, crc uint32) context.Context {
	return context.WithValue(ctx, partCRC32CKey{}, crc)
}

// PartCRC32C is the part CRC-32C ctx carries (WithPartCRC32C), if any.
func PartCRC32C(ctx context.Context) (uint32, bool) {
	crc, ok := ctx.Value(partCRC32CKey{}).(uint32)
	return crc, ok
}
