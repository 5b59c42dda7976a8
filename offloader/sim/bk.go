package sim

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/retry"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
)

// bkLedger is one simulated BookKeeper ledger.
type bkLedger struct {
	id      int64
	entries [][]byte
	length  int64
	closed  bool
	deleted bool
	ctime   time.Time
}

// bkModel holds the BookKeeper ledgers (metadata and entries).
type bkModel struct {
	w       *World
	ledgers map[int64]*bkLedger
	next    int64
}

// create makes a new open ledger (w.mu held).
func (b *bkModel) create() *bkLedger {
	l := &bkLedger{id: b.next, ctime: b.w.now()}
	b.next++
	b.ledgers[l.id] = l
	return l
}

// payload is entry e of ledger l's deterministic content.
func payload(l, e int64) []byte {
	return fmt.Appendf(nil, "ledger %d entry %d %032d", l, e, l*1000+e)
}

func (l *bkLedger) add() int64 {
	e := int64(len(l.entries))
	p := payload(l.id, e)
	l.entries = append(l.entries, p)
	l.length += int64(len(p))
	return e
}

func (l *bkLedger) metadata() *metadata.LedgerMetadata {
	md := &metadata.LedgerMetadata{LedgerID: l.id, FormatVersion: 3, EnsembleSize: 1, WriteQuorum: 1, AckQuorum: 1,
		State: metadata.StateOpen, LastEntryID: -1, Segments: []metadata.Segment{{FirstEntryID: 0, Bookies: []string{"bookie-1:3181"}}},
		HasPassword: true, DigestType: digest.CRC32C, Password: []byte{}, Ctime: l.ctime.UnixMilli(), CtimeStored: true, Version: 0}
	if l.closed {
		md.State, md.LastEntryID, md.Length = metadata.StateClosed, int64(len(l.entries))-1, l.length
	}
	return md
}

// delete deletes ledger id for actor who, after checking that its
// objects are verified (w.mu held).
func (b *bkModel) delete(who string, id int64) {
	l := b.ledgers[id]
	if l == nil || l.deleted {
		return
	}
	b.w.checkBKDelete(who, id)
	l.deleted = true
	b.w.tracef("  bookkeeper ledger %d deleted by %s", id, who)
}

// bkClient is one actor's view of BookKeeper: pipeline.LedgerStore and
// pipeline.Bookies; every call is a yield point.
type bkClient struct {
	w *World
	a *actor
}

var (
	_ pipeline.LedgerStore = (*bkClient)(nil)
	_ pipeline.Bookies     = (*bkClient)(nil)
)

func (c *bkClient) ReadLedger(ctx context.Context, id int64) (*metadata.LedgerMetadata, error) {
	if _, err := c.w.gate(c.a, fmt.Sprintf("bk read-metadata L%d", id)); err != nil {
		return nil, err
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	l := c.w.bk.ledgers[id]
	if l == nil || l.deleted {
		return nil, fmt.Errorf("ledger %d: %w", id, metadata.ErrNoSuchLedger)
	}
	return l.metadata(), nil
}

func (c *bkClient) DeleteLedger(ctx context.Context, id int64, want metadata.Expect) (metadata.DeleteResult, error) {
	if _, err := c.w.gate(c.a, fmt.Sprintf("bk delete L%d", id)); err != nil {
		return 0, err
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	l := c.w.bk.ledgers[id]
	switch {
	case l == nil || l.deleted:
		return metadata.AlreadyDeleted, nil
	case !l.closed:
		return 0, fmt.Errorf("delete ledger %d: %w", id, metadata.ErrNotClosed)
	case int64(len(l.entries))-1 != want.LastEntryID || l.length != want.Length:
		return 0, fmt.Errorf("delete ledger %d: %w", id, metadata.ErrChanged)
	}
	c.w.bk.delete(c.a.name, id)
	return metadata.Deleted, nil
}

func (c *bkClient) OpenReader(md *metadata.LedgerMetadata) (client.Reader, error) {
	return &bkReader{c: c, id: md.LedgerID, last: md.LastEntryID}, nil
}

type bkReader struct {
	c    *bkClient
	id   int64
	last int64
}

// ReadRange reads the entries in one yield point.
func (r *bkReader) ReadRange(ctx context.Context, from, to int64, _ client.StreamOptions, fn func(client.Entry) error) error {
	if to < 0 {
		to = r.last
	}
	if _, err := r.c.w.gate(r.c.a, fmt.Sprintf("bk read-entries L%d %d..%d", r.id, from, to)); err != nil {
		return err
	}
	r.c.w.mu.Lock()
	l := r.c.w.bk.ledgers[r.id]
	if l == nil || l.deleted || to >= int64(len(l.entries)) {
		r.c.w.mu.Unlock()
		return fmt.Errorf("ledger %d entries %d..%d: %w", r.id, from, to, client.ErrEntryMissing)
	}
	es := l.entries[:to+1]
	r.c.w.mu.Unlock()
	var length int64
	for e := int64(0); e <= to; e++ {
		length += int64(len(es[e]))
		if e < from {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(client.Entry{LedgerID: r.id, EntryID: e, LastAddConfirmed: r.last, Length: length,
			Payload: append([]byte(nil), es[e]...), Bookie: "bookie-1:3181"}); err != nil {
			return err
		}
	}
	return nil
}

// gatedStore is one actor's view of the bucket: every request is a
// yield point.
type gatedStore struct {
	w *World
	a *actor
}

var (
	_ blob.Store           = (*gatedStore)(nil)
	_ blob.MultipartLister = (*gatedStore)(nil)
)

// UsesPartCRC32C answers for the bucket.
func (s *gatedStore) UsesPartCRC32C() bool { return blob.UsesPartCRC32C(s.w.store) }

func (s *gatedStore) g(op, key string) error {
	_, err := s.w.gate(s.a, "store "+op+" "+key)
	return err
}

func (s *gatedStore) Head(ctx context.Context, key string) (blob.Attrs, error) {
	if err := s.g("head", key); err != nil {
		return blob.Attrs{}, err
	}
	return s.w.store.Head(ctx, key)
}

func (s *gatedStore) Get(ctx context.Context, key string) (io.ReadCloser, blob.Attrs, error) {
	if err := s.g("get", key); err != nil {
		return nil, blob.Attrs{}, err
	}
	return s.w.store.Get(ctx, key)
}

func (s *gatedStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, blob.Attrs, error) {
	if err := s.g(fmt.Sprintf("get-range %d+%d", off, length), key); err != nil {
		return nil, blob.Attrs{}, err
	}
	return s.w.store.GetRange(ctx, key, off, length)
}

func (s *gatedStore) Iter(ctx context.Context, prefix string, fn func(blob.Attrs) error) error {
	if err := s.g("list", prefix); err != nil {
		return err
	}
	return s.w.store.Iter(ctx, prefix, fn)
}

func (s *gatedStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts blob.PutOptions) (blob.Attrs, error) {
	if err := s.g("put", key); err != nil {
		return blob.Attrs{}, err
	}
	return s.w.store.Put(ctx, key, r, size, opts)
}

func (s *gatedStore) CreateMultipart(ctx context.Context, key string, opts blob.PutOptions) (blob.Multipart, error) {
	if err := s.g("create-multipart", key); err != nil {
		return nil, err
	}
	m, err := s.w.store.CreateMultipart(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	return &gatedMultipart{s: s, key: key, m: m}, nil
}

func (s *gatedStore) Delete(ctx context.Context, key string) error {
	if err := s.g("delete", key); err != nil {
		return err
	}
	s.w.mu.Lock()
	if _, _, ok := s.w.store.Object(key); ok {
		s.w.tracef("  object %s deleted by %s", s.w.aliasKeys(key), s.a.name)
		s.w.deletedBy[key] = fmt.Sprintf("%s at step %d", s.a.name, s.w.step)
	}
	s.w.mu.Unlock()
	return s.w.store.Delete(ctx, key)
}

func (s *gatedStore) ListMultipart(ctx context.Context, prefix string) ([]blob.Upload, error) {
	if err := s.g("list-multipart", prefix); err != nil {
		return nil, err
	}
	return s.w.store.ListMultipart(ctx, prefix)
}

func (s *gatedStore) AbortMultipart(ctx context.Context, key, uploadID string) error {
	if err := s.g("abort-multipart", key); err != nil {
		return err
	}
	return s.w.store.AbortMultipart(ctx, key, uploadID)
}

func (s *gatedStore) Name() string { return "sim://sim" }
func (s *gatedStore) Close() error { return nil }

type gatedMultipart struct {
	s   *gatedStore
	key string
	m   blob.Multipart
}

func (m *gatedMultipart) UploadID() string { return m.m.UploadID() }

func (m *gatedMultipart) UploadPart(ctx context.Context, n int, data []byte) error {
	if err := m.s.g(fmt.Sprintf("upload-part %d", n), m.key); err != nil {
		return err
	}
	return m.m.UploadPart(ctx, n, data)
}

func (m *gatedMultipart) Complete(ctx context.Context) (blob.Attrs, error) {
	if err := m.s.g("complete-multipart", m.key); err != nil {
		return blob.Attrs{}, err
	}
	return m.m.Complete(ctx)
}

func (m *gatedMultipart) Abort(ctx context.Context) error {
	if err := m.s.g("abort", m.key); err != nil {
		return err
	}
	return m.m.Abort(ctx)
}

func retryBackoff() retry.Backoff {
	return retry.Backoff{Initial: time.Nanosecond, Max: time.Nanosecond}
}
