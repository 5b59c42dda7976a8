package format

import (
	"context"
	"testing"
)

// BenchmarkEncoder measures the encoder alone (copy into pooled block
// buffers, headers, padding): MB/s of payload, 64 KiB entries, 64 MiB blocks.
func BenchmarkEncoder(b *testing.B) {
	const entry = 64 << 10
	const entries = 4096 // 256 MiB per op
	payload := make([]byte, entry)
	for i := range payload {
		payload[i] = byte(i * 31)
	}
	l := Ledger{ID: 1, LastEntryID: entries - 1, Length: entries * entry}
	pool := NewPool(DefaultMaxBlockSize, 2)
	ctx := context.Background()
	b.SetBytes(l.Length)
	b.ReportAllocs()
	for b.Loop() {
		enc, err := NewEncoder(l, EncoderOptions{}, pool, func(_ context.Context, blk Block) error {
			pool.Put(blk.Data)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for i := range int64(entries) {
			if err := enc.Add(ctx, i, payload); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := enc.Finish(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
