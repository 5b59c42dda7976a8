package pipeline

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/crc32c"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/format/upload"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// copied is the result of the copy step.
type copied struct {
	res   *upload.Result
	dg    *digests
	stats CopyStats
}

// CopyStats says where the copy step's time went, to tell a copy held up
// by the bookies from one held up by the store.
type CopyStats struct {
	// ReadWait is the time the copy waited for the next entry from the
	// bookies (the read-ahead window was empty).
	ReadWait time.Duration
	// Add is the time spent handing entries to the encoder: copying them
	// into the block and, when a block is full and PartsInFlight parts are
	// still uploading, waiting for a free block buffer.
	Add time.Duration
	// Finish is the time from the last entry to the index written: the
	// last parts uploading, the multipart completion and the index PUT,
	// which FinishSplit (the upload's own account) splits it into.
	Finish      time.Duration
	FinishSplit upload.FinishTimes
}

// writeTracker records whether any write reached the store: a copy that
// failed before one did left nothing behind.
type writeTracker struct {
	blob.Writer
	wrote atomic.Bool
}

// UsesPartCRC32C answers for the wrapped store.
func (w *writeTracker) UsesPartCRC32C() bool { return blob.UsesPartCRC32C(w.Writer) }

func (w *writeTracker) Put(ctx context.Context, key string, r io.Reader, size int64, opts blob.PutOptions) (blob.Attrs, error) {
	a, err := w.Writer.Put(ctx, key, r, size, opts)
	if err == nil {
		w.wrote.Store(true)
	}
	return a, err
}

func (w *writeTracker) CreateMultipart(ctx context.Context, key string, opts blob.PutOptions) (blob.Multipart, error) {
	m, err := w.Writer.CreateMultipart(ctx, key, opts)
	if err == nil {
		w.wrote.Store(true)
	}
	return m, err
}

// copy streams the ledger's entries from the bookies into an upload
// session: the BookKeeper stream keeps ReadWindowBytes of reads in flight
// while the session uploads up to PartsInFlight parts, so reading and
// uploading overlap and memory stays at about (PartsInFlight+1) blocks plus
// the read window. Every entry's CRC-32C and length in the verification
// windows is kept for the verify step.
func (p *Pipeline) copy(ctx context.Context, t mledger.LedgerRef, md *metadata.LedgerMetadata, id uuid.UUID, tw *writeTracker) (*copied, error) {
	ixmd, err := indexMetadata(md)
	if err != nil {
		return nil, err
	}
	up, err := upload.New(tw, &p.upo)
	if err != nil {
		return nil, err
	}
	l, err := p.d.Bookies.OpenReader(md)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotEligible, err)
	}
	sess, err := up.Begin(ctx, upload.Request{
		UUID:              id,
		Ledger:            format.Ledger{ID: md.LedgerID, LastEntryID: md.LastEntryID, Length: md.Length},
		Metadata:          ixmd,
		ManagedLedgerName: t.ML,
	})
	if err != nil {
		return nil, err
	}
	dg := p.planDigests(md)
	mid := md.LastEntryID / 2
	var done int64
	var addErr, fpErr error // errors of the upload and the failpoint, as opposed to the read
	var st CopyStats
	last := time.Now() // when the copy last stopped waiting for the bookies
	err = l.ReadRange(ctx, 0, -1, client.StreamOptions{WindowBytes: p.o.ReadWindowBytes, ReuseBuffers: true}, func(e client.Entry) error {
		got := time.Now()
		st.ReadWait += got.Sub(last)
		p.m.bookies.Add(got.Sub(last).Seconds())
		dg.add(e.EntryID, e.Payload, e.PayloadSum)
		switch {
		case e.PayloadSum.OK && sess.Gathers():
			// The part refers to the payload in its bookie frame, which
			// the stream then does not reuse until the part is uploaded:
			// no copy into a block buffer.
			addErr = sess.AddKept(ctx, e.EntryID, e.Payload, e.PayloadSum.CRC32C, e.Keep())
		case e.PayloadSum.OK:
			// The bookie's CRC, checked against its digest: the part's
			// CRC-32C is combined from it and the store verifies it.
			addErr = sess.AddSummed(ctx, e.EntryID, e.Payload, e.PayloadSum.CRC32C)
		default:
			addErr = sess.Add(ctx, e.EntryID, e.Payload)
		}
		last = time.Now()
		st.Add += last.Sub(got)
		p.m.add.Add(last.Sub(got).Seconds())
		if addErr != nil {
			return addErr
		}
		done += int64(len(e.Payload))
		p.obs.Copied(t, done, md.Length)
		if e.EntryID == mid {
			if fpErr = p.hit(ctx, FPMidCopy, t); fpErr != nil {
				return fpErr
			}
		}
		return nil
	})
	switch {
	case addErr != nil:
		return nil, addErr
	case fpErr != nil:
		_ = sess.Abort(ctx)
		return nil, fpErr
	case err != nil:
		_ = sess.Abort(ctx)
		return nil, fmt.Errorf("read from the bookies after %d bytes: %w", done, err)
	}
	fin := time.Now()
	res, err := sess.Finish(ctx)
	if err != nil {
		return nil, err
	}
	st.Finish = time.Since(fin)
	st.FinishSplit = res.Finish
	p.m.finish.Add(st.Finish.Seconds())
	return &copied{res: res, dg: dg, stats: st}, nil
}

// indexMetadata is the ledger metadata for the index, with the creation
// time BookKeeper's client reports (the stored ctime, else the znode's
// creation time), as Pulsar's offloader writes it.
func indexMetadata(md *metadata.LedgerMetadata) (*bkproto.LedgerMetadataFormat, error) {
	if !md.HasPassword {
		return nil, fmt.Errorf("%w: ledger %d metadata (format v%d) records no digest type; Pulsar never writes such ledgers",
			ErrNotEligible, md.LedgerID, md.FormatVersion)
	}
	bk := md.Proto()
	bk.Ctime = proto.Int64(md.Ctime)
	return format.IndexMetadata(bk)
}

// window is a run of consecutive entries whose digests are kept.
type window struct {
	first, last int64
	sums        []uint64 // CRC-32C << 32 | length, of entry first+i
	bytes       int64
}

// digests holds the per-entry checks of the verification windows.
type digests struct {
	windows []*window
	full    bool
	cur     int
}

// planDigests chooses what verify compares: every entry of a ledger up to
// FullVerifyBytes (unless AlwaysSample), else three windows of about one block's worth of
// entries each: the first, a random place in the middle, the last.
func (p *Pipeline) planDigests(md *metadata.LedgerMetadata) *digests {
	n := md.LastEntryID + 1
	if n <= 0 {
		return &digests{full: true}
	}
	if !p.o.AlwaysSample && md.Length <= p.o.FullVerifyBytes {
		return &digests{full: true, windows: []*window{{first: 0, last: n - 1}}}
	}
	k := max(int64(1), (n*int64(p.o.BlockSize)+md.Length-1)/max(md.Length, 1))
	if 3*k >= n {
		return &digests{full: true, windows: []*window{{first: 0, last: n - 1}}}
	}
	r := k + p.rand(n-3*k+1) // in [k, n-2k]
	return &digests{windows: []*window{
		{first: 0, last: k - 1},
		{first: r, last: r + k - 1},
		{first: n - k, last: n - 1},
	}}
}

// add records entry id (entries arrive in order), with the payload's
// CRC-32C when the bookie digest check gave it.
func (d *digests) add(id int64, payload []byte, ps digest.PayloadSum) {
	for d.cur < len(d.windows) && id > d.windows[d.cur].last {
		d.cur++
	}
	if d.cur == len(d.windows) || id < d.windows[d.cur].first {
		return
	}
	w := d.windows[d.cur]
	if ps.OK {
		w.sums = append(w.sums, sumOf(ps.CRC32C, len(payload)))
	} else {
		w.sums = append(w.sums, sum(payload))
	}
	w.bytes += int64(len(payload))
}

// bytes is the payload the windows cover.
func (d *digests) bytes() (n int64) {
	for _, w := range d.windows {
		n += w.bytes
	}
	return n
}

// sum is an entry's verification record: its payload's CRC-32C and
// length.
func sum(payload []byte) uint64 { return sumOf(crc32c.Checksum(payload), len(payload)) }

func sumOf(crc uint32, n int) uint64 { return uint64(crc)<<32 | uint64(uint32(n)) }
