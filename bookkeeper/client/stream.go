package client

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// StreamOptions tunes one Stream; zero fields take the Client's Options.
type StreamOptions struct {
	// Window overrides Options.Window.
	Window int
	// WindowBytes overrides Options.WindowBytes.
	WindowBytes int64
	// ReuseBuffers lets the stream reuse an entry's buffer for later reads
	// once the entry has been consumed: its Payload is valid only until
	// the next call of Next or Close (for ReadRange: until fn returns), and must not
	// be kept beyond that. The entries are then read straight into the
	// buffers of earlier ones, without a heap allocation per entry.
	ReuseBuffers bool
}

// Stream delivers entries from..to of a ledger in order while keeping a
// bounded window of reads in flight. Not safe for concurrent use.
type Stream struct {
	l        *Ledger
	ctx      context.Context
	cancel   context.CancelFunc
	next     int64 // next entry to deliver
	issued   int64 // next entry to request
	last     int64
	window   int64
	slots    []*slot
	err      error
	prevLen  int64
	havePrev bool
	reuse    bool
	lent     []byte // frame of the entry last delivered (reuse)
	lentSeq  uint64 // deliveries so far (reuse): the entry lent last has this seq

	// With reuse, mu orders the reads' completion against Close: the
	// frames of entries read but never delivered go back to the pool,
	// whether they arrived before Close or after.
	mu     sync.Mutex
	closed bool
}

type slot struct {
	done chan struct{}
	e    Entry
	err  error
}

// Stream starts reading entries from..to (inclusive). to < 0 means the
// last entry. Call Next until it returns io.EOF or an error, then Close.
func (l *Ledger) Stream(ctx context.Context, from, to int64, opts StreamOptions) (*Stream, error) {
	if to < 0 {
		to = l.md.LastEntryID
	}
	// from == to+1 is an empty range (e.g. 0..-1 of an empty ledger).
	if from < 0 || to > l.md.LastEntryID || from > to+1 {
		return nil, fmt.Errorf("ledger %d range %d..%d: %w (last entry %d)", l.md.LedgerID, from, to, ErrOutOfRange, l.md.LastEntryID)
	}
	window := int64(opts.Window)
	if window <= 0 {
		window = int64(l.c.opts.Window)
	}
	wb := opts.WindowBytes
	if wb <= 0 {
		wb = l.c.opts.WindowBytes
	}
	if n := l.md.LastEntryID + 1; n > 0 && l.md.Length > 0 {
		avg := max(l.md.Length/n, 1)
		window = min(window, max(wb/avg, 1))
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{l: l, ctx: ctx, cancel: cancel, next: from, issued: from, last: to, window: window,
		slots: make([]*slot, window), reuse: opts.ReuseBuffers}
	if from == 0 {
		s.havePrev = true // entry 0's length must equal its payload size
	}
	s.fill()
	return s, nil
}

func (s *Stream) fill() {
	for s.issued <= s.last && s.issued < s.next+s.window {
		sl := &slot{done: make(chan struct{})}
		s.slots[s.issued%s.window] = sl
		go func(e int64) {
			en, err := s.l.ReadEntry(s.ctx, e)
			if s.reuse {
				s.mu.Lock()
				defer s.mu.Unlock()
				if s.closed {
					s.l.c.frames.put(en.frame)
					en.frame = nil
				}
			}
			sl.e, sl.err = en, err
			close(sl.done)
		}(s.issued)
		s.issued++
	}
}

// Next returns the next entry, io.EOF after the last one, or the first
// error (which then sticks). With ReuseBuffers the entry returned by the
// previous call is invalid from here on.
func (s *Stream) Next() (Entry, error) {
	s.giveBack()
	if s.err != nil {
		return Entry{}, s.err
	}
	if s.next > s.last {
		s.err = io.EOF
		if md := s.l.md; md.LastEntryID == -1 && md.Length != 0 {
			s.err = fmt.Errorf("%w: ledger %d is empty but metadata length is %d", ErrLengthMismatch, md.LedgerID, md.Length)
		}
		return Entry{}, s.err
	}
	sl := s.slots[s.next%s.window]
	select {
	case <-sl.done:
	case <-s.ctx.Done():
		s.err = s.ctx.Err()
		return Entry{}, s.err
	}
	s.slots[s.next%s.window] = nil
	if sl.err != nil {
		s.err = sl.err
		return Entry{}, s.err
	}
	e := sl.e
	if s.reuse {
		s.lend(&e)
	} else {
		e.frame = nil
	}
	md := s.l.md
	if s.havePrev && e.Length != s.prevLen+int64(len(e.Payload)) {
		s.err = fmt.Errorf("%w: ledger %d entry %d has length %d, previous %d + payload %d",
			ErrLengthMismatch, md.LedgerID, e.EntryID, e.Length, s.prevLen, len(e.Payload))
		return Entry{}, s.err
	}
	if e.EntryID == md.LastEntryID && e.Length != md.Length {
		s.err = fmt.Errorf("%w: ledger %d last entry %d has length %d, metadata says %d",
			ErrLengthMismatch, md.LedgerID, e.EntryID, e.Length, md.Length)
		return Entry{}, s.err
	}
	s.prevLen, s.havePrev = e.Length, true
	s.next++
	s.fill()
	return e, nil
}

// lend makes e's frame the one lent with it: given back on the next Next,
// delivered or not, unless e is kept. Each delivery has its own number, so
// that a Keep of an entry delivered before finds it is stale even when the
// current entry was read into the very buffer that entry had (the frame is
// given back before Next waits for the next response).
func (s *Stream) lend(e *Entry) {
	s.lent = e.frame
	s.lentSeq++
	e.s, e.seq = s, s.lentSeq
}

// giveBack returns the frame of the entry last delivered to the pool.
func (s *Stream) giveBack() {
	if s.lent != nil {
		s.l.c.frames.put(s.lent)
		s.lent = nil
	}
}

// Close stops the reads still in flight and waits for none of them (they
// end on their own once cancelled). With ReuseBuffers the frames of the
// entries read ahead but not delivered go back to the client's pool, now
// or when their read ends.
func (s *Stream) Close() error {
	s.cancel()
	s.giveBack()
	if s.reuse {
		s.mu.Lock()
		if !s.closed {
			s.closed = true
			for i, sl := range s.slots {
				if sl == nil {
					continue
				}
				select {
				case <-sl.done:
					s.l.c.frames.put(sl.e.frame)
					sl.e.frame = nil
				default: // the read puts its frame back when it ends
				}
				s.slots[i] = nil
			}
		}
		s.mu.Unlock()
	}
	if s.err == nil {
		s.err = fmt.Errorf("stream closed")
	}
	return nil
}

// Reader reads the entries of one closed ledger in order; *Ledger
// implements it (callers that take an interface open one with
// Client.OpenReader).
type Reader interface {
	// ReadRange reads entries from..to (to < 0: the last entry) in order
	// and calls fn for each; an error from fn stops the read and is
	// returned.
	ReadRange(ctx context.Context, from, to int64, opts StreamOptions, fn func(Entry) error) error
}

var _ Reader = (*Ledger)(nil)

// ReadRange reads entries from..to (to < 0: the last entry) in order and
// calls fn for each; an error from fn stops the read and is returned.
func (l *Ledger) ReadRange(ctx context.Context, from, to int64, opts StreamOptions, fn func(Entry) error) error {
	s, err := l.Stream(ctx, from, to, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		e, err := s.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}
