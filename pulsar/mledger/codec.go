package mledger

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
)

// A managed-ledger znode holds either a plain binary ManagedLedgerInfo
// protobuf (possibly 0 bytes: an empty info) or, when the broker's
// managedLedgerInfoCompressionType is not NONE and the serialized info is
// larger than managedLedgerInfoCompressionThresholdInBytes (PIP-270, 3.1+;
// before that always), this wrapper (MetaStoreImpl.compressManagedInfo):
//
//	 0      2               6                   6+M
//	 +------+---------------+-------------------+------------------------------+
//	 | 47 78| M, uint32 BE  | ManagedLedgerInfo | codec(ManagedLedgerInfo)     |
//	 | magic|               | Metadata, M bytes | to the end of the value      |
//	 +------+---------------+-------------------+------------------------------+
//
//	ManagedLedgerInfoMetadata { 1 compressionType (req), 2 uncompressedSize int32 (req) }
//
// The codecs are Pulsar's message codecs (pulsar-common CompressionCodec*):
//
//	LZ4     raw LZ4 block (airlift Lz4Compressor), no frame, no size prefix
//	ZLIB    zlib stream (RFC 1950) from java.util.zip.Deflater with
//	        SYNC_FLUSH and no finish(): usually no final block, no Adler-32
//	ZSTD    zstd frame (zstd-jni Zstd.compress)
//	SNAPPY  raw Snappy block with its varint length (airlift), not framed
//
// The broker's reader checks the magic, and on any wrapper error falls back
// to parsing the whole value as plain protobuf. That fallback can never
// succeed (0x47 is a field tag with the invalid wire type 7), so Decode
// reports the wrapper error instead. A plain ManagedLedgerInfo never starts
// with 0x47 for the same reason, so the magic is unambiguous.

// wrapperMagic is MetaStoreImpl.MAGIC_MANAGED_INFO_METADATA.
const wrapperMagic = 0x4778

// wrapperHeaderLen is the magic plus the metadata length.
const wrapperHeaderLen = 6

// DefaultMaxDecompressedBytes is the default Limits.MaxDecompressedBytes.
// ZooKeeper's default jute.maxbuffer keeps a znode under 1 MiB; even a
// well-compressed info with hundreds of thousands of ledgers stays below this.
const DefaultMaxDecompressedBytes = 64 << 20

// DefaultCompressThresholdBytes is the broker's default
// managedLedgerInfoCompressionThresholdInBytes (16 KiB).
const DefaultCompressThresholdBytes = 16 << 10

// Limits bound what decoding may allocate.
type Limits struct {
	// MaxDecompressedBytes is the largest uncompressedSize a compression
	// wrapper may declare, and the most any codec may produce. Larger
	// values fail with ErrTooLarge before anything of that size is
	// allocated. Zero means DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int
}

func (l Limits) max() int {
	if l.MaxDecompressedBytes <= 0 {
		return DefaultMaxDecompressedBytes
	}
	return l.MaxDecompressedBytes
}

// Decode parses a managed-ledger znode value: plain protobuf (0 bytes = an
// empty ManagedLedgerInfo) or the compression wrapper with any of the four
// codecs. It returns the codec the value was stored with (NONE for plain).
// Unknown protobuf fields are kept and survive Encode. Errors wrap
// ErrCorrupt or ErrTooLarge; Decode never panics.
func Decode(data []byte, lim Limits) (*mlproto.ManagedLedgerInfo, mlproto.CompressionType, error) {
	if len(data) >= 2 && binary.BigEndian.Uint16(data) == wrapperMagic {
		codec, raw, err := unwrap(data, lim)
		if err != nil {
			return nil, codec, err
		}
		info, err := unmarshalInfo(raw)
		if err != nil {
			return nil, codec, fmt.Errorf("%w: %s-compressed ManagedLedgerInfo: %v", ErrCorrupt, codec, err)
		}
		return info, codec, nil
	}
	info, err := unmarshalInfo(data)
	if err != nil {
		return nil, mlproto.CompressionType_NONE, fmt.Errorf("%w: ManagedLedgerInfo: %v", ErrCorrupt, err)
	}
	return info, mlproto.CompressionType_NONE, nil
}

func unmarshalInfo(b []byte) (*mlproto.ManagedLedgerInfo, error) {
	info := &mlproto.ManagedLedgerInfo{}
	// Default options: required fields are checked (as protobuf-java and
	// LightProto do) and unknown fields are kept.
	if err := proto.Unmarshal(b, info); err != nil {
		return nil, err
	}
	return info, nil
}

// Unwrap decodes the compression wrapper of a znode value and returns the
// codec and the decompressed ManagedLedgerInfo bytes. A value without the
// magic is returned as is with codec NONE.
func Unwrap(data []byte, lim Limits) (mlproto.CompressionType, []byte, error) {
	if len(data) < 2 || binary.BigEndian.Uint16(data) != wrapperMagic {
		return mlproto.CompressionType_NONE, data, nil
	}
	return unwrap(data, lim)
}

func unwrap(data []byte, lim Limits) (mlproto.CompressionType, []byte, error) {
	none := mlproto.CompressionType_NONE
	if len(data) < wrapperHeaderLen {
		return none, nil, fmt.Errorf("%w: compression wrapper: %d bytes, header needs %d", ErrCorrupt, len(data), wrapperHeaderLen)
	}
	mlen := binary.BigEndian.Uint32(data[2:6])
	if uint64(mlen) > uint64(len(data)-wrapperHeaderLen) {
		return none, nil, fmt.Errorf("%w: compression wrapper: metadata length %d exceeds the %d bytes left", ErrCorrupt, mlen, len(data)-wrapperHeaderLen)
	}
	meta := &mlproto.ManagedLedgerInfoMetadata{}
	if err := proto.Unmarshal(data[wrapperHeaderLen:wrapperHeaderLen+int(mlen)], meta); err != nil {
		return none, nil, fmt.Errorf("%w: compression wrapper metadata: %v", ErrCorrupt, err)
	}
	codec := meta.GetCompressionType()
	size := int64(meta.GetUncompressedSize())
	payload := data[wrapperHeaderLen+int(mlen):]
	if size < 0 {
		return codec, nil, fmt.Errorf("%w: compression wrapper: negative uncompressedSize %d", ErrCorrupt, size)
	}
	if size > int64(lim.max()) {
		return codec, nil, fmt.Errorf("%w: compression wrapper declares %d bytes, limit %d", ErrTooLarge, size, lim.max())
	}
	raw, err := decompress(codec, payload, int(size), lim)
	if err != nil {
		return codec, nil, err
	}
	return codec, raw, nil
}

// decompress decodes payload, which must expand to exactly size bytes
// (size is already bounded by the caller).
func decompress(codec mlproto.CompressionType, payload []byte, size int, lim Limits) ([]byte, error) {
	switch codec {
	case mlproto.CompressionType_NONE:
		// Pulsar has a NONE codec that copies; a writer never wraps with it,
		// but the reader would accept it.
		if len(payload) != size {
			return nil, fmt.Errorf("%w: NONE wrapper: %d bytes, uncompressedSize %d", ErrCorrupt, len(payload), size)
		}
		return payload, nil
	case mlproto.CompressionType_LZ4:
		// A raw LZ4 block expands at most ~255 times; refuse to allocate for
		// a declared size the payload cannot produce.
		if int64(size) > int64(len(payload))*255+64 {
			return nil, fmt.Errorf("%w: LZ4 block of %d bytes cannot expand to %d", ErrCorrupt, len(payload), size)
		}
		out := make([]byte, size)
		n, err := lz4.UncompressBlock(payload, out)
		if err != nil {
			return nil, fmt.Errorf("%w: LZ4 block: %v", ErrCorrupt, err)
		}
		if n != size {
			return nil, fmt.Errorf("%w: LZ4 block: %d bytes, uncompressedSize %d", ErrCorrupt, n, size)
		}
		return out, nil
	case mlproto.CompressionType_ZLIB:
		return inflate(payload, size)
	case mlproto.CompressionType_ZSTD:
		return unzstd(payload, size, lim)
	case mlproto.CompressionType_SNAPPY:
		n, err := snappy.DecodedLen(payload)
		if err != nil {
			return nil, fmt.Errorf("%w: Snappy block: %v", ErrCorrupt, err)
		}
		if n != size {
			return nil, fmt.Errorf("%w: Snappy block: length %d, uncompressedSize %d", ErrCorrupt, n, size)
		}
		// The densest Snappy element is a 3-byte copy of 64 bytes: refuse
		// to allocate for a length the block cannot produce.
		if int64(size) > int64(len(payload))*snappyMaxRatio {
			return nil, fmt.Errorf("%w: Snappy block of %d bytes cannot expand to %d", ErrCorrupt, len(payload), size)
		}
		out, err := snappy.DecodeStrict(make([]byte, size), payload)
		if err != nil {
			return nil, fmt.Errorf("%w: Snappy block: %v", ErrCorrupt, err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: unknown compression type %d", ErrCorrupt, int32(codec))
	}
}

// inflate reads exactly size bytes from a zlib stream. Java's Deflater
// output with SYNC_FLUSH has no final block and no Adler-32 trailer, so
// the stream may end early (io.ErrUnexpectedEOF after size bytes is fine);
// a stream that has more than size bytes is corrupt, and a complete stream
// must carry a correct checksum.
func inflate(payload []byte, size int) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("%w: ZLIB stream: %v", ErrCorrupt, err)
	}
	defer zr.Close()
	var buf bytes.Buffer
	// Grow with the output actually produced, not with the declared size.
	n, err := io.Copy(&buf, io.LimitReader(zr, int64(size)))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%w: ZLIB stream: %v", ErrCorrupt, err)
	}
	if int(n) != size {
		return nil, fmt.Errorf("%w: ZLIB stream: %d bytes, uncompressedSize %d", ErrCorrupt, n, size)
	}
	var one [1]byte
	m, err := zr.Read(one[:])
	if m > 0 {
		return nil, fmt.Errorf("%w: ZLIB stream longer than uncompressedSize %d", ErrCorrupt, size)
	}
	if err != nil && err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%w: ZLIB stream: %v", ErrCorrupt, err)
	}
	return buf.Bytes(), nil
}

// snappyMaxRatio bounds how much a Snappy block expands: its densest
// element, a copy with a 2-byte offset, is 3 bytes for up to 64 (21.3x).
const snappyMaxRatio = 22

// zstdBlockMax is the zstd Block_Maximum_Size (128 KiB): no block decodes
// to more.
const zstdBlockMax = 128 << 10

// zstdBound walks the frames and block headers of payload without decoding
// anything and returns the most bytes it can decode to: raw and RLE blocks
// state their size, a compressed block yields at most
// min(window, 128 KiB). A truncated or malformed frame is an error. This
// bounds the output by what the input can really produce, so a tiny input
// claiming a large uncompressedSize allocates nothing.
func zstdBound(payload []byte) (int64, error) {
	var total int64
	for in := payload; len(in) > 0; {
		var h zstd.Header
		rest, err := h.DecodeAndStrip(in)
		if err != nil {
			return 0, fmt.Errorf("frame header: %w", err)
		}
		if h.Skippable {
			if uint64(len(rest)) < uint64(h.SkippableSize) {
				return 0, fmt.Errorf("skippable frame of %d bytes: %w", h.SkippableSize, io.ErrUnexpectedEOF)
			}
			in = rest[h.SkippableSize:]
			continue
		}
		blockMax := int64(zstdBlockMax)
		if !h.SingleSegment {
			blockMax = min(blockMax, int64(h.WindowSize))
		} else if h.HasFCS {
			blockMax = min(blockMax, int64(min(h.FrameContentSize, zstdBlockMax)))
		}
		for last := false; !last; {
			if len(rest) < 3 {
				return 0, fmt.Errorf("block header: %w", io.ErrUnexpectedEOF)
			}
			bh := uint32(rest[0]) | uint32(rest[1])<<8 | uint32(rest[2])<<16
			rest = rest[3:]
			last = bh&1 != 0
			n := int64(bh >> 3)
			var used int64
			switch (bh >> 1) & 3 {
			case 0: // raw
				used = n
			case 1: // RLE: one byte repeated n times
				used = 1
			case 2: // compressed: n bytes in, at most blockMax out
				used, n = n, blockMax
			default:
				return 0, errors.New("reserved block type")
			}
			if n > zstdBlockMax {
				return 0, fmt.Errorf("block of %d bytes exceeds the %d-byte maximum", n, zstdBlockMax)
			}
			if int64(len(rest)) < used {
				return 0, fmt.Errorf("block of %d bytes: %w", used, io.ErrUnexpectedEOF)
			}
			rest = rest[used:]
			total += n
		}
		if h.HasCheckSum {
			if len(rest) < 4 {
				return 0, fmt.Errorf("content checksum: %w", io.ErrUnexpectedEOF)
			}
			rest = rest[4:]
		}
		in = rest
	}
	return total, nil
}

func unzstd(payload []byte, size int, lim Limits) ([]byte, error) {
	// Refuse a first frame whose header announces another size, or frames
	// that cannot produce size bytes, before allocating anything for them.
	var h zstd.Header
	if err := h.Decode(payload); err != nil {
		return nil, fmt.Errorf("%w: ZSTD frame header: %v", ErrCorrupt, err)
	}
	if h.HasFCS && h.FrameContentSize > uint64(size) {
		return nil, fmt.Errorf("%w: ZSTD frame of %d bytes, uncompressedSize %d", ErrCorrupt, h.FrameContentSize, size)
	}
	bound, err := zstdBound(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: ZSTD frame: %v", ErrCorrupt, err)
	}
	if int64(size) > bound {
		return nil, fmt.Errorf("%w: ZSTD frames of %d bytes produce at most %d bytes, uncompressedSize %d", ErrCorrupt, len(payload), bound, size)
	}
	// The output is capped at size (DecodeAllCapLimit with cap(dst) = size,
	// now known to be producible) and the window (history) at the limit;
	// zstd-jni's frames need no more than their content size.
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(uint64(lim.max())),
		zstd.WithDecoderMaxWindow(max(uint64(lim.max()), zstd.MinWindowSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	defer dec.Close()
	out, err := dec.DecodeAll(payload, make([]byte, 0, size))
	if errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, fmt.Errorf("%w: ZSTD frame: %v (limit %d)", ErrTooLarge, err, lim.max())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: ZSTD frame: %v", ErrCorrupt, err)
	}
	if len(out) != size {
		return nil, fmt.Errorf("%w: ZSTD frame: %d bytes, uncompressedSize %d", ErrCorrupt, len(out), size)
	}
	return out, nil
}

// EncodeOptions choose how Encode stores a ManagedLedgerInfo.
type EncodeOptions struct {
	// Codec is the compression codec. NONE (the zero value) writes plain
	// protobuf, which every broker reads whatever its own setting.
	Codec mlproto.CompressionType
	// ThresholdBytes: with a codec, wrap only when the serialized info is
	// larger than this many bytes, like the broker's
	// managedLedgerInfoCompressionThresholdInBytes (0 = always wrap).
	ThresholdBytes int64
}

// Encode serializes info as a znode value: plain protobuf, or the
// compression wrapper when opts asks for a codec and the serialized size
// exceeds opts.ThresholdBytes. Unknown fields read by Decode are written
// back unchanged. It fails if a required field is missing.
func Encode(info *mlproto.ManagedLedgerInfo, opts EncodeOptions) ([]byte, error) {
	raw, err := proto.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("marshal ManagedLedgerInfo: %w", err)
	}
	if opts.Codec == mlproto.CompressionType_NONE || int64(len(raw)) <= opts.ThresholdBytes {
		return raw, nil
	}
	return Wrap(raw, opts.Codec)
}

// Wrap compresses serialized ManagedLedgerInfo bytes with codec and adds the
// wrapper header, byte-compatible with MetaStoreImpl.compressManagedInfo.
func Wrap(raw []byte, codec mlproto.CompressionType) ([]byte, error) {
	if len(raw) > 1<<31-1 {
		return nil, fmt.Errorf("%w: %d bytes do not fit uncompressedSize (int32)", ErrTooLarge, len(raw))
	}
	var payload []byte
	switch codec {
	case mlproto.CompressionType_LZ4:
		dst := make([]byte, lz4.CompressBlockBound(len(raw)))
		var c lz4.Compressor
		n, err := c.CompressBlock(raw, dst)
		if err != nil {
			return nil, fmt.Errorf("lz4 compress: %w", err)
		}
		if n == 0 && len(raw) > 0 {
			return nil, errors.New("lz4 compress: no output")
		}
		payload = dst[:n]
	case mlproto.CompressionType_ZLIB:
		var buf bytes.Buffer
		zw := zlib.NewWriter(&buf)
		if _, err := zw.Write(raw); err != nil {
			return nil, fmt.Errorf("zlib compress: %w", err)
		}
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("zlib compress: %w", err)
		}
		payload = buf.Bytes()
	case mlproto.CompressionType_ZSTD:
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd encoder: %w", err)
		}
		payload = enc.EncodeAll(raw, nil)
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("zstd encoder: %w", err)
		}
	case mlproto.CompressionType_SNAPPY:
		payload = snappy.Encode(nil, raw)
	default:
		return nil, fmt.Errorf("wrap: unsupported compression type %s", codec)
	}
	meta, err := proto.Marshal(&mlproto.ManagedLedgerInfoMetadata{
		CompressionType:  codec.Enum(),
		UncompressedSize: proto.Int32(int32(len(raw))),
	})
	if err != nil {
		return nil, fmt.Errorf("marshal wrapper metadata: %w", err)
	}
	out := make([]byte, wrapperHeaderLen, wrapperHeaderLen+len(meta)+len(payload))
	binary.BigEndian.PutUint16(out, wrapperMagic)
	binary.BigEndian.PutUint32(out[2:], uint32(len(meta)))
	out = append(out, meta...)
	out = append(out, payload...)
	return out, nil
}
