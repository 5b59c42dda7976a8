package format

import (
	"context"
	"fmt"
	"sync"
)

// BufferSource hands out block buffers to an Encoder and takes them back
// once a block has been consumed (uploaded).
type BufferSource interface {
	// Get returns a buffer of len size, blocking until one is free or ctx
	// ends.
	Get(ctx context.Context, size int) ([]byte, error)
	// Put returns a buffer obtained from Get.
	Put(b []byte)
}

// Pool is a BufferSource with a fixed number of buffers of at most
// blockSize bytes. At most Buffers() buffers are out at once, so the memory
// it holds is bounded by Buffers() × blockSize whatever the ledger size.
// Full-size buffers are reused; a request for a small block (under half the
// block size, e.g. the last block of a small ledger) gets an exact-size
// buffer that is dropped on Put. One Pool may be shared by concurrent
// uploads. Safe for concurrent use.
type Pool struct {
	blockSize int
	slots     chan struct{}

	mu   sync.Mutex
	free [][]byte
}

// NewPool returns a pool of n buffers of blockSize bytes (n >= 1); buffers
// are allocated lazily.
func NewPool(blockSize, n int) *Pool {
	if n < 1 {
		n = 1
	}
	return &Pool{blockSize: blockSize, slots: make(chan struct{}, n)}
}

// BlockSize is the largest buffer the pool hands out.
func (p *Pool) BlockSize() int { return p.blockSize }

// Buffers is the number of buffers that may be out at once.
func (p *Pool) Buffers() int { return cap(p.slots) }

// Get implements BufferSource.
func (p *Pool) Get(ctx context.Context, size int) ([]byte, error) {
	if size < 0 || size > p.blockSize {
		return nil, fmt.Errorf("format: buffer of %d bytes requested from a pool of %d-byte buffers", size, p.blockSize)
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	p.mu.Lock()
	var b []byte
	if n := len(p.free); n > 0 {
		b, p.free = p.free[n-1], p.free[:n-1]
	}
	p.mu.Unlock()
	if b == nil {
		if size < p.blockSize/2 {
			return make([]byte, size), nil
		}
		b = make([]byte, p.blockSize)
	}
	return b[:size], nil
}

// Put implements BufferSource.
func (p *Pool) Put(b []byte) {
	if cap(b) >= p.blockSize {
		p.mu.Lock()
		p.free = append(p.free, b[:p.blockSize])
		p.mu.Unlock()
	}
	<-p.slots
}

// heapBuffers allocates every buffer; Put drops it.
type heapBuffers struct{}

func (heapBuffers) Get(_ context.Context, size int) ([]byte, error) { return make([]byte, size), nil }
func (heapBuffers) Put([]byte)                                      {}
