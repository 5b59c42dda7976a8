package client

import "sync"

// framePool keeps the buffers of response frames whose entries a Stream
// with StreamOptions.ReuseBuffers has delivered (or read ahead and then
// dropped at Close), so that later frames are read straight into them
// instead of into fresh allocations: a streamed ledger then costs no heap
// allocation per byte (and no garbage collection) once the read window has
// cycled once, and the frames alive are about one window's worth. It
// holds at most max bytes of free buffers; a frame with no free buffer of
// a fitting size is read as before (ReadFrame's own allocation, which
// commits memory only as the frame arrives, with the slack of
// wire.ReuseCap so that the buffer still fits once the ids' varints grow a
// byte). Safe for concurrent use.
type framePool struct {
	max int64

	mu     sync.Mutex
	free   [][]byte
	held   int64 // bytes of cap in free
	reused int64 // frames read into a free buffer (for tests)
	missed int64 // frames with no free buffer that fits (for tests)
}

func newFramePool(max int64) *framePool { return &framePool{max: max} }

// get returns a free buffer of length n, or nil when none fits: the
// smallest one of capacity >= n, and at most 2n (a large buffer is not
// spent on a small frame).
func (p *framePool) get(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, b := range p.free {
		if c := cap(b); c >= n && c <= 2*n && (best < 0 || c < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		p.missed++
		return nil
	}
	b := p.free[best]
	last := len(p.free) - 1
	p.free[best], p.free[last] = p.free[last], nil
	p.free = p.free[:last]
	p.held -= int64(cap(b))
	p.reused++
	return b[:n]
}

// put returns a buffer nothing refers to any more. When the pool is full
// the smallest buffers give way to a larger one (which fits more frames);
// otherwise b is left to the garbage collector.
func (p *framePool) put(b []byte) {
	c := int64(cap(b))
	if c == 0 || c > p.max {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.held+c > p.max {
		small := -1
		for i, f := range p.free {
			if int64(cap(f)) < c && (small < 0 || cap(f) < cap(p.free[small])) {
				small = i
			}
		}
		if small < 0 {
			return
		}
		p.held -= int64(cap(p.free[small]))
		last := len(p.free) - 1
		p.free[small], p.free[last] = p.free[last], nil
		p.free = p.free[:last]
	}
	p.free = append(p.free, b[:0])
	p.held += c
}
