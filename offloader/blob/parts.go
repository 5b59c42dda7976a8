package blob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// MinPartSize is the smallest part S3 accepts (all parts but the last).
const MinPartSize = 5 << 20

// PartsOptions configure a Parts pipeline. The zero value gives the defaults.
type PartsOptions struct {
	// InFlight is the most parts uploading at once (default 2). With the
	// buffer being filled by the caller, memory is about
	// (InFlight + 1) × part size.
	InFlight int
	// CleanupTimeout bounds the Abort that follows a failure; it runs even
	// when the caller's context has ended (default 30 s).
	CleanupTimeout time.Duration
	// Logger receives a warning when that Abort fails (the upload is then
	// left for a sweeper that lists it through MultipartLister); nil
	// discards.
	Logger *slog.Logger
	// OnStart, if set, is called when a part starts uploading, and OnDone
	// when its UploadPart returns (with its size, duration and error);
	// for metrics and progress. They run on the uploading goroutines.
	OnStart func(part int)
	OnDone  func(part, size int, took time.Duration, err error)
}

// Parts is the multipart pipeline: it uploads the parts of one multipart
// upload with at most InFlight of them in flight while the caller fills
// the next, cancels the others at the first failure, and aborts the upload
// when it is given up. The offload upload (package format/upload) feeds it
// one encoded block per part; anything producing part-sized buffers can.
//
//	p, err := blob.StartParts(ctx, store, key, blob.PutOptions{...}, blob.PartsOptions{InFlight: 2})
//	for each part n = 1, 2, ...: err = p.Send(ctx, n, buf, release)  // blocks while InFlight parts upload
//	attrs, err := p.Complete(ctx)                                       // waits for the parts, then completes
//	on any error: p.Abort(ctx)                                          // cancels parts in flight, aborts the upload
//
// Send and Complete are called by one goroutine; Abort may be called from
// another. After a failed Complete the upload is still there: Abort it (a
// completion whose answer was lost may also have created the object).
type Parts struct {
	mp   Multipart
	key  string
	opts PartsOptions
	sem  chan struct{}

	ctx    context.Context // the parts' context: cancelled on failure or Abort
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	err     error // first part failure
	settled bool  // completed or aborted

	abortOnce sync.Once
	abortErr  error

	// waited and completing time Complete (the sending goroutine's).
	waited, completing time.Duration
}

// StartParts creates a multipart upload of key on w and returns its
// pipeline. ctx bounds the create request; the parts run on a context that
// outlives it (ended by Abort, a part failure or the ctx of Complete).
func StartParts(ctx context.Context, w Writer, key string, put PutOptions, opts PartsOptions) (*Parts, error) {
	mp, err := w.CreateMultipart(ctx, key, put)
	if err != nil {
		return nil, fmt.Errorf("create multipart %s: %w", key, err)
	}
	return NewParts(ctx, mp, key, opts), nil
}

// NewParts runs the pipeline on an upload already created.
func NewParts(ctx context.Context, mp Multipart, key string, opts PartsOptions) *Parts {
	if opts.InFlight <= 0 {
		opts.InFlight = 2
	}
	if opts.CleanupTimeout <= 0 {
		opts.CleanupTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Parts{mp: mp, key: key, opts: opts, sem: make(chan struct{}, opts.InFlight)}
	p.ctx, p.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	return p
}

// UploadID is the store's id of the upload (for logs and sweeping).
func (p *Parts) UploadID() string { return p.mp.UploadID() }

// Err returns the first part failure, or nil.
func (p *Parts) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *Parts) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.cancel(err)
}

// Send starts uploading data as part number part. It blocks while InFlight
// parts are uploading; ctx bounds only that wait. data must stay unchanged
// until release is called, which happens exactly once, after the part's
// upload ended or at once when Send fails (release may be nil). Send fails
// with the first earlier part failure, or when ctx ends or the pipeline
// was aborted.
func (p *Parts) Send(ctx context.Context, part int, data []byte, release func()) error {
	return p.send(ctx, part, data, nil, 0, false, release)
}

// SendSummed is Send for a part whose CRC-32C the caller knows: UploadPart
// gets it through WithPartCRC32C (a store sending CRC-32C part checksums
// sends it instead of hashing the part; its server verifies it).
func (p *Parts) SendSummed(ctx context.Context, part int, data []byte, crc32c uint32, release func()) error {
	return p.send(ctx, part, data, nil, crc32c, true, release)
}

// Vectors reports whether the upload takes parts as gather lists
// (UploadsVectors): SendVector then sends the slices as they are.
func (p *Parts) Vectors() bool { return UploadsVectors(p.mp) }

// SendVector is Send (summed: SendSummed with crc32c) for a part given as
// a gather list, the concatenation of data; only for an upload that takes
// them (Vectors). Every slice must stay unchanged until release is called.
func (p *Parts) SendVector(ctx context.Context, part int, data [][]byte, crc32c uint32, summed bool, release func()) error {
	if !p.Vectors() {
		if release != nil {
			release()
		}
		return fmt.Errorf("upload part %d of %s: %w", part, p.key, errNoVectors)
	}
	return p.send(ctx, part, nil, data, crc32c, summed, release)
}

func (p *Parts) send(ctx context.Context, part int, data []byte, vec [][]byte, crc32c uint32, summed bool, release func()) error {
	if release == nil {
		release = func() {}
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		release()
		return context.Cause(ctx)
	case <-p.ctx.Done():
		release()
		return p.stopped()
	}
	if err := p.ctx.Err(); err != nil {
		<-p.sem
		release()
		return p.stopped()
	}
	p.wg.Add(1)
	if p.opts.OnStart != nil {
		p.opts.OnStart(part)
	}
	pctx := p.ctx
	if summed {
		pctx = WithPartCRC32C(pctx, crc32c)
	}
	go func() {
		defer p.wg.Done()
		start := time.Now()
		var err error
		size := len(data)
		if vec != nil {
			err = UploadPartVector(pctx, p.mp, part, vec)
			size = int(VectorLen(vec))
		} else {
			err = p.mp.UploadPart(pctx, part, data)
		}
		took := time.Since(start)
		release()
		<-p.sem
		if p.opts.OnDone != nil {
			p.opts.OnDone(part, size, took, err)
		}
		if err != nil {
			p.fail(fmt.Errorf("upload part %d of %s: %w", part, p.key, err))
		}
	}()
	return nil
}

// stopped is the error of a pipeline whose context has ended.
func (p *Parts) stopped() error {
	if err := p.Err(); err != nil {
		return err
	}
	return context.Cause(p.ctx)
}

// Complete waits for the parts in flight (cancelling them if ctx ends) and
// completes the upload. It returns the first part failure instead if there
// was one. On error the upload is left for Abort.
func (p *Parts) Complete(ctx context.Context) (Attrs, error) {
	stop := context.AfterFunc(ctx, func() { p.cancel(context.Cause(ctx)) })
	start := time.Now()
	p.wg.Wait()
	p.waited = time.Since(start)
	stop()
	if err := p.Err(); err != nil {
		return Attrs{}, err
	}
	if err := p.ctx.Err(); err != nil {
		return Attrs{}, fmt.Errorf("complete %s: %w", p.key, context.Cause(p.ctx))
	}
	if err := ctx.Err(); err != nil {
		return Attrs{}, fmt.Errorf("complete %s: %w", p.key, context.Cause(ctx))
	}
	start = time.Now()
	a, err := p.mp.Complete(ctx)
	p.completing = time.Since(start)
	if err != nil {
		return Attrs{}, fmt.Errorf("complete %s: %w", p.key, err)
	}
	p.mu.Lock()
	p.settled = true
	p.mu.Unlock()
	p.cancel(errCompleted)
	return a, nil
}

// Timings says where the last Complete's time went: waiting for the parts
// still uploading, then the store's completion (zero for what it did not
// reach). For the caller's figures; call it from the goroutine that
// called Complete.
func (p *Parts) Timings() (partsWait, complete time.Duration) { return p.waited, p.completing }

var (
	errCompleted = errors.New("multipart upload completed")
	errAborted   = errors.New("multipart upload aborted")
)

// Abort cancels the parts in flight, waits for them and aborts the upload,
// bounded by CleanupTimeout even when ctx has ended. It returns the abort
// error (an upload already gone is not one); the upload then stays for a
// sweeper. Safe to call more than once and after Complete (a no-op).
func (p *Parts) Abort(ctx context.Context) error {
	p.cancel(errAborted)
	p.wg.Wait()
	p.abortOnce.Do(func() {
		p.mu.Lock()
		done := p.settled
		p.settled = true
		p.mu.Unlock()
		if done {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.CleanupTimeout)
		defer cancel()
		if err := p.mp.Abort(cctx); err != nil && !errors.Is(err, ErrNotFound) {
			p.opts.Logger.Warn("abort of multipart upload failed; a sweeper must remove it", "key", p.key, "upload_id", p.mp.UploadID(), "err", err)
			p.abortErr = fmt.Errorf("abort multipart upload %s of %s: %w", p.mp.UploadID(), p.key, err)
		}
	})
	return p.abortErr
}
