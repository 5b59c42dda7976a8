package client

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/bookietest"
)

func TestFramePoolFitsAndBounds(t *testing.T) {
	p := newFramePool(10 << 10)
	if p.get(100) != nil {
		t.Fatal("an empty pool handed out a buffer")
	}
	p.put(make([]byte, 4<<10))
	if p.get(1<<10) != nil {
		t.Error("a 4 KiB buffer was spent on a 1 KiB frame")
	}
	if p.get(5<<10) != nil {
		t.Error("a 4 KiB buffer was handed out for 5 KiB")
	}
	b := p.get(3 << 10)
	if len(b) != 3<<10 || cap(b) != 4<<10 {
		t.Fatalf("got len %d cap %d, want the 4 KiB buffer cut to 3 KiB", len(b), cap(b))
	}
	// Full: 3 + 3 + 3 KiB held; a 6 KiB buffer pushes out the smallest.
	p.put(make([]byte, 3<<10))
	p.put(make([]byte, 3<<10))
	p.put(make([]byte, 3<<10))
	p.put(make([]byte, 2<<10)) // over the bound, smaller than all: dropped
	if p.held != 9<<10 || len(p.free) != 3 {
		t.Fatalf("held %d in %d buffers, want 9 KiB in 3", p.held, len(p.free))
	}
	p.put(make([]byte, 6<<10))
	if p.held > p.max || p.held != 9<<10 || len(p.free) != 2 {
		t.Fatalf("held %d in %d buffers, want 9 KiB in 2 (bound %d)", p.held, len(p.free), p.max)
	}
	if b := p.get(6 << 10); cap(b) != 6<<10 {
		t.Errorf("got cap %d, want the 6 KiB buffer", cap(b))
	}
	p.put(make([]byte, 20<<10)) // larger than the whole pool
	if p.held != 3<<10 {
		t.Errorf("held %d, want 3 KiB", p.held)
	}
}

// With ReuseBuffers, entries are read into the buffers of the entries
// consumed before them, and every payload is still what was written, with
// responses arriving out of order.
func TestStreamReuseBuffers(t *testing.T) {
	e := newEnv(t, 3, Options{})
	r := rand.New(rand.NewPCG(21, 1))
	data := make([][]byte, 300)
	for i := range data {
		data[i] = make([]byte, 80_000+r.IntN(40_000))
		for j := range data[i] {
			data[i][j] = byte(r.Uint32())
		}
	}
	l := e.write(bookietest.Ledger{LedgerID: 30, Ensemble: 3, WriteQuorum: 3}, data)
	for _, id := range e.cluster.IDs {
		e.cluster.Bookies[id].SetFault(func(bookietest.Request) bookietest.Action {
			return bookietest.Action{Delay: time.Duration(rand.IntN(3)) * time.Millisecond}
		})
	}
	readAll(t, l, data, StreamOptions{Window: 16})
	if n := e.reused(); n != 0 {
		t.Fatalf("%d frames reused without ReuseBuffers", n)
	}
	readAll(t, l, data, StreamOptions{Window: 16, ReuseBuffers: true})
	readAll(t, l, data, StreamOptions{Window: 16, ReuseBuffers: true})
	// The first window of the first pass has nothing to reuse, and a
	// frame larger than every free buffer is read into a fresh one.
	if n := e.reused(); n < int64(len(data)) {
		t.Errorf("%d of %d frames of two passes reused", n, 2*len(data))
	}
}

func (e *env) reused() int64 {
	p := e.client.frames
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reused
}
