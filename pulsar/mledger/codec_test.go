package mledger

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/allocs"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
)

var allCodecs = []mlproto.CompressionType{
	mlproto.CompressionType_LZ4, mlproto.CompressionType_ZLIB,
	mlproto.CompressionType_ZSTD, mlproto.CompressionType_SNAPPY,
}

// wrapRaw builds a wrapper by hand: magic, metadata length, metadata,
// payload, independently of Wrap.
func wrapRaw(codec mlproto.CompressionType, size int32, payload []byte) []byte {
	meta := mustMarshal(&mlproto.ManagedLedgerInfoMetadata{CompressionType: codec.Enum(), UncompressedSize: proto.Int32(size)})
	out := []byte{0x47, 0x78, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[2:], uint32(len(meta)))
	out = append(out, meta...)
	return append(out, payload...)
}

func TestDecodePlainAndEmpty(t *testing.T) {
	info, codec, err := Decode(nil, Limits{})
	if err != nil || codec != mlproto.CompressionType_NONE || len(info.GetLedgerInfo()) != 0 || info.TerminatedPosition != nil {
		t.Fatalf("Decode(0 bytes) = %v, %v, %v; want empty info", info, codec, err)
	}
	want := sampleInfo(10, 5)
	raw := mustMarshal(want)
	got, codec, err := Decode(raw, Limits{})
	if err != nil || codec != mlproto.CompressionType_NONE || !proto.Equal(got, want) {
		t.Fatalf("Decode(plain) = %v, %v, %v", got, codec, err)
	}
	// Plain encoding is the default, and byte-identical to proto.Marshal.
	enc, err := Encode(got, EncodeOptions{})
	if err != nil || !bytes.Equal(enc, raw) {
		t.Fatalf("Encode(plain) differs from the input: %v", err)
	}
}

// Each codec, compressed with the library Pulsar-compatible Go code uses,
// wrapped by Wrap and by hand, decodes to the same info.
func TestWrapperAllCodecs(t *testing.T) {
	want := sampleInfo(100, 50)
	raw := mustMarshal(want)
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			data, err := Encode(want, EncodeOptions{Codec: codec})
			if err != nil {
				t.Fatal(err)
			}
			if data[0] != 0x47 || data[1] != 0x78 {
				t.Fatalf("no magic: % x", data[:2])
			}
			mlen := binary.BigEndian.Uint32(data[2:6])
			meta := &mlproto.ManagedLedgerInfoMetadata{}
			if err := proto.Unmarshal(data[6:6+mlen], meta); err != nil {
				t.Fatal(err)
			}
			if meta.GetCompressionType() != codec || int(meta.GetUncompressedSize()) != len(raw) {
				t.Fatalf("metadata = %v, want %s/%d", meta, codec, len(raw))
			}
			if len(data) >= len(raw) {
				t.Errorf("%s: %d bytes wrapped, %d plain: not compressed", codec, len(data), len(raw))
			}
			got, gotCodec, err := Decode(data, Limits{})
			if err != nil || gotCodec != codec || !proto.Equal(got, want) {
				t.Fatalf("Decode = %v, %v", gotCodec, err)
			}
			c, unwrapped, err := Unwrap(data, Limits{})
			if err != nil || c != codec || !bytes.Equal(unwrapped, raw) {
				t.Fatalf("Unwrap = %v, %v", c, err)
			}
		})
	}
}

// Payloads produced directly by each library (not through Wrap), in the
// forms Pulsar's Java codecs produce.
func TestWrapperIndependentPayloads(t *testing.T) {
	want := sampleInfo(7, 30)
	raw := mustMarshal(want)

	lz := make([]byte, lz4.CompressBlockBound(len(raw)))
	n, err := lz4.CompressBlockHC(raw, lz, lz4.Level9, nil, nil)
	if err != nil || n == 0 {
		t.Fatalf("lz4 HC: %d, %v", n, err)
	}

	// java.util.zip.Deflater + SYNC_FLUSH without finish(): no final block,
	// no Adler-32 trailer.
	var zsync bytes.Buffer
	zw := zlib.NewWriter(&zsync)
	zw.Write(raw)
	zw.Flush()

	var zfull bytes.Buffer
	zw2, _ := zlib.NewWriterLevel(&zfull, zlib.BestCompression)
	zw2.Write(raw)
	zw2.Close()

	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	zs := enc.EncodeAll(raw, nil)
	enc.Close()
	// A frame without a content size in its header (streaming writer).
	var zsStream bytes.Buffer
	enc2, _ := zstd.NewWriter(&zsStream, zstd.WithEncoderConcurrency(1))
	enc2.Write(raw)
	enc2.Close()

	cases := []struct {
		name    string
		codec   mlproto.CompressionType
		payload []byte
	}{
		{"lz4-hc", mlproto.CompressionType_LZ4, lz[:n]},
		{"zlib-syncflush", mlproto.CompressionType_ZLIB, zsync.Bytes()},
		{"zlib-finished", mlproto.CompressionType_ZLIB, zfull.Bytes()},
		{"zstd-frame", mlproto.CompressionType_ZSTD, zs},
		{"zstd-stream", mlproto.CompressionType_ZSTD, zsStream.Bytes()},
		{"snappy-block", mlproto.CompressionType_SNAPPY, snappy.Encode(nil, raw)},
		{"none", mlproto.CompressionType_NONE, raw},
	}
	for _, c := range cases {
		got, codec, err := Decode(wrapRaw(c.codec, int32(len(raw)), c.payload), Limits{})
		if err != nil || codec != c.codec || !proto.Equal(got, want) {
			t.Errorf("%s: Decode = %v, %v", c.name, codec, err)
		}
	}
}

// Golden bytes written by hand from the block formats, for a tiny info:
// an LZ4 block of literals only (token = len<<4, literals) and a Snappy
// block (varint length, literal tag (len-1)<<2, literals). This is what any
// compressor emits for inputs too short to hold a match.
func TestWrapperGoldenTinyBlocks(t *testing.T) {
	want := &mlproto.ManagedLedgerInfo{LedgerInfo: []*mlproto.ManagedLedgerInfo_LedgerInfo{{LedgerId: proto.Int64(3)}}}
	raw := mustMarshal(want) // 0a 02 08 03
	if !bytes.Equal(raw, []byte{0x0a, 0x02, 0x08, 0x03}) {
		t.Fatalf("plain = % x", raw)
	}
	golden := map[mlproto.CompressionType][]byte{
		// 47 78 | 00 00 00 04 | 08 01 10 04 | 40 0a 02 08 03
		mlproto.CompressionType_LZ4: {0x47, 0x78, 0, 0, 0, 4, 0x08, 0x01, 0x10, 0x04, 0x40, 0x0a, 0x02, 0x08, 0x03},
		// 47 78 | 00 00 00 04 | 08 04 10 04 | 04 0c 0a 02 08 03
		mlproto.CompressionType_SNAPPY: {0x47, 0x78, 0, 0, 0, 4, 0x08, 0x04, 0x10, 0x04, 0x04, 0x0c, 0x0a, 0x02, 0x08, 0x03},
	}
	for codec, data := range golden {
		got, c, err := Decode(data, Limits{})
		if err != nil || c != codec || !proto.Equal(got, want) {
			t.Errorf("%s golden: %v, %v, %v", codec, got, c, err)
		}
	}
	// Our own LZ4 and Snappy output for this input are exactly those bytes.
	for codec, data := range golden {
		w, err := Wrap(raw, codec)
		if err != nil || !bytes.Equal(w, data) {
			t.Errorf("Wrap(%s) = % x, %v; want % x", codec, w, err, data)
		}
	}
}

func TestEncodeThreshold(t *testing.T) {
	small := sampleInfo(1, 3)
	big := sampleInfo(1, 800)
	if n := len(mustMarshal(big)); n <= DefaultCompressThresholdBytes {
		t.Fatalf("big info is only %d bytes", n)
	}
	for _, c := range []struct {
		info    *mlproto.ManagedLedgerInfo
		opts    EncodeOptions
		wrapped bool
	}{
		{small, EncodeOptions{Codec: mlproto.CompressionType_LZ4, ThresholdBytes: DefaultCompressThresholdBytes}, false},
		{big, EncodeOptions{Codec: mlproto.CompressionType_LZ4, ThresholdBytes: DefaultCompressThresholdBytes}, true},
		{small, EncodeOptions{Codec: mlproto.CompressionType_ZSTD}, true},
		{big, EncodeOptions{}, false},
	} {
		data, err := Encode(c.info, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if wrapped := len(data) > 1 && data[0] == 0x47; wrapped != c.wrapped {
			t.Errorf("Encode(%d ledgers, %+v): wrapped = %v", len(c.info.LedgerInfo), c.opts, wrapped)
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	raw := mustMarshal(sampleInfo(1, 4))
	good := func(c mlproto.CompressionType) []byte {
		w, err := Wrap(raw, c)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	flip := func(b []byte, i int) []byte { b = bytes.Clone(b); b[i] ^= 0xff; return b }
	missingID := protowire.AppendTag(nil, 1, protowire.BytesType)
	missingID = protowire.AppendBytes(missingID, protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 5))
	cases := map[string][]byte{
		"magic only":            {0x47, 0x78},
		"short header":          {0x47, 0x78, 0, 0, 1},
		"metadata length huge":  {0x47, 0x78, 0xff, 0xff, 0xff, 0xff, 1, 2, 3},
		"metadata length over":  {0x47, 0x78, 0, 0, 0, 9, 8, 1, 16, 4},
		"metadata garbage":      {0x47, 0x78, 0, 0, 0, 2, 0xff, 0xff, 1},
		"metadata missing size": append([]byte{0x47, 0x78, 0, 0, 0, 2, 0x08, 0x01}, raw...),
		"unknown codec":         wrapRaw(9, int32(len(raw)), raw),
		"negative size":         wrapRaw(mlproto.CompressionType_LZ4, -1, raw),
		"none size mismatch":    wrapRaw(mlproto.CompressionType_NONE, int32(len(raw)+1), raw),
		"lz4 size too big":      wrapRaw(mlproto.CompressionType_LZ4, int32(len(raw)+1), good(mlproto.CompressionType_LZ4)[12:]),
		"lz4 size too small":    wrapRaw(mlproto.CompressionType_LZ4, int32(len(raw)-1), good(mlproto.CompressionType_LZ4)[12:]),
		"lz4 garbage":           wrapRaw(mlproto.CompressionType_LZ4, int32(len(raw)), []byte{0xff, 0xff, 0xff}),
		"lz4 ratio impossible":  wrapRaw(mlproto.CompressionType_LZ4, 1<<20, []byte{0x10, 0}),
		"zlib size too big":     wrapRaw(mlproto.CompressionType_ZLIB, int32(len(raw)+1), good(mlproto.CompressionType_ZLIB)[12:]),
		"zlib size too small":   wrapRaw(mlproto.CompressionType_ZLIB, int32(len(raw)-1), good(mlproto.CompressionType_ZLIB)[12:]),
		"zlib bad checksum":     flip(good(mlproto.CompressionType_ZLIB), len(good(mlproto.CompressionType_ZLIB))-1),
		"zlib bad header":       flip(good(mlproto.CompressionType_ZLIB), 12),
		"zstd size too big":     wrapRaw(mlproto.CompressionType_ZSTD, int32(len(raw)+1), good(mlproto.CompressionType_ZSTD)[12:]),
		"zstd garbage":          wrapRaw(mlproto.CompressionType_ZSTD, int32(len(raw)), []byte{1, 2, 3, 4, 5, 6, 7, 8}),
		"snappy size mismatch":  wrapRaw(mlproto.CompressionType_SNAPPY, int32(len(raw)+1), good(mlproto.CompressionType_SNAPPY)[12:]),
		"snappy truncated":      wrapRaw(mlproto.CompressionType_SNAPPY, int32(len(raw)), good(mlproto.CompressionType_SNAPPY)[12:20]),
		"inner not protobuf":    wrapRaw(mlproto.CompressionType_NONE, 3, []byte{0xff, 0xff, 0xff}),
		"plain garbage":         {0xff, 0xff, 0xff, 0xff},
		"plain truncated":       raw[:len(raw)-3],
		"ledger without id":     missingID,
		"single byte 0x47":      {0x47},
	}
	for name, data := range cases {
		info, _, err := Decode(data, Limits{})
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decode = %v, %v; want ErrCorrupt", name, info, err)
		}
	}
}

// A decompression bomb fails without allocating what it claims or expands
// to.
func TestDecodeBombBounded(t *testing.T) {
	zeros := make([]byte, 16<<20)
	var zb bytes.Buffer
	zw := zlib.NewWriter(&zb)
	zw.Write(zeros)
	zw.Close()
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	zs := enc.EncodeAll(zeros, nil)
	enc.Close()
	lz := make([]byte, lz4.CompressBlockBound(len(zeros)))
	var c lz4.Compressor
	n, _ := c.CompressBlock(zeros, lz)
	var zsStream bytes.Buffer
	enc2, _ := zstd.NewWriter(&zsStream, zstd.WithEncoderConcurrency(1))
	enc2.Write(zeros)
	enc2.Close()
	zeros = nil
	bombs := map[string]struct {
		data []byte
		want error
	}{
		"declares 1 GiB":                  {wrapRaw(mlproto.CompressionType_ZSTD, 1<<30, zs), ErrTooLarge},
		"declares 2 GiB-1 lz4":            {wrapRaw(mlproto.CompressionType_LZ4, 1<<31-1, lz[:n]), ErrTooLarge},
		"zlib 16 MiB claims 1 KiB":        {wrapRaw(mlproto.CompressionType_ZLIB, 1024, zb.Bytes()), ErrCorrupt},
		"zstd 16 MiB claims 1 KiB":        {wrapRaw(mlproto.CompressionType_ZSTD, 1024, zs), ErrCorrupt},
		"lz4 16 MiB claims 1 KiB":         {wrapRaw(mlproto.CompressionType_LZ4, 1024, lz[:n]), ErrCorrupt},
		"zstd 16 MiB over 1 MiB limit":    {wrapRaw(mlproto.CompressionType_ZSTD, 16<<20, zs), ErrTooLarge},
		"zstd stream 16 MiB claims 1 KiB": {wrapRaw(mlproto.CompressionType_ZSTD, 1024, zsStream.Bytes()), ErrCorrupt},
	}
	for name, b := range bombs {
		lim := Limits{MaxDecompressedBytes: 1 << 20}
		if name == "zstd stream 16 MiB claims 1 KiB" {
			lim = Limits{} // the default 64 MiB limit: the 1 KiB claim must still bound it
		}
		var err error
		alloc := allocs.Bytes(1, func() { _, _, err = Decode(b.data, lim) })
		if !errors.Is(err, b.want) {
			t.Errorf("%s: %v, want %v", name, err, b.want)
		}
		if alloc > 4<<20 {
			t.Errorf("%s: allocated %d bytes", name, alloc)
		}
	}
}

func TestUnknownFieldsRoundTrip(t *testing.T) {
	info := sampleInfo(1, 4)
	addUnknown(info, 99, "ml-level")
	addUnknown(info.LedgerInfo[1], 50, "ledger-level")
	addUnknown(info.LedgerInfo[0].OffloadContext, 40, "context-level")
	addUnknown(info.LedgerInfo[0].OffloadContext.DriverMetadata, 30, "driver-level")
	raw := mustMarshal(info)
	for _, codec := range append([]mlproto.CompressionType{mlproto.CompressionType_NONE}, allCodecs...) {
		data, err := Encode(info, EncodeOptions{Codec: codec})
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := Decode(data, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, info) {
			t.Errorf("%s: unknown fields lost", codec)
		}
		again, err := Encode(got, EncodeOptions{})
		if err != nil || !bytes.Equal(again, raw) {
			t.Errorf("%s: re-encoded bytes differ", codec)
		}
		for _, m := range []proto.Message{got, got.LedgerInfo[1], got.LedgerInfo[0].OffloadContext, got.LedgerInfo[0].OffloadContext.DriverMetadata} {
			if len(m.ProtoReflect().GetUnknown()) == 0 {
				t.Errorf("%s: %T lost its unknown field", codec, m)
			}
		}
	}
}

// What a small input can make Decode allocate (a 19-byte
// ZSTD and an 18-byte Snappy value claiming 64 MiB used to allocate 64 MiB each,
// under the default limit).
func TestSmallInputsAllocateLittle(t *testing.T) {
	hdr := func(codec mlproto.CompressionType) []byte {
		// magic, metadata length 7, {compressionType, uncompressedSize 64 MiB}
		return []byte{0x47, 0x78, 0, 0, 0, 7, 0x08, byte(codec), 0x10, 0x80, 0x80, 0x80, 0x20}
	}
	cases := map[string][]byte{
		"zstd frame header only":      append(hdr(mlproto.CompressionType_ZSTD), 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00),
		"zstd one empty compressed":   append(hdr(mlproto.CompressionType_ZSTD), 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00, 0x05, 0x00, 0x00),
		"zstd FCS 64 MiB, truncated":  append(hdr(mlproto.CompressionType_ZSTD), 0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0x00, 0x00, 0x00, 0x04),
		"snappy length 64 MiB":        append(hdr(mlproto.CompressionType_SNAPPY), 0x80, 0x80, 0x80, 0x20, 0x00),
		"lz4 one literal":             append(hdr(mlproto.CompressionType_LZ4), 0x10, 0x41),
		"zlib stream header":          append(hdr(mlproto.CompressionType_ZLIB), 0x78, 0x9c, 0x00),
		"none":                        append(hdr(mlproto.CompressionType_NONE), 1, 2, 3),
		"zstd 24 RLE blocks of 128 K": zstdRLE(24),
	}
	for name, in := range cases {
		var err error
		n := allocs.Bytes(2, func() { _, _, err = Decode(in, Limits{}) })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
		// Real output aside (the RLE blocks really expand), a few hundred
		// KiB of decoder state at most.
		if bound := uint64(256<<10) + 2*uint64(zstdMaxFor(in)); n > bound {
			t.Errorf("%s: %d-byte input allocated %d bytes, bound %d", name, len(in), n, bound)
		}
		t.Logf("%-28s %3d bytes in: %8d bytes allocated", name, len(in), n)
	}
}

// zstdRLE is a wrapper claiming 64 MiB around a frame of n RLE blocks of
// 128 KiB each (real output n × 128 KiB, fewer than claimed).
func zstdRLE(n int) []byte {
	b := []byte{0x47, 0x78, 0, 0, 0, 7, 0x08, byte(mlproto.CompressionType_ZSTD), 0x10, 0x80, 0x80, 0x80, 0x20,
		0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58} // no FCS, window 8 MiB
	for i := range n {
		bh := uint32(128<<10)<<3 | 1<<1 // RLE
		if i == n-1 {
			bh |= 1
		}
		b = append(b, byte(bh), byte(bh>>8), byte(bh>>16), 'x')
	}
	return b
}

// zstdMaxFor is the output a value can legitimately produce when it is a
// ZSTD wrapper (128 KiB per block it holds), else 0.
func zstdMaxFor(in []byte) int64 {
	if _, raw, err := Unwrap(in, Limits{}); err == nil {
		return int64(len(raw))
	}
	if len(in) > 13 && in[7] == byte(mlproto.CompressionType_ZSTD) {
		if b, err := zstdBound(in[13:]); err == nil {
			return b
		}
	}
	return 0
}

// decodeAllocBound is what Decode may allocate for n input bytes: decoder
// state plus twice the most any codec can expand n bytes to (ZSTD: 128 KiB
// per 3-byte block header), within the 64 MiB default limit.
func decodeAllocBound(n int) uint64 {
	return 1<<20 + 2*uint64(min(int64(n)*(zstdBlockMax/3+1), DefaultMaxDecompressedBytes))
}

func FuzzDecode(f *testing.F) {
	raw := mustMarshal(sampleInfo(1, 6))
	f.Add([]byte{})
	f.Add(raw)
	for _, c := range allCodecs {
		w, _ := Wrap(raw, c)
		f.Add(w)
	}
	f.Add([]byte{0x47, 0x78, 0, 0, 0, 4, 0x08, 0x01, 0x10, 0x04, 0x40, 0x0a, 0x02, 0x08, 0x03})
	f.Add([]byte{0x47, 0x78, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			info  *mlproto.ManagedLedgerInfo
			codec mlproto.CompressionType
			err   error
		)
		// The default limit (64 MiB): a small input must not allocate
		// anywhere near it.
		if n := allocs.Bytes(1, func() { info, codec, err = Decode(data, Limits{}) }); n > decodeAllocBound(len(data)) {
			t.Fatalf("Decode of %d bytes allocated %d bytes, bound %d", len(data), n, decodeAllocBound(len(data)))
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor ErrTooLarge", err)
			}
			return
		}
		// Whatever decodes re-encodes (plain and with its codec) to the same.
		for _, opts := range []EncodeOptions{{}, {Codec: codec}} {
			enc, err := Encode(info, opts)
			if err != nil {
				t.Fatalf("Encode(%+v) of a decoded info: %v", opts, err)
			}
			back, _, err := Decode(enc, Limits{MaxDecompressedBytes: 64 << 20})
			if err != nil || !proto.Equal(back, info) {
				t.Fatalf("round trip %+v: %v", opts, err)
			}
		}
	})
}

// FuzzWrapperPayload fuzzes the codec payloads behind a well-formed header.
func FuzzWrapperPayload(f *testing.F) {
	raw := mustMarshal(sampleInfo(1, 6))
	for _, c := range allCodecs {
		w, _ := Wrap(raw, c)
		mlen := binary.BigEndian.Uint32(w[2:6])
		f.Add(uint8(c), int32(len(raw)), w[6+mlen:])
	}
	f.Add(uint8(mlproto.CompressionType_ZSTD), int32(1<<20), []byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, codec uint8, size int32, payload []byte) {
		in := wrapRaw(mlproto.CompressionType(codec%6), size, payload)
		var err error
		if n := allocs.Bytes(1, func() { _, _, err = Decode(in, Limits{}) }); n > decodeAllocBound(len(in)) {
			t.Fatalf("Decode of %d bytes (codec %d, claiming %d) allocated %d bytes, bound %d", len(in), codec%6, size, n, decodeAllocBound(len(in)))
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error %v wraps neither ErrCorrupt nor ErrTooLarge", err)
		}
	})
}
