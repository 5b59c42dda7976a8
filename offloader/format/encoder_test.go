package format

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// checkObject decodes a data object block by block using the layout and
// checks Pulsar's sizing rules and that the records are exactly payloads.
func checkObject(t *testing.T, data []byte, layout Layout, maxBlock int, payloads [][]byte) {
	t.Helper()
	if int64(len(data)) != layout.DataObjectLength {
		t.Fatalf("object has %d bytes, layout says %d", len(data), layout.DataObjectLength)
	}
	next := int64(0)
	for i, b := range layout.Blocks {
		end := layout.DataObjectLength
		if i+1 < len(layout.Blocks) {
			end = layout.Blocks[i+1].Offset
		}
		size := end - b.Offset
		last := i == len(layout.Blocks)-1
		if !last && size != int64(maxBlock) {
			t.Fatalf("block %d has %d bytes; every block but the last must be %d", i, size, maxBlock)
		}
		if b.PartID != int32(i+1) || b.FirstEntryID != next {
			t.Fatalf("block %d index entry %+v, want part %d first entry %d", i, b, i+1, next)
		}
		var used int64 = BlockHeaderSize
		h, err := DecodeBlock(data[b.Offset:end], func(id int64, p []byte) error {
			if !bytes.Equal(p, payloads[id]) {
				return fmt.Errorf("entry %d payload differs", id)
			}
			used += RecordHeaderSize + int64(len(p))
			next = id + 1
			return nil
		})
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		if h.FirstEntryID != b.FirstEntryID || h.BlockLength != size {
			t.Fatalf("block %d header %+v", i, h)
		}
		if last && used != size {
			t.Fatalf("last block has %d bytes of padding; Pulsar sizes it exactly", size-used)
		}
		if !last && next < int64(len(payloads)) && used+RecordHeaderSize+int64(len(payloads[next])) <= size {
			t.Fatalf("block %d ended before entry %d although it fits", i, next)
		}
	}
	if next != int64(len(payloads)) {
		t.Fatalf("decoded %d entries, want %d", next, len(payloads))
	}
}

func TestEncodeRandomLedgers(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for iter := range 300 {
		maxBlock := minBlockSize + 1 + rng.IntN(600)
		n := 1 + rng.IntN(60)
		payloads := make([][]byte, n)
		for i := range payloads {
			p := make([]byte, rng.IntN(maxBlock-minBlockSize+1))
			if rng.IntN(4) == 0 {
				p = p[:rng.IntN(len(p)+1)/8]
			}
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			payloads[i] = p
		}
		l := LedgerOf(int64(iter), payloads)
		if l.Length == 0 {
			payloads[0] = []byte{1}
			l = LedgerOf(int64(iter), payloads)
		}
		data, layout, err := Encode(l, EncoderOptions{MaxBlockSize: maxBlock}, payloads)
		if err != nil {
			t.Fatalf("iter %d (max block %d, %d entries): %v", iter, maxBlock, n, err)
		}
		checkObject(t, data, layout, maxBlock, payloads)
	}
}

func TestEncodeExactlyFilledBlock(t *testing.T) {
	// Two records of 12+44 bytes fill a 240-byte block exactly (128+112):
	// no padding, and the third entry opens the next block.
	payloads := [][]byte{bytes.Repeat([]byte{1}, 44), bytes.Repeat([]byte{2}, 44), []byte("xyz")}
	data, layout, err := Encode(LedgerOf(1, payloads), EncoderOptions{MaxBlockSize: 240}, payloads)
	if err != nil {
		t.Fatal(err)
	}
	if len(layout.Blocks) != 2 || layout.Blocks[1].Offset != 240 || layout.Blocks[1].FirstEntryID != 2 {
		t.Fatalf("blocks %+v", layout.Blocks)
	}
	if data[239] != 2 || !bytes.Equal(data[240:244], []byte{0xFB, 0xDB, 0xAB, 0xCB}) {
		t.Fatalf("block 1 does not end with the last payload byte followed by the next magic")
	}
	checkObject(t, data, layout, 240, payloads)
}

func TestEncodeSingleBlockIsExact(t *testing.T) {
	payloads := [][]byte{[]byte("hello")}
	data, layout, err := Encode(LedgerOf(1, payloads), EncoderOptions{}, payloads)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 128+12+5 || len(layout.Blocks) != 1 {
		t.Fatalf("single-entry ledger: %d bytes, %d blocks", len(data), len(layout.Blocks))
	}
}

func TestBlockSizeFormula(t *testing.T) {
	// calculateBlockSize(max, LAC, first, written) =
	//   min(max, (LAC-first+1)*12 + (length-written) + 128)
	cases := []struct {
		max                         int
		lac, first, length, written int64
		want                        int
	}{
		{64 << 20, 0, 0, 5, 0, 12 + 5 + 128},
		{64 << 20, 99, 0, 1000, 0, 100*12 + 1000 + 128},
		{1000, 99, 0, 1000, 0, 1000},
		{1000, 99, 90, 1000, 950, 10*12 + 50 + 128},
		{MaxBlockSizeLimit, 1 << 40, 0, 1 << 50, 0, MaxBlockSizeLimit},
	}
	for _, c := range cases {
		if got := BlockSize(c.max, c.lac, c.first, c.length, c.written); got != c.want {
			t.Errorf("BlockSize(%d, %d, %d, %d, %d) = %d, want %d", c.max, c.lac, c.first, c.length, c.written, got, c.want)
		}
	}
}

func TestEncoderRejects(t *testing.T) {
	ctx := context.Background()
	nop := func(context.Context, Block) error { return nil }
	big := make([]byte, 200-128-12+1)
	cases := []struct {
		name string
		l    Ledger
		max  int
		run  func(e *Encoder) error
		want error
	}{
		{"record too large", Ledger{1, 0, int64(len(big))}, 200, func(e *Encoder) error { return e.Add(ctx, 0, big) }, ErrRecordTooLarge},
		{"record fits exactly", Ledger{1, 0, int64(len(big) - 1)}, 200, func(e *Encoder) error {
			if err := e.Add(ctx, 0, big[1:]); err != nil {
				return err
			}
			_, err := e.Finish(ctx)
			return err
		}, nil},
		{"out of order", Ledger{1, 1, 2}, 200, func(e *Encoder) error { return e.Add(ctx, 1, []byte("a")) }, ErrEntrySequence},
		{"past last entry", Ledger{1, 0, 2}, 200, func(e *Encoder) error {
			_ = e.Add(ctx, 0, []byte("a"))
			return e.Add(ctx, 1, []byte("a"))
		}, ErrEntrySequence},
		{"missing entries", Ledger{1, 2, 2}, 200, func(e *Encoder) error {
			_ = e.Add(ctx, 0, []byte("a"))
			_ = e.Add(ctx, 1, []byte("a"))
			_, err := e.Finish(ctx)
			return err
		}, ErrEntrySequence},
		{"longer than declared", Ledger{1, 1, 3}, 200, func(e *Encoder) error {
			_ = e.Add(ctx, 0, []byte("ab"))
			return e.Add(ctx, 1, []byte("cd"))
		}, ErrLengthMismatch},
		{"shorter than declared", Ledger{1, 1, 5}, 200, func(e *Encoder) error {
			_ = e.Add(ctx, 0, []byte("ab"))
			_ = e.Add(ctx, 1, []byte("cd"))
			_, err := e.Finish(ctx)
			return err
		}, ErrLengthMismatch},
		{"add after finish", Ledger{1, 0, 1}, 200, func(e *Encoder) error {
			_ = e.Add(ctx, 0, []byte("a"))
			if _, err := e.Finish(ctx); err != nil {
				return err
			}
			return e.Add(ctx, 1, []byte("a"))
		}, ErrEntrySequence},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := NewEncoder(c.l, EncoderOptions{MaxBlockSize: c.max}, nil, nop)
			if err != nil {
				t.Fatal(err)
			}
			err = c.run(e)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	for _, l := range []Ledger{{-1, 0, 1}, {1, -1, 0}, {1, 0, 0}} {
		if _, err := NewEncoder(l, EncoderOptions{}, nil, nop); !errors.Is(err, ErrInvalidLedger) {
			t.Errorf("NewEncoder(%+v) = %v, want ErrInvalidLedger", l, err)
		}
	}
	for _, m := range []int{minBlockSize - 1, -5} {
		if _, err := NewEncoder(Ledger{1, 0, 1}, EncoderOptions{MaxBlockSize: m}, nil, nop); err == nil {
			t.Errorf("max block size %d accepted", m)
		}
	}
}

func TestEncoderEmitErrorIsStickyAndReleasesBuffers(t *testing.T) {
	ctx := context.Background()
	pool := NewPool(200, 1)
	boom := errors.New("boom")
	e, err := NewEncoder(Ledger{1, 9, 10 * 60}, EncoderOptions{MaxBlockSize: 200}, pool, func(_ context.Context, b Block) error {
		pool.Put(b.Data)
		return boom
	})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 60)
	var got error
	for i := range 10 {
		if got = e.Add(ctx, int64(i), p); got != nil {
			break
		}
	}
	if !errors.Is(got, boom) {
		t.Fatalf("Add error %v, want boom", got)
	}
	if err := e.Add(ctx, 99, p); !errors.Is(err, boom) {
		t.Fatalf("error not sticky: %v", err)
	}
	if _, err := e.Finish(ctx); !errors.Is(err, boom) {
		t.Fatalf("Finish after failure: %v", err)
	}
	// The single pool buffer must be free again.
	tctx, cancel := context.WithTimeout(ctx, 50e6)
	defer cancel()
	b, err := pool.Get(tctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	pool.Put(b)
}

func TestEncoderAbortReleasesBuffer(t *testing.T) {
	ctx := context.Background()
	pool := NewPool(1000, 1)
	e, err := NewEncoder(Ledger{1, 1, 2}, EncoderOptions{MaxBlockSize: 1000}, pool, func(context.Context, Block) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Add(ctx, 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	e.Abort()
	e.Abort()
	tctx, cancel := context.WithTimeout(ctx, 50e6)
	defer cancel()
	b, err := pool.Get(tctx, 1000)
	if err != nil {
		t.Fatalf("buffer not released by Abort: %v", err)
	}
	pool.Put(b)
}

func TestPoolBoundsBuffers(t *testing.T) {
	ctx := context.Background()
	p := NewPool(1<<10, 2)
	a, _ := p.Get(ctx, 1<<10)
	b, _ := p.Get(ctx, 10)
	if len(a) != 1<<10 || len(b) != 10 {
		t.Fatalf("lengths %d %d", len(a), len(b))
	}
	tctx, cancel := context.WithTimeout(ctx, 20e6)
	defer cancel()
	if _, err := p.Get(tctx, 1); err == nil {
		t.Fatal("third buffer handed out from a pool of 2")
	}
	p.Put(a)
	c, err := p.Get(ctx, 100)
	if err != nil || len(c) != 100 || cap(c) != 1<<10 {
		t.Fatalf("reused buffer len %d cap %d err %v", len(c), cap(c), err)
	}
	if _, err := p.Get(ctx, 1<<11); err == nil {
		t.Fatal("oversized buffer handed out")
	}
}

func TestFillPaddingRepeatsThePattern(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 63, 1000, 1 << 20} {
		b := make([]byte, n)
		fillPadding(b)
		for i := range b {
			if b[i] != padding[i%4] {
				t.Fatalf("length %d: byte %d is %#x, want %#x", n, i, b[i], padding[i%4])
			}
		}
	}
}

// TestBlockCRC32C encodes random ledgers, some entries with Add and some
// with AddSummed (their true CRC-32C): every block's CRC32C is
// crc32.Checksum of its bytes. A wrong CRC handed to AddSummed makes its
// block's CRC32C differ from the bytes' (what a verifying store refuses).
func TestBlockCRC32C(t *testing.T) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	for iter := range 100 {
		maxBlock := minBlockSize + 1 + rng.IntN(4000)
		n := 1 + rng.IntN(60)
		payloads := make([][]byte, n)
		for i := range payloads {
			p := make([]byte, rng.IntN(maxBlock-minBlockSize+1))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			payloads[i] = p
		}
		if len(payloads[0]) == 0 {
			payloads[0] = []byte{1} // at most the largest entry that fits
		}
		l := LedgerOf(int64(iter), payloads)
		lie := -1
		if iter%2 == 1 {
			lie = rng.IntN(n)
		}
		var blocks []Block
		enc, err := NewEncoder(l, EncoderOptions{MaxBlockSize: maxBlock}, nil, func(_ context.Context, b Block) error {
			blocks = append(blocks, b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range payloads {
			switch {
			case i == lie:
				err = enc.AddSummed(context.Background(), int64(i), p, crc32.Checksum(p, castagnoli)^0x100)
			case rng.IntN(2) == 0:
				err = enc.AddSummed(context.Background(), int64(i), p, crc32.Checksum(p, castagnoli))
			default:
				err = enc.Add(context.Background(), int64(i), p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := enc.Finish(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			want := crc32.Checksum(b.Data, castagnoli)
			hasLie := lie >= 0 && b.FirstEntryID <= int64(lie) && int64(lie) <= b.LastEntryID
			if (b.CRC32C == want) == hasLie {
				t.Fatalf("iter %d block %d (entries %d..%d, wrong CRC given for entry %d): CRC32C %08x, bytes' %08x",
					iter, b.PartNumber, b.FirstEntryID, b.LastEntryID, lie, b.CRC32C, want)
			}
		}
	}
}

// With NoCRC32C the blocks are byte for byte those of an encoder that
// computes CRCs, and carry none (CRC32C zero), for Add and AddSummed alike.
func TestEncoderNoCRC32C(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	for iter := range 20 {
		maxBlock := minBlockSize + 1 + rng.IntN(4000)
		payloads := make([][]byte, 1+rng.IntN(60))
		for i := range payloads {
			payloads[i] = make([]byte, 1+rng.IntN(maxBlock-minBlockSize))
			for j := range payloads[i] {
				payloads[i][j] = byte(rng.Uint32())
			}
		}
		l := LedgerOf(int64(iter), payloads)
		encode := func(noCRC bool) []Block {
			var blocks []Block
			enc, err := NewEncoder(l, EncoderOptions{MaxBlockSize: maxBlock, NoCRC32C: noCRC}, nil, func(_ context.Context, b Block) error {
				blocks = append(blocks, b)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range payloads {
				if i%2 == 0 {
					err = enc.Add(context.Background(), int64(i), p)
				} else {
					err = enc.AddSummed(context.Background(), int64(i), p, 0x1234)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if _, err := enc.Finish(context.Background()); err != nil {
				t.Fatal(err)
			}
			return blocks
		}
		with, without := encode(false), encode(true)
		if len(with) != len(without) {
			t.Fatalf("iter %d: %d blocks with CRCs, %d without", iter, len(with), len(without))
		}
		for i := range with {
			if !bytes.Equal(with[i].Data, without[i].Data) {
				t.Fatalf("iter %d block %d: bytes differ without CRCs", iter, i+1)
			}
			if without[i].CRC32C != 0 || with[i].CRC32C == 0 {
				t.Fatalf("iter %d block %d: CRC32C %08x without CRCs, %08x with", iter, i+1, without[i].CRC32C, with[i].CRC32C)
			}
		}
	}
}
