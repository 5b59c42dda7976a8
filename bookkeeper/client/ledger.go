package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/bookkeeper/wire"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/crc32c"
	"github.com/tierkeeper/tierkeeper/internal/retry"
)

// Entry is one verified ledger entry.
type Entry struct {
	LedgerID int64
	EntryID  int64
	// LastAddConfirmed is the writer's LAC when it wrote the entry.
	LastAddConfirmed int64
	// Length is the cumulative ledger length including this entry.
	Length int64
	// Payload is the application data (for Pulsar: its own entry format).
	// It belongs to the caller.
	Payload []byte
	// Bookie is the bookie id that served the entry.
	Bookie string
	// PayloadSum is the payload's own CRC-32C when checking the digest gave
	// it (CRC32C ledgers, payloads of at least crc32c.MinCombine bytes; see
	// digest.Digester.VerifySum): the CRC of the bytes the bookie stored, for
	// a checksum that covers a copy of them without hashing them again.
	PayloadSum digest.PayloadSum

	frame []byte  // the response frame Payload aliases
	s     *Stream // the stream that lent it (ReuseBuffers), for Keep
	seq   uint64  // which of the stream's deliveries it was
}

// Keep takes the entry's buffer out of its stream's reuse (StreamOptions.
// ReuseBuffers): Payload then stays valid after the next Next (or after
// ReadRange's fn returns) until release is called, which gives the buffer
// back to the client's frame pool for later reads. Call it before the
// stream moves on; call release exactly once, when nothing refers to
// Payload any more. Frames kept add to the memory of the read window:
// the caller bounds how many it holds. For an entry of a stream without
// ReuseBuffers, whose Payload is the caller's anyway, release does
// nothing.
func (e Entry) Keep() (release func()) {
	s := e.s
	if s == nil || len(s.lent) == 0 || len(e.frame) == 0 || e.seq != s.lentSeq || &s.lent[0] != &e.frame[0] {
		// Not lent (or no longer: the stream has moved on, and its frame
		// may hold another entry by now).
		return func() {}
	}
	f := s.lent
	s.lent = nil
	pool := s.l.c.frames
	return func() { pool.put(f) }
}

// Ledger reads one closed ledger. It is safe for concurrent use.
type Ledger struct {
	c  *Client
	md *metadata.LedgerMetadata
	d  *digest.Digester
}

// Open prepares reads of a ledger from its metadata (read it fresh: an
// ensemble may have been rewritten by autorecovery). The ledger must be
// CLOSED; its digest type and password come from the metadata, or from
// Options for metadata that records none.
func (c *Client) Open(md *metadata.LedgerMetadata) (*Ledger, error) {
	if err := md.Validate(); err != nil {
		return nil, fmt.Errorf("open ledger %d: %w", md.LedgerID, err)
	}
	if !md.Closed() {
		return nil, fmt.Errorf("open ledger %d: %w (state %v)", md.LedgerID, ErrNotClosed, md.State)
	}
	typ, pw := md.DigestType, md.Password
	if !md.HasPassword {
		if !c.opts.DigestType.Valid() {
			return nil, fmt.Errorf("open ledger %d: %w", md.LedgerID, ErrNoDigest)
		}
		typ, pw = c.opts.DigestType, c.opts.Password
	}
	d, err := digest.New(typ, pw)
	if err != nil {
		return nil, fmt.Errorf("open ledger %d: %w", md.LedgerID, err)
	}
	return &Ledger{c: c, md: md, d: d}, nil
}

// OpenReader is Open returning the Reader interface.
func (c *Client) OpenReader(md *metadata.LedgerMetadata) (Reader, error) {
	l, err := c.Open(md)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Metadata returns the metadata the ledger was opened with.
func (l *Ledger) Metadata() *metadata.LedgerMetadata { return l.md }

// ReadEntry reads and verifies one entry, failing over across its write
// set. A *ReadError is returned when no replica could serve it;
// errors.Is(err, ErrEntryMissing) when every replica said it has no such
// entry or ledger.
func (l *Ledger) ReadEntry(ctx context.Context, entryID int64) (Entry, error) {
	if entryID < 0 || entryID > l.md.LastEntryID {
		return Entry{}, fmt.Errorf("ledger %d entry %d: %w (last entry %d)", l.md.LedgerID, entryID, ErrOutOfRange, l.md.LastEntryID)
	}
	ws, err := l.md.WriteSet(entryID)
	if err != nil {
		return Entry{}, err
	}
	c := l.c
	var attempts []Attempt
	for i, b := range c.order(ws) {
		if i > 0 {
			c.m.failovers.Inc()
		}
		e, err := l.readFrom(ctx, b, entryID)
		if err == nil {
			if len(attempts) > 0 {
				c.log.Debug("read entry after failover", "ledger", l.md.LedgerID, "entry", entryID, "bookie", b, "failed", len(attempts))
			}
			return e, nil
		}
		if ctx.Err() != nil {
			return Entry{}, fmt.Errorf("ledger %d entry %d: %w", l.md.LedgerID, entryID, ctx.Err())
		}
		c.m.errors.WithLabelValues(reason(err)).Inc()
		if !isMissing(err) {
			c.markFailed(b)
			c.log.Debug("replica failed", "ledger", l.md.LedgerID, "entry", entryID, "bookie", b, "err", err)
		}
		attempts = append(attempts, Attempt{Bookie: b, Err: err})
	}
	missing := true
	for _, a := range attempts {
		missing = missing && isMissing(a.Err)
	}
	return Entry{}, &ReadError{LedgerID: l.md.LedgerID, EntryID: entryID, Missing: missing, Attempts: attempts}
}

// readFrom reads entryID from one bookie, retrying ETOOMANYREQUESTS with
// jittered back-off (Options.BusyRetries, BusyBackoff, BusyBackoffMax).
func (l *Ledger) readFrom(ctx context.Context, bookie string, entryID int64) (Entry, error) {
	c := l.c
	pol := retry.Policy{
		Attempts:  max(c.opts.BusyRetries, 0) + 1,
		Backoff:   retry.Backoff{Initial: c.opts.BusyBackoff, Max: c.opts.BusyBackoffMax},
		Retryable: func(err error) bool { return errors.Is(err, ErrBusy) },
		OnRetry:   func(int, time.Duration, error) { c.m.busyRetries.Inc() },
	}
	return retry.Do(ctx, pol, func(ctx context.Context) (Entry, error) {
		k, err := c.getConn(ctx, bookie)
		if err != nil {
			return Entry{}, err
		}
		resp, frame, sum, err := k.read(ctx, l.md.LedgerID, entryID, l.d.Type() == digest.CRC32C)
		if err != nil {
			return Entry{}, err
		}
		if st := resp.EffectiveStatus(); st != bkproto.StatusCode_EOK {
			c.frames.put(frame)
			return Entry{}, &StatusError{Bookie: bookie, Status: st}
		}
		e, err := l.verify(bookie, entryID, resp.Read.LedgerID, resp.Read.EntryID, resp.Read.Body, entrySum(frame, resp.Read.Body, sum))
		if err != nil {
			c.frames.put(frame)
			return Entry{}, err
		}
		e.frame = frame
		return e, nil
	})
}

// entrySum is the CRC-32C of body, a tail of frame, from the frame's
// (wire.ReadFrameSum) and that of the bytes before body; not OK when the
// frame's was not taken or body does not end the frame (a v3 response may
// carry fields after it).
func entrySum(frame, body []byte, sum wire.FrameSum) wire.FrameSum {
	if !sum.OK || len(body) < wire.SumMin || len(frame) < len(body) || &frame[len(frame)-1] != &body[len(body)-1] {
		return wire.FrameSum{}
	}
	head := frame[:len(frame)-len(body)]
	return wire.FrameSum{CRC32C: crc32c.Suffix(sum.CRC32C, crc32c.Checksum(head), int64(len(body))), OK: true}
}

func (l *Ledger) verify(bookie string, entryID, respLedger, respEntry int64, body []byte, sum wire.FrameSum) (Entry, error) {
	if respLedger != l.md.LedgerID || respEntry != entryID {
		return Entry{}, fmt.Errorf("%w: bookie %s answered ledger %d entry %d for ledger %d entry %d",
			ErrBadResponse, bookie, respLedger, respEntry, l.md.LedgerID, entryID)
	}
	if body == nil {
		return Entry{}, fmt.Errorf("%w: bookie %s sent no body for ledger %d entry %d", ErrBadResponse, bookie, l.md.LedgerID, entryID)
	}
	var h digest.Header
	var payload []byte
	var ps digest.PayloadSum
	var err error
	if sum.OK {
		h, payload, ps, err = l.d.VerifyKnownSum(l.md.LedgerID, entryID, body, sum.CRC32C)
	} else {
		h, payload, ps, err = l.d.VerifySum(l.md.LedgerID, entryID, body)
	}
	if err != nil {
		l.c.m.digestErrors.Inc()
		return Entry{}, fmt.Errorf("bookie %s: %w", bookie, err)
	}
	l.c.m.entries.Inc()
	l.c.m.bytes.Add(float64(len(payload)))
	l.c.markHealthy(bookie)
	return Entry{LedgerID: h.LedgerID, EntryID: h.EntryID, LastAddConfirmed: h.LastAddConfirmed, Length: h.Length,
		Payload: payload, Bookie: bookie, PayloadSum: ps}, nil
}

// reason is err's label in the replica-errors counter; other bookie
// statuses and anything unclassified count as bookie_error.
func reason(err error) string {
	switch {
	case errors.Is(err, ErrNoSuchEntry):
		return "no_such_entry"
	case errors.Is(err, ErrNoSuchLedger):
		return "no_such_ledger"
	case errors.Is(err, ErrBusy):
		return "busy"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrConnection):
		return "connection"
	case errors.Is(err, digest.ErrMismatch), errors.Is(err, digest.ErrWrongEntry), errors.Is(err, digest.ErrShortEntry):
		return "digest"
	case errors.Is(err, ErrBadResponse):
		return "bad_response"
	}
	return "bookie_error"
}
