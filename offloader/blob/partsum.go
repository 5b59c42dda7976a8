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

// PartCRC32CUser is implemented by stores (and store wrappers) that say
// whether their UploadPart uses the part CRC-32C a context carries
// (WithPartCRC32C). A wrapper answers for the store it wraps.
type PartCRC32CUser interface {
	// UsesPartCRC32C reports whether UploadPart sends or checks a part
	// CRC-32C given with WithPartCRC32C (S3 with checksum crc32c, memblob);
	// false when it checks parts another way (Content-MD5, COS's CRC-64,
	// a file system) and ignores it.
	UsesPartCRC32C() bool
}

// UsesPartCRC32C reports whether w uses a part CRC-32C given with
// UploadPart: what w says (PartCRC32CUser), else true, so a caller that
// cannot tell computes it, as for a store that needs it. A caller for
// which it is false need not compute block CRCs at all
// (format.EncoderOptions.NoCRC32C).
func UsesPartCRC32C(w Writer) bool {
	if u, ok := w.(PartCRC32CUser); ok {
		return u.UsesPartCRC32C()
	}
	return true
}
