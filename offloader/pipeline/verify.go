package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/format/upload"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// VerifyReport says what a verification checked.
type VerifyReport struct {
	// Level is "full" (every entry compared with BookKeeper), "sampled"
	// (the windows in Windows), or "objects" (no BookKeeper copy: the
	// objects decoded in full and checked against their index).
	Level string `json:"level"`
	// Windows are the entry ranges compared (first, last).
	Windows [][2]int64 `json:"windows,omitempty"`
	// Entries and Bytes are the entries and payload bytes read back.
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// ObjectBytes and Blocks describe the data object.
	ObjectBytes int64 `json:"objectBytes"`
	Blocks      int   `json:"blocks"`
}

// Verification levels.
const (
	LevelFull    = "full"
	LevelSampled = "sampled"
	LevelObjects = "objects"
)

// verifyUploaded checks what the copy step wrote: sizes, object metadata,
// index bytes, every block header (upload.Verify), then the entries of the
// digest windows read back through the format reader.
func (p *Pipeline) verifyUploaded(ctx context.Context, t mledger.LedgerRef, cp *copied) (VerifyReport, error) {
	rep := VerifyReport{ObjectBytes: cp.res.DataObjectLength, Blocks: cp.res.Blocks}
	if err := upload.Verify(ctx, p.d.Store, cp.res, &upload.VerifyOptions{BlockHeaders: true}); err != nil {
		return rep, objectsWrong(err)
	}
	err := p.compareEntries(ctx, t, cp.res.DataKey, cp.res.IndexKey, cp.dg, &rep)
	return rep, err
}

// verifyStored checks the objects of attempt id, written by an earlier run,
// against the index they carry and the ledger on the bookies.
func (p *Pipeline) verifyStored(ctx context.Context, t mledger.LedgerRef, md *metadata.LedgerMetadata, id uuid.UUID) (VerifyReport, error) {
	dataKey, indexKey := format.DataKey(id, t.LedgerID), format.IndexKey(id, t.LedgerID)
	rep, err := p.checkObjects(ctx, dataKey, indexKey, md.LastEntryID, md.Length)
	if err != nil {
		return rep, err
	}
	dg, err := p.readDigests(ctx, t, md, p.planDigests(md))
	if err != nil {
		return rep, err
	}
	err = p.compareEntries(ctx, t, dataKey, indexKey, dg, &rep)
	return rep, err
}

// checkObjects runs upload.Verify on stored objects described by their own
// index, and checks that the index describes the expected ledger.
func (p *Pipeline) checkObjects(ctx context.Context, dataKey, indexKey string, lastEntryID, length int64) (VerifyReport, error) {
	var rep VerifyReport
	ix, raw, err := format.ReadIndex(ctx, p.d.Store, indexKey, 3)
	if err != nil {
		return rep, err
	}
	rep.ObjectBytes, rep.Blocks = ix.DataObjectLength, len(ix.Blocks)
	if got := ix.Metadata; got.GetLastEntryId() != lastEntryID || got.GetLength() != length {
		return rep, fmt.Errorf("%w: index %s describes entries 0..%d, %d bytes; the ledger has 0..%d, %d bytes",
			ErrVerify, indexKey, got.GetLastEntryId(), got.GetLength(), lastEntryID, length)
	}
	res := &upload.Result{DataKey: dataKey, IndexKey: indexKey, DataObjectLength: ix.DataObjectLength, IndexBytes: raw, Blocks: len(ix.Blocks)}
	if err := upload.Verify(ctx, p.d.Store, res, &upload.VerifyOptions{BlockHeaders: true}); err != nil {
		return rep, objectsWrong(err)
	}
	return rep, nil
}

// readDigests fills dg's windows from the bookies.
func (p *Pipeline) readDigests(ctx context.Context, t mledger.LedgerRef, md *metadata.LedgerMetadata, dg *digests) (*digests, error) {
	l, err := p.d.Bookies.OpenReader(md)
	if err != nil {
		return nil, err
	}
	for _, w := range dg.windows {
		err := l.ReadRange(ctx, w.first, w.last, client.StreamOptions{WindowBytes: p.o.ReadWindowBytes, ReuseBuffers: true}, func(e client.Entry) error {
			dg.add(e.EntryID, e.Payload, e.PayloadSum)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read entries %d..%d from the bookies: %w", w.first, w.last, err)
		}
	}
	return dg, nil
}

// compareEntries reads dg's windows from the objects and compares every
// entry's CRC-32C and length with the bookies' copy.
func (p *Pipeline) compareEntries(ctx context.Context, t mledger.LedgerRef, dataKey, indexKey string, dg *digests, rep *VerifyReport) error {
	rep.Level = LevelSampled
	if dg.full {
		rep.Level = LevelFull
	}
	r, err := format.OpenKeys(ctx, p.d.Store, dataKey, indexKey, nil)
	if err != nil {
		return objectsWrong(err)
	}
	defer r.Close()
	total := dg.bytes()
	for _, w := range dg.windows {
		rep.Windows = append(rep.Windows, [2]int64{w.first, w.last})
		if int64(len(w.sums)) != w.last-w.first+1 {
			return fmt.Errorf("internal: %d digests for entries %d..%d", len(w.sums), w.first, w.last)
		}
		err := r.Read(ctx, w.first, w.last, func(id int64, payload []byte) error {
			want, got := w.sums[id-w.first], sum(payload)
			if got != want {
				return fmt.Errorf("%w: entry %d: the object holds %d bytes (crc32c %08x), the bookies %d bytes (crc32c %08x)",
					ErrVerify, id, uint32(got), got>>32, uint32(want), want>>32)
			}
			rep.Entries++
			rep.Bytes += int64(len(payload))
			p.obs.Verified(t, rep.Bytes, total)
			return nil
		})
		if err != nil {
			return objectsWrong(err)
		}
	}
	return nil
}

// objectsWrong marks errors that mean the objects are not right (as
// opposed to the store being unreachable) as ErrVerify.
func objectsWrong(err error) error {
	if errors.Is(err, ErrVerify) {
		return err
	}
	if errors.Is(err, upload.ErrVerify) || errors.Is(err, format.ErrCorruptBlock) || errors.Is(err, format.ErrCorruptIndex) ||
		errors.Is(err, format.ErrFormatVersion) || errors.Is(err, format.ErrEntryRange) || errors.Is(err, blob.ErrNotFound) ||
		errors.Is(err, format.ErrUnsupportedIndex) {
		return fmt.Errorf("%w: %w", ErrVerify, err)
	}
	return err
}

// VerifyOptions tune VerifyLedger.
type VerifyOptions struct {
	// Full compares every entry with BookKeeper whatever the ledger size
	// (default: as the pipeline's verify step, FullVerifyBytes).
	Full bool
}

// VerifyLedger checks an offloaded ledger's objects: against the bookies
// entry by entry while its BookKeeper copy exists (every entry with
// Full, else as the pipeline's verify step), and otherwise by decoding the
// whole data object against its index (every block, record and padding
// checked; entry count and total length equal to the index metadata).
// Nothing is written.
func (p *Pipeline) VerifyLedger(ctx context.Context, t mledger.LedgerRef, o VerifyOptions) (VerifyReport, error) {
	snap, err := p.d.ML.Get(ctx, t.ML)
	if err != nil {
		return VerifyReport{}, err
	}
	var li *LedgerInfo
	for _, l := range snap.Info.GetLedgerInfo() {
		if l.GetLedgerId() == t.LedgerID {
			li = l
		}
	}
	if li == nil {
		return VerifyReport{}, fmt.Errorf("%s: %w", t, ErrNotEligible)
	}
	id, ok := attemptOf(li)
	if !ok {
		return VerifyReport{}, fmt.Errorf("%s: %w: no offload attempt recorded", t, ErrNotEligible)
	}
	dataKey, indexKey := format.DataKey(id, t.LedgerID), format.IndexKey(id, t.LedgerID)
	lastEntry, length := li.GetEntries()-1, li.GetSize()
	md, err := p.d.Ledgers.ReadLedger(ctx, t.LedgerID)
	switch {
	case errors.Is(err, metadata.ErrNoSuchLedger):
		md = nil
	case err != nil:
		return VerifyReport{}, err
	default:
		lastEntry, length = md.LastEntryID, md.Length
	}
	rep, err := p.checkObjects(ctx, dataKey, indexKey, lastEntry, length)
	if err != nil {
		return rep, err
	}
	if md != nil && md.Closed() {
		dg := p.planDigests(md)
		if o.Full {
			dg = &digests{full: true, windows: []*window{{first: 0, last: md.LastEntryID}}}
		}
		if _, err := p.readDigests(ctx, t, md, dg); err != nil {
			return rep, err
		}
		err := p.compareEntries(ctx, t, dataKey, indexKey, dg, &rep)
		return rep, err
	}
	rep.Level = LevelObjects
	r, err := format.OpenKeys(ctx, p.d.Store, dataKey, indexKey, nil)
	if err != nil {
		return rep, objectsWrong(err)
	}
	defer r.Close()
	var next int64
	err = r.Read(ctx, 0, r.LastEntryID(), func(id int64, payload []byte) error {
		if id != next {
			return fmt.Errorf("%w: entry %d where %d was expected", ErrVerify, id, next)
		}
		next++
		rep.Entries++
		rep.Bytes += int64(len(payload))
		p.obs.Verified(t, rep.Bytes, length)
		return nil
	})
	if err != nil {
		return rep, objectsWrong(err)
	}
	if rep.Bytes != length {
		return rep, fmt.Errorf("%w: the objects hold %d payload bytes, the index says %d", ErrVerify, rep.Bytes, length)
	}
	return rep, nil
}
