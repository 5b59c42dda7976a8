package format

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// With Gather the blocks are byte for byte those of the copying encoder
// (Block.Vector joined against Data), with the same CRC32C, the kept
// payloads referred to, not copied (the vector holds the payload slice
// itself), and every release called exactly once, only when the block is
// released: random ledgers and block sizes, entries kept, copied with Add
// and with AddSummed, paddings longer than the 64 KiB pattern included.
func TestEncoderGatherIsTheCopyingEncodersBytes(t *testing.T) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 4))
	for iter := range 60 {
		maxBlock := minBlockSize + 1 + rng.IntN(4000)
		if iter%10 == 0 {
			maxBlock = 200 << 10 // paddings beyond the 64 KiB pattern
		}
		payloads := make([][]byte, 1+rng.IntN(60))
		for i := range payloads {
			payloads[i] = make([]byte, rng.IntN(maxBlock-minBlockSize+1))
			for j := range payloads[i] {
				payloads[i][j] = byte(rng.Uint32())
			}
		}
		l := LedgerOf(int64(iter), payloads)
		copied, _, err := Encode(l, EncoderOptions{MaxBlockSize: maxBlock}, payloads)
		if err != nil {
			t.Fatal(err)
		}
		released := make([]int, len(payloads))
		kept := make([]bool, len(payloads))
		var blocks []Block
		var joined []byte
		pool := NewPool(maxBlock, 2)
		enc, err := NewEncoder(l, EncoderOptions{MaxBlockSize: maxBlock, Gather: true}, pool, func(_ context.Context, b Block) error {
			for id := b.FirstEntryID; id <= b.LastEntryID; id++ {
				if released[id] != 0 {
					t.Fatalf("iter %d: entry %d released before its block was", iter, id)
				}
			}
			if b.Vector == nil || int(vectorSize(b.Vector)) != b.Size {
				t.Fatalf("iter %d block %d: vector of %d bytes, block size %d", iter, b.PartNumber, vectorSize(b.Vector), b.Size)
			}
			bs := b.Bytes()
			if want := crc32.Checksum(bs, castagnoli); b.CRC32C != want {
				t.Fatalf("iter %d block %d: CRC32C %08x, bytes' %08x", iter, b.PartNumber, b.CRC32C, want)
			}
			for id := b.FirstEntryID; id <= b.LastEntryID; id++ {
				if kept[id] && len(payloads[id]) > 0 && !refers(b.Vector, payloads[id]) {
					t.Fatalf("iter %d block %d: kept entry %d was copied", iter, b.PartNumber, id)
				}
			}
			joined = append(joined, bs...)
			blocks = append(blocks, b)
			b.ReleaseKept()
			pool.Put(b.Data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range payloads {
			ctx := context.Background()
			switch rng.IntN(3) {
			case 0:
				kept[i] = true
				err = enc.AddKept(ctx, int64(i), p, crc32.Checksum(p, castagnoli), func() { released[i]++ })
			case 1:
				err = enc.AddSummed(ctx, int64(i), p, crc32.Checksum(p, castagnoli))
			default:
				err = enc.Add(ctx, int64(i), p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := enc.Finish(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(joined, copied) {
			t.Fatalf("iter %d: gathered object differs from the copied one (%d vs %d bytes)", iter, len(joined), len(copied))
		}
		for i, n := range released {
			if want := map[bool]int{true: 1}[kept[i]]; n != want {
				t.Fatalf("iter %d: entry %d released %d times, want %d", iter, i, n, want)
			}
		}
	}
}

// refers reports whether one of v is p itself (same bytes in memory).
func refers(v [][]byte, p []byte) bool {
	for _, b := range v {
		if len(b) == len(p) && &b[0] == &p[0] {
			return true
		}
	}
	return false
}

// A gathering encoder that fails or is aborted releases every payload it
// holds (those of the open block), once; one that emits a block hands its
// releases over to it.
func TestEncoderGatherReleasesOnAbortAndError(t *testing.T) {
	payloads := [][]byte{bytes.Repeat([]byte{1}, 300), bytes.Repeat([]byte{2}, 300), bytes.Repeat([]byte{3}, 300), bytes.Repeat([]byte{4}, 300)}
	l := LedgerOf(1, payloads)
	for _, tc := range []string{"abort", "emit error"} {
		released := make([]int, len(payloads))
		boom := errors.New("boom")
		enc, err := NewEncoder(l, EncoderOptions{MaxBlockSize: 1000, Gather: true}, nil, func(_ context.Context, b Block) error {
			if tc == "emit error" {
				return boom
			}
			return nil // keeps the block's payloads (never released here)
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i, p := range payloads[:2] {
			if err := enc.AddKept(ctx, int64(i), p, 0, func() { released[i]++ }); err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
		}
		// Entries 0 and 1 fill the first block; entry 2 flushes it and
		// opens the second.
		err = enc.AddKept(ctx, 2, payloads[2], 0, func() { released[2]++ })
		switch tc {
		case "abort":
			if err != nil {
				t.Fatal(err)
			}
			enc.Abort()
			enc.Abort()
			if released[0] != 0 || released[1] != 0 || released[2] != 1 {
				t.Fatalf("abort: released %v, want [0 0 1] (block 1 emitted, entry 2 in the open block)", released)
			}
		case "emit error":
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v, want the emit error", err)
			}
			if released[2] != 1 {
				t.Fatalf("emit error: entry 2 released %d times, want 1", released[2])
			}
			if err := enc.AddKept(ctx, 3, nil, 0, func() { released[2]++ }); err == nil || released[2] != 2 {
				t.Fatalf("AddKept after the error: %v, release called %d times in all, want 2", err, released[2])
			}
		}
	}
}

func vectorSize(v [][]byte) (n int64) {
	for _, b := range v {
		n += int64(len(b))
	}
	return n
}
