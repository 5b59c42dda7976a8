package upload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
)

// MultipartMode chooses how the data object is written.
type MultipartMode int

const (
	// MultipartAuto (the default) uses a single PUT when the whole ledger
	// fits in one block and a multipart upload otherwise.
	MultipartAuto MultipartMode = iota
	// MultipartAlways always uses a multipart upload, as Pulsar does.
	MultipartAlways
)

// Options configure an Uploader. The zero value gives the defaults.
type Options struct {
	// MaxBlockSize is the block (= part) size in bytes; every block but the
	// last has exactly this size. Default format.DefaultMaxBlockSize
	// (64 MiB, Pulsar's default); at least format.MinPartSize (5 MiB).
	MaxBlockSize int
	// PartsInFlight is how many parts upload concurrently per ledger while
	// the next block is filled (default 2).
	PartsInFlight int
	// Pool supplies block buffers. Share one Pool between Uploaders to bound
	// the memory of concurrent uploads; its BlockSize must be at least
	// MaxBlockSize. Nil: each upload gets its own pool of PartsInFlight+1
	// buffers.
	Pool *format.Pool
	// Multipart chooses single PUT or multipart for one-block ledgers.
	Multipart MultipartMode
	// Info is the informational metadata stored with both objects. An empty
	// SoftwareVersion becomes "tierkeeper-<module version>".
	Info format.ObjectInfo
	// CleanupTimeout bounds the abort/delete that follows a failure, which
	// runs even when the caller's context has ended (default 30 s).
	CleanupTimeout time.Duration
	// Logger receives progress at debug level and cleanup failures at warn
	// level; nil discards.
	Logger *slog.Logger
	// Registerer receives the tierkeeper_upload_* metrics; Uploaders
	// sharing a registerer share the series. Default: none.
	Registerer prometheus.Registerer
}

// Uploader writes ledgers to one store. Safe for concurrent use; each
// Upload/Session is independent.
type Uploader struct {
	store blob.Writer
	opts  Options
	m     *uploadMetrics
}

// New returns an Uploader writing to store.
func New(store blob.Writer, opts *Options) (*Uploader, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBlockSize == 0 {
		o.MaxBlockSize = format.DefaultMaxBlockSize
	}
	if o.MaxBlockSize < format.MinPartSize || o.MaxBlockSize > format.MaxBlockSizeLimit {
		return nil, fmt.Errorf("upload: MaxBlockSize %d out of range [%d, %d]", o.MaxBlockSize, format.MinPartSize, format.MaxBlockSizeLimit)
	}
	if o.PartsInFlight <= 0 {
		o.PartsInFlight = 2
	}
	if o.Pool != nil && o.Pool.BlockSize() < o.MaxBlockSize {
		return nil, fmt.Errorf("upload: pool buffers of %d bytes are smaller than MaxBlockSize %d", o.Pool.BlockSize(), o.MaxBlockSize)
	}
	if o.CleanupTimeout <= 0 {
		o.CleanupTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	if o.Info.SoftwareVersion == "" {
		o.Info.SoftwareVersion = "tierkeeper-" + moduleVersion()
	}
	return &Uploader{store: store, opts: o, m: m}, nil
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Request describes one ledger upload.
type Request struct {
	// UUID names the objects; record it in the managed-ledger metadata
	// before uploading so a crash leaves findable objects.
	UUID uuid.UUID
	// Ledger is the ledger id, last entry id and length (from BK metadata).
	Ledger format.Ledger
	// Metadata is the ledger metadata for the index, normally
	// format.IndexMetadata(bkMetadata). Its lastEntryId and length must
	// equal Ledger's.
	Metadata *bkproto.LedgerMetadataFormat
	// ManagedLedgerName is stored as "managedledgername" metadata, as the
	// broker does; optional.
	ManagedLedgerName string
}

// Result describes uploaded objects.
type Result struct {
	DataKey  string
	IndexKey string
	// DataObjectLength is the data object's exact size.
	DataObjectLength int64
	// Index is the index as uploaded and IndexBytes its encoding.
	Index      *format.Index
	IndexBytes []byte
	// Blocks is the number of data blocks (multipart parts).
	Blocks int
	// Multipart tells whether the data object was a multipart upload.
	Multipart bool
	// DataMetadata and IndexMetadata are the user metadata sent.
	DataMetadata  map[string]string
	IndexMetadata map[string]string
	// Finish says where Finish's time went: waiting for the parts still
	// uploading (a single block: its PUT), the store's completion of the
	// multipart upload, the index PUT.
	Finish FinishTimes
}

// FinishTimes are the parts of a Session's Finish, for the caller's figures.
type FinishTimes struct {
	LastParts, Complete, Index time.Duration
}

// EntrySource yields a ledger's entries in order; Next returns io.EOF after
// the last one. The payload may be reused after the next call.
type EntrySource interface {
	Next(ctx context.Context) (entryID int64, payload []byte, err error)
}

// Upload writes a whole ledger from src and returns the objects written.
// On error nothing is left behind (see Session).
func (u *Uploader) Upload(ctx context.Context, req Request, src EntrySource) (*Result, error) {
	s, err := u.Begin(ctx, req)
	if err != nil {
		return nil, err
	}
	for {
		id, p, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			err = fmt.Errorf("upload ledger %d: read entries: %w", req.Ledger.ID, err)
			s.abort(ctx, stageEncode, err)
			return nil, err
		}
		if err := s.Add(ctx, id, p); err != nil {
			return nil, err
		}
	}
	return s.Finish(ctx)
}

// Session is one ledger upload driven entry by entry: Begin, Add for
// entries 0..LastEntryID, then Finish. Any error from Add or Finish aborts
// the session and removes what it wrote (multipart upload aborted, data
// object deleted); call Abort to give up early. Not safe for concurrent use.
type Session struct {
	u      *Uploader
	req    Request
	res    Result
	enc    *format.Encoder
	pool   *format.Pool
	single bool
	crc    bool        // multipart to a store that uses part CRC-32Cs: blocks carry one
	gather bool        // multipart to a store taking gather lists: AddKept payloads are not copied
	parts  *blob.Parts // multipart: the pipeline the blocks go through
	log    *slog.Logger

	held *format.Block // the single block of a single-PUT ledger
	done bool
}

// Begin validates req and starts an upload (for multipart: creates the
// multipart upload with the data object's metadata).
func (u *Uploader) Begin(ctx context.Context, req Request) (*Session, error) {
	if err := u.validate(req); err != nil {
		return nil, err
	}
	o := u.opts
	s := &Session{
		u:   u,
		req: req,
		log: o.Logger.With("ledger", req.Ledger.ID, "uuid", req.UUID.String()),
	}
	info := o.Info
	info.ManagedLedgerName = req.ManagedLedgerName
	s.res = Result{
		DataKey:       format.DataKey(req.UUID, req.Ledger.ID),
		IndexKey:      format.IndexKey(req.UUID, req.Ledger.ID),
		DataMetadata:  info.Metadata(format.RoleData),
		IndexMetadata: info.Metadata(format.RoleIndex),
	}
	s.pool = o.Pool
	if s.pool == nil {
		s.pool = format.NewPool(o.MaxBlockSize, o.PartsInFlight+1)
	}
	l := req.Ledger
	s.single = o.Multipart == MultipartAuto &&
		(l.LastEntryID+1)*format.RecordHeaderSize+l.Length+format.BlockHeaderSize <= int64(o.MaxBlockSize)
	// Block CRCs only for parts of a store that sends or checks them (a
	// single PUT carries none: the store checksums the body itself).
	s.crc = !s.single && blob.UsesPartCRC32C(u.store)
	eo := format.EncoderOptions{MaxBlockSize: o.MaxBlockSize, NoCRC32C: !s.crc}
	enc, err := format.NewEncoder(l, eo, s.pool, s.emit)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	s.enc = enc
	if !s.single {
		m := u.m
		parts, err := blob.StartParts(ctx, u.store, s.res.DataKey,
			blob.PutOptions{Metadata: s.res.DataMetadata, ContentType: "application/octet-stream"},
			blob.PartsOptions{
				InFlight:       o.PartsInFlight,
				CleanupTimeout: o.CleanupTimeout,
				Logger:         s.log,
				OnStart:        func(int) { m.inFlight.Inc() },
				OnDone: func(part, n int, took time.Duration, err error) {
					m.inFlight.Dec()
					if err != nil {
						return
					}
					m.partDuration.Observe(took.Seconds())
					m.parts.Inc()
					m.bytes.Add(float64(n))
					s.log.Debug("part uploaded", "part", part, "bytes", n, "seconds", took.Seconds())
				},
			})
		if err != nil {
			m.failures.WithLabelValues(stageCreate).Inc()
			return nil, fmt.Errorf("upload ledger %d: %w", l.ID, err)
		}
		s.parts = parts
		s.res.Multipart = true
		s.log.Debug("multipart upload created", "key", s.res.DataKey, "upload_id", parts.UploadID())
		if parts.Vectors() {
			// The store takes gather lists: the same encoder, gathering
			// (the options were checked above; it has not started).
			eo.Gather = true
			if s.enc, err = format.NewEncoder(l, eo, s.pool, s.emit); err != nil {
				_ = parts.Abort(ctx)
				return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
			}
			s.gather = true
		}
	}
	return s, nil
}

func (u *Uploader) validate(req Request) error {
	md := req.Metadata
	switch {
	case req.UUID == uuid.Nil:
		return fmt.Errorf("%w: no UUID", ErrInvalidRequest)
	case md == nil:
		return fmt.Errorf("%w: no ledger metadata", ErrInvalidRequest)
	case md.GetState() != bkproto.LedgerMetadataFormat_CLOSED:
		return fmt.Errorf("%w: ledger %d metadata state %v, want CLOSED", ErrInvalidRequest, req.Ledger.ID, md.GetState())
	case md.LastEntryId == nil || md.GetLastEntryId() != req.Ledger.LastEntryID:
		return fmt.Errorf("%w: ledger %d: metadata last entry %d, request says %d", ErrInvalidRequest, req.Ledger.ID, md.GetLastEntryId(), req.Ledger.LastEntryID)
	case md.GetLength() != req.Ledger.Length:
		return fmt.Errorf("%w: ledger %d: metadata length %d, request says %d", ErrInvalidRequest, req.Ledger.ID, md.GetLength(), req.Ledger.Length)
	}
	if _, err := proto.Marshal(md); err != nil {
		return fmt.Errorf("%w: ledger %d metadata: %v", ErrInvalidRequest, req.Ledger.ID, err)
	}
	return nil
}

// Keys returns the data and index keys of this upload.
func (s *Session) Keys() (data, index string) { return s.res.DataKey, s.res.IndexKey }

// Add appends the next entry (ids 0, 1, 2, ...). It blocks when
// PartsInFlight parts are uploading and the next block is full.
func (s *Session) Add(ctx context.Context, entryID int64, payload []byte) error {
	if s.done {
		return ErrSessionDone
	}
	return s.added(ctx, s.enc.Add(ctx, entryID, payload))
}

// AddSummed is Add for a payload whose CRC-32C the caller knows from a
// check it already made (a bookie entry's CRC32C digest, see
// client.Entry.PayloadSum): the part's CRC-32C is combined from it instead
// of hashing the payload again, and the store verifies the part against
// that CRC, so the copy into the block is checked too.
func (s *Session) AddSummed(ctx context.Context, entryID int64, payload []byte, crc32c uint32) error {
	if s.done {
		return ErrSessionDone
	}
	return s.added(ctx, s.enc.AddSummed(ctx, entryID, payload, crc32c))
}

// AddKept is AddSummed for a payload that stays valid until release is
// called (a bookie frame taken from the stream, client.Entry.Keep): when
// the session gathers (Gathers), the part refers to it instead of a copy
// and release is called once the part has been uploaded or given up;
// otherwise it is copied and released at once. release is called exactly
// once in every case.
func (s *Session) AddKept(ctx context.Context, entryID int64, payload []byte, crc32c uint32, release func()) error {
	if s.done {
		release()
		return ErrSessionDone
	}
	return s.added(ctx, s.enc.AddKept(ctx, entryID, payload, crc32c, release))
}

// Gathers reports whether the parts are sent as gather lists (a
// multipart upload to a store that takes them, blob.UploadsVectors):
// payloads given with AddKept are then held, not copied, until their part
// is uploaded.
func (s *Session) Gathers() bool { return s.gather }

// added ends an Add: the encoder's error, else a part's, aborts the
// session.
func (s *Session) added(ctx context.Context, err error) error {
	if err == nil {
		err = s.partErr()
	}
	if err != nil {
		err = fmt.Errorf("upload ledger %d: %w", s.req.Ledger.ID, err)
		s.abort(ctx, s.stage(), err)
		return err
	}
	return nil
}

func (s *Session) stage() string {
	if s.partErr() != nil {
		return stagePart
	}
	return stageEncode
}

// emit receives finished blocks from the encoder: one part each, through
// the multipart pipeline (which blocks while PartsInFlight parts upload),
// with the block's CRC-32C (a store sending CRC-32C part checksums sends
// it rather than hashing the block again; a store that does not use one gets
// none, and no block CRC is computed). The block's buffer goes back to the
// pool once its part is done.
func (s *Session) emit(ctx context.Context, blk format.Block) error {
	if s.single {
		s.held = &blk
		return nil
	}
	if blk.Vector != nil {
		return s.parts.SendVector(ctx, blk.PartNumber, blk.Vector, blk.CRC32C, s.crc, func() {
			s.pool.Put(blk.Data)
			blk.ReleaseKept()
		})
	}
	release := func() { s.pool.Put(blk.Data) }
	if !s.crc {
		return s.parts.Send(ctx, blk.PartNumber, blk.Data, release)
	}
	return s.parts.SendSummed(ctx, blk.PartNumber, blk.Data, blk.CRC32C, release)
}

func (s *Session) partErr() error {
	if s.parts == nil {
		return nil
	}
	return s.parts.Err()
}

// Finish uploads the last block, completes the data object, writes the
// index and returns the result.
func (s *Session) Finish(ctx context.Context) (*Result, error) {
	if s.done {
		return nil, ErrSessionDone
	}
	id := s.req.Ledger.ID
	layout, err := s.enc.Finish(ctx)
	if err != nil {
		err = fmt.Errorf("upload ledger %d: %w", id, err)
		s.abort(ctx, s.stage(), err)
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		err = fmt.Errorf("upload ledger %d: %w", id, context.Cause(ctx))
		s.abort(ctx, stageComplete, err)
		return nil, err
	}
	s.res.DataObjectLength = layout.DataObjectLength
	s.res.Blocks = len(layout.Blocks)

	var attrs blob.Attrs
	if s.single {
		blk := s.held
		s.held = nil
		start := time.Now()
		attrs, err = s.u.store.Put(ctx, s.res.DataKey, bytes.NewReader(blk.Data), int64(len(blk.Data)),
			blob.PutOptions{Metadata: s.res.DataMetadata, ContentType: "application/octet-stream"})
		s.pool.Put(blk.Data)
		if err != nil {
			err = fmt.Errorf("upload ledger %d: put %s: %w", id, s.res.DataKey, err)
			s.abort(ctx, stagePut, err)
			return nil, err
		}
		s.res.Finish.LastParts = time.Since(start)
		s.u.m.partDuration.Observe(s.res.Finish.LastParts.Seconds())
		s.u.m.bytes.Add(float64(layout.DataObjectLength))
	} else {
		// Waits for the parts in flight (given up if ctx ends), then
		// completes.
		attrs, err = s.parts.Complete(ctx)
		s.res.Finish.LastParts, s.res.Finish.Complete = s.parts.Timings()
		if err != nil {
			err = fmt.Errorf("upload ledger %d: %w", id, err)
			if s.partErr() != nil {
				s.abort(ctx, stagePart, err)
				return nil, err
			}
			// The completion may have happened with the reply lost: delete
			// the object too. The UUID is this attempt's own.
			s.abort(ctx, stageComplete, err)
			s.cleanupDelete(ctx, s.res.DataKey)
			return nil, err
		}
	}
	s.u.m.objects.WithLabelValues("data").Inc()
	if attrs.Size != 0 && attrs.Size != layout.DataObjectLength {
		err = fmt.Errorf("upload ledger %d: %w: stored %s has %d bytes, wrote %d", id, ErrVerify, s.res.DataKey, attrs.Size, layout.DataObjectLength)
		s.abort(ctx, stageComplete, err)
		s.cleanupDelete(ctx, s.res.DataKey)
		return nil, err
	}

	ix := layout.Index(s.req.Metadata)
	raw, err := ix.Marshal()
	if err == nil {
		start := time.Now()
		_, err = s.u.store.Put(ctx, s.res.IndexKey, bytes.NewReader(raw), int64(len(raw)),
			blob.PutOptions{Metadata: s.res.IndexMetadata, ContentType: "application/octet-stream"})
		s.res.Finish.Index = time.Since(start)
	}
	if err != nil {
		err = fmt.Errorf("upload ledger %d: put index %s: %w", id, s.res.IndexKey, err)
		s.abort(ctx, stageIndex, err)
		s.cleanupDelete(ctx, s.res.DataKey)
		return nil, err
	}
	s.u.m.objects.WithLabelValues("index").Inc()
	s.u.m.bytes.Add(float64(len(raw)))
	s.res.Index, s.res.IndexBytes = ix, raw
	s.done = true
	s.log.Debug("ledger uploaded", "data_key", s.res.DataKey, "bytes", s.res.DataObjectLength, "blocks", s.res.Blocks, "multipart", s.res.Multipart)
	res := s.res
	return &res, nil
}

// Abort gives up the upload: parts in flight are cancelled, the multipart
// upload is aborted and buffers are released. It returns the abort error,
// if any. Safe to call after Finish (then a no-op).
func (s *Session) Abort(ctx context.Context) error {
	if s.done {
		return nil
	}
	return s.abort(ctx, "", errors.New("upload aborted"))
}

// abort tears the session down after cause; stage "" records no failure.
func (s *Session) abort(ctx context.Context, stage string, cause error) error {
	if s.done {
		return nil
	}
	s.done = true
	if stage != "" {
		s.u.m.failures.WithLabelValues(stage).Inc()
	}
	var err error
	if s.parts != nil {
		// Cancels the parts in flight, waits for them (their buffers go
		// back to the pool) and aborts the upload.
		err = s.parts.Abort(ctx)
	}
	s.enc.Abort()
	if s.held != nil {
		s.pool.Put(s.held.Data)
		s.held = nil
	}
	if err == nil && s.parts != nil {
		s.log.Debug("multipart upload aborted", "key", s.res.DataKey, "cause", cause)
	}
	return err
}

// cleanupDelete removes an object after a failure, even if ctx has ended.
func (s *Session) cleanupDelete(ctx context.Context, key string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.u.opts.CleanupTimeout)
	defer cancel()
	if err := s.u.store.Delete(cctx, key); err != nil {
		s.log.Warn("delete after failed upload failed; the sweeper will remove it", "key", key, "err", err)
	}
}
