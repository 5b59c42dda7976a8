package offloader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
)

// LedgerEntry is one entry of a ledger as a LedgerSource reads it.
type LedgerEntry struct {
	ID      int64
	Payload []byte
	// Length is the cumulative ledger length including this entry (-1:
	// not known, a store range that does not start at entry 0).
	Length int64
	// LAC is the writer's last-add-confirmed (-1: not known, the store
	// does not keep it).
	LAC int64
	// From is the bookie or the store that served the entry.
	From string
}

// LedgerSource reads a closed ledger's entries, verified: from the
// bookies (every entry's digest) or from an offloaded ledger's objects
// (every block, record and padding, as Pulsar's reader checks them).
type LedgerSource struct {
	// LastEntry and Length are the ledger's last entry id and length.
	LastEntry, Length int64
	// Checked says what every entry is checked against ("CRC32C
	// digests", "object format").
	Checked string
	// Digest is the BookKeeper digest type ("" for the store).
	Digest string
	read   func(ctx context.Context, from, to int64, fn func(LedgerEntry) error) error
	close  func()
}

// Read calls fn with entries from..to in order. An entry's Payload is
// valid only until fn returns (its buffer is then reused).
func (s *LedgerSource) Read(ctx context.Context, from, to int64, fn func(LedgerEntry) error) error {
	return s.read(ctx, from, to, fn)
}

// Close releases what the source holds (not the peers).
func (s *LedgerSource) Close() { s.close() }

// LedgerSourceOptions say where OpenLedgerSource reads a ledger from.
type LedgerSourceOptions struct {
	// Bookies are the bookie client's options (read timeout, window,
	// frame size; the digest type and password of v1 ledgers, whose
	// metadata records none), for a read from the bookies.
	Bookies bkclient.Options
	// FromStore reads the offloaded ledger's objects from
	// PeersConfig.Store instead: those of Attempt, or (Attempt nil) of the
	// attempt the metadata of Topic records.
	FromStore bool
	Attempt   uuid.UUID
	Topic     string
	Logger    *slog.Logger
}

// OpenLedgerSource opens ledger id's source as o says, with the peers it
// needs (OpenPeers; the store alone for a given attempt). Its Close closes
// them.
func OpenLedgerSource(ctx context.Context, pc PeersConfig, id int64, o LedgerSourceOptions) (*LedgerSource, error) {
	po := PeersOptions{Logger: o.Logger}
	if !o.FromStore {
		po.Bookies = &o.Bookies
		p, err := OpenPeers(ctx, pc, po)
		if err != nil {
			return nil, err
		}
		src, err := openBookieLedger(ctx, p, id, o.Bookies.DigestType)
		if err != nil {
			p.Close()
			return nil, err
		}
		src.close = p.Close
		return src, nil
	}
	attempt := o.Attempt
	if attempt == uuid.Nil {
		p, err := OpenPeers(ctx, pc, po)
		if err != nil {
			return nil, err
		}
		attempt, err = offloadAttempt(ctx, p, o.Topic, id)
		p.Close()
		if err != nil {
			return nil, err
		}
	}
	st, err := OpenStore(ctx, pc, po)
	if err != nil {
		return nil, err
	}
	src, err := openOffloadedLedger(ctx, st, id, attempt, o.Logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	return src, nil
}

// openBookieLedger reads ledger id from the bookies through p (opened with
// Bookies); fallback is the digest type of a ledger whose metadata records
// none.
func openBookieLedger(ctx context.Context, p *Peers, id int64, fallback digest.Type) (*LedgerSource, error) {
	md, err := p.Ledgers.ReadLedger(ctx, id)
	if err != nil {
		if errors.Is(err, metadata.ErrNoSuchLedger) {
			err = fmt.Errorf("%w (an offloaded ledger whose BookKeeper copy is deleted reads from the store: --store FILE --topic TOPIC)", err)
		}
		return nil, p.ZKFailed(err)
	}
	l, err := p.BK.Open(md)
	if err != nil {
		return nil, err
	}
	dt := md.DigestType
	if !md.HasPassword {
		dt = fallback
	}
	return &LedgerSource{LastEntry: md.LastEntryID, Length: md.Length, Checked: dt.String() + " digests", Digest: dt.String(),
		read: func(ctx context.Context, from, to int64, fn func(LedgerEntry) error) error {
			return l.ReadRange(ctx, from, to, bkclient.StreamOptions{ReuseBuffers: true}, func(e bkclient.Entry) error {
				return fn(LedgerEntry{ID: e.EntryID, Payload: e.Payload, Length: e.Length, LAC: e.LastAddConfirmed, From: e.Bookie})
			})
		},
	}, nil
}

// openOffloadedLedger reads ledger id from the objects of offload attempt
// attempt in st (closed by the source's Close).
func openOffloadedLedger(ctx context.Context, st blob.Store, id int64, attempt uuid.UUID, log *slog.Logger) (*LedgerSource, error) {
	r, err := format.Open(ctx, st, attempt, id, &format.ReaderOptions{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("ledger %d attempt %s in %s: %w", id, attempt, st.Name(), err)
	}
	where := st.Name()
	return &LedgerSource{LastEntry: r.LastEntryID(), Length: r.Length(), Checked: "object format",
		read: func(ctx context.Context, from, to int64, fn func(LedgerEntry) error) error {
			var length int64
			if from > 0 {
				length = -1 // not known without reading the entries before
			}
			return r.Read(ctx, from, to, func(id int64, b []byte) error {
				if length >= 0 {
					length += int64(len(b))
				}
				return fn(LedgerEntry{ID: id, Payload: b, Length: length, LAC: -1, From: where})
			})
		},
		close: func() { r.Close(); st.Close() },
	}, nil
}

// offloadAttempt finds ledger id among the topic's ledgers
// (mledger.TopicLedgers) and returns the offload attempt its metadata
// records (a warning is logged when it is not complete).
func offloadAttempt(ctx context.Context, p *Peers, topic string, id int64) (uuid.UUID, error) {
	_, ledgers, err := p.ML.TopicLedgers(ctx, topic)
	if err != nil {
		return uuid.Nil, p.ZKFailed(err)
	}
	for _, l := range ledgers {
		if l.ID != id {
			continue
		}
		if !l.HasAttempt {
			return uuid.Nil, fmt.Errorf("ledger %d of %s has no offload attempt: it is in BookKeeper only (read it without --store)", id, l.ML)
		}
		if !l.Complete {
			p.log.Warn("the ledger's offload is not complete; reading the attempt's objects anyway", "ledger", id, "uuid", l.Attempt)
		}
		return l.Attempt, nil
	}
	return uuid.Nil, fmt.Errorf("ledger %d is not a ledger of %s", id, topic)
}
