package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// UploadOptions configures UploadStream.
type UploadOptions struct {
	PutOptions
	// PartSize is the part size in bytes; an object no larger is sent with
	// one Put. Default 16 MiB; at least 5 MiB (the S3 minimum).
	PartSize int64
	// Concurrency is the number of parts in flight. Default 4. Memory use
	// is about Concurrency*PartSize.
	Concurrency int
	// AbortTimeout bounds the Abort sent after a failure (it runs even when
	// ctx is cancelled). Default 30 s.
	AbortTimeout time.Duration
	// Logger receives a warning when the cleanup Abort fails. Default:
	// discard.
	Logger *slog.Logger
}

// MinPartSize is the smallest part S3 accepts (all parts but the last).
const MinPartSize = 5 << 20

func (o *UploadOptions) defaults() error {
	if o.PartSize == 0 {
		o.PartSize = 16 << 20
	}
	if o.PartSize < MinPartSize {
		return fmt.Errorf("%w: part size %d below %d", ErrInvalidArgument, o.PartSize, MinPartSize)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.AbortTimeout <= 0 {
		o.AbortTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// UploadStream stores everything r yields under key: one Put when it fits in one
// part, else a multipart upload with up to Concurrency parts in flight. On
// any failure the multipart upload is aborted, so no object and no parts
// are left (unless the abort itself fails; the error then says so and the
// upload ID, and a MultipartLister can sweep it).
func UploadStream(ctx context.Context, w Writer, key string, r io.Reader, opts UploadOptions) (Attrs, error) {
	if err := opts.defaults(); err != nil {
		return Attrs{}, err
	}
	// Read the first part into a buffer that grows with the data, so a
	// small object does not cost a whole part of memory.
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, opts.PartSize))
	if err != nil {
		return Attrs{}, fmt.Errorf("upload %s: read: %w", key, err)
	}
	if n < opts.PartSize {
		return w.Put(ctx, key, bytes.NewReader(buf.Bytes()), n, opts.PutOptions)
	}
	first := buf.Bytes()

	mp, err := w.CreateMultipart(ctx, key, opts.PutOptions)
	if err != nil {
		return Attrs{}, err
	}
	a, err := uploadParts(ctx, mp, r, first, opts)
	if err == nil {
		return a, nil
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.AbortTimeout)
	defer cancel()
	if aerr := mp.Abort(actx); aerr != nil && !errors.Is(aerr, ErrNotFound) {
		opts.Logger.Warn("abort of failed multipart upload failed", "key", key, "upload_id", mp.UploadID(), "err", aerr)
		return Attrs{}, errors.Join(err, fmt.Errorf("abort upload %s of %s: %w", mp.UploadID(), key, aerr))
	}
	return Attrs{}, err
}

func uploadParts(ctx context.Context, mp Multipart, r io.Reader, first []byte, opts UploadOptions) (Attrs, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// Concurrency buffers in all: the first part's plus Concurrency-1.
	pool := make(chan []byte, opts.Concurrency)
	for i := 0; i < opts.Concurrency-1; i++ {
		pool <- nil // allocate lazily
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel(err)
		}
		mu.Unlock()
	}
	send := func(part int, buf []byte, n int) {
		defer wg.Done()
		if err := mp.UploadPart(ctx, part, buf[:n]); err != nil {
			fail(fmt.Errorf("part %d: %w", part, err))
		}
		pool <- buf
	}

	buf, n := first, len(first)
	for part := 1; ; part++ {
		wg.Add(1)
		go send(part, buf, n)
		if part == MaxParts {
			// A further byte would need part MaxParts+1.
			var probe [1]byte
			if k, _ := io.ReadFull(r, probe[:]); k > 0 {
				fail(fmt.Errorf("%w: object needs more than %d parts of %d bytes", ErrInvalidArgument, MaxParts, opts.PartSize))
			}
			break
		}
		var next []byte
		select {
		case next = <-pool:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		if next == nil {
			next = make([]byte, opts.PartSize)
		}
		var err error
		n, err = io.ReadFull(r, next)
		if n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			break
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			fail(fmt.Errorf("read part %d: %w", part+1, err))
			break
		}
		buf = next
		if errors.Is(err, io.ErrUnexpectedEOF) {
			wg.Add(1)
			go send(part+1, buf, n)
			break
		}
	}
	wg.Wait()
	if firstErr != nil {
		return Attrs{}, firstErr
	}
	if err := context.Cause(ctx); err != nil {
		return Attrs{}, err
	}
	return mp.Complete(ctx)
}
