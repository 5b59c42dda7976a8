package format

import (
	"context"
	"testing"

	"github.com/tierkeeper/tierkeeper/internal/crc32c"
)

// BenchmarkEncoder measures the encoder alone (copy into pooled block
// buffers, headers, padding): MB/s of payload, 64 KiB entries, 64 MiB
// blocks; with the block CRC-32C hashed over the payloads (Add), combined
// from the payloads' known CRCs (AddSummed, as an offload from the bookies
// does) and not computed (NoCRC32C, for stores that do not use it).
func BenchmarkEncoder(b *testing.B) {
	const entry = 64 << 10
	const entries = 4096 // 256 MiB per op
	payload := make([]byte, entry)
	for i := range payload {
		payload[i] = byte(i * 31)
	}
	sum := crc32c.Checksum(payload)
	l := Ledger{ID: 1, LastEntryID: entries - 1, Length: entries * entry}
	for _, mode := range []struct {
		name   string
		noCRC  bool
		summed bool
	}{{"crc=hashed", false, false}, {"crc=summed", false, true}, {"crc=none", true, false}} {
		b.Run(mode.name, func(b *testing.B) {
			pool := NewPool(DefaultMaxBlockSize, 2)
			ctx := context.Background()
			b.SetBytes(l.Length)
			b.ReportAllocs()
			for b.Loop() {
				enc, err := NewEncoder(l, EncoderOptions{NoCRC32C: mode.noCRC}, pool, func(_ context.Context, blk Block) error {
					pool.Put(blk.Data)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				for i := range int64(entries) {
					if mode.summed {
						err = enc.AddSummed(ctx, i, payload, sum)
					} else {
						err = enc.Add(ctx, i, payload)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if _, err := enc.Finish(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
