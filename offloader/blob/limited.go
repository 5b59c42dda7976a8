package blob

import (
	"context"
	"io"
)

// Limited returns a Store that takes tokens from l before every call: one
// request token per call, upload-byte tokens for Put bodies (as they are
// read) and part data (before the part is sent), download-byte tokens as Get
// bodies are read. It works with any provider; for HTTP providers the
// provider's Limiter option is more precise (it paces what goes on the wire,
// retries included). The result implements MultipartLister when s does.
// With a nil l it returns s.
func Limited(s Store, l *Limiter) Store {
	if l == nil {
		return s
	}
	ls := &limitedStore{s: s, l: l}
	if ml, ok := s.(MultipartLister); ok {
		return &limitedListerStore{ls, ml}
	}
	return ls
}

type limitedStore struct {
	s Store
	l *Limiter
}

var (
	_ Store           = (*limitedStore)(nil)
	_ Store           = (*limitedListerStore)(nil)
	_ MultipartLister = (*limitedListerStore)(nil)
	_ VectorMultipart = (*limitedMultipart)(nil)
	_ PartCRC32CUser  = (*limitedStore)(nil)
)

func (s *limitedStore) Name() string { return s.s.Name() }
func (s *limitedStore) Close() error { return s.s.Close() }

// UsesPartCRC32C answers for the wrapped store.
func (s *limitedStore) UsesPartCRC32C() bool { return UsesPartCRC32C(s.s) }

func (s *limitedStore) Head(ctx context.Context, key string) (Attrs, error) {
	if err := s.l.WaitRequest(ctx); err != nil {
		return Attrs{}, err
	}
	return s.s.Head(ctx, key)
}

func (s *limitedStore) Get(ctx context.Context, key string) (io.ReadCloser, Attrs, error) {
	return s.GetRange(ctx, key, 0, -1)
}

func (s *limitedStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, Attrs, error) {
	if err := s.l.WaitRequest(ctx); err != nil {
		return nil, Attrs{}, err
	}
	var (
		rc  io.ReadCloser
		a   Attrs
		err error
	)
	if off == 0 && length < 0 {
		rc, a, err = s.s.Get(ctx, key)
	} else {
		rc, a, err = s.s.GetRange(ctx, key, off, length)
	}
	if err != nil || s.l.download == nil {
		return rc, a, err
	}
	return pace(ctx, rc, s.l.download), a, nil
}

func (s *limitedStore) Iter(ctx context.Context, prefix string, fn func(Attrs) error) error {
	if err := s.l.WaitRequest(ctx); err != nil {
		return err
	}
	return s.s.Iter(ctx, prefix, fn)
}

func (s *limitedStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Attrs, error) {
	if err := s.l.WaitRequest(ctx); err != nil {
		return Attrs{}, err
	}
	if s.l.upload != nil {
		pr := pacedReader{ctx, r, s.l.upload}
		if rs, ok := r.(io.ReadSeeker); ok {
			r = &pacedReadSeeker{pr, rs}
		} else {
			r = &pr
		}
	}
	return s.s.Put(ctx, key, r, size, opts)
}

type pacedReadSeeker struct {
	pacedReader
	s io.Seeker
}

func (p *pacedReadSeeker) Seek(off int64, whence int) (int64, error) { return p.s.Seek(off, whence) }

func (s *limitedStore) CreateMultipart(ctx context.Context, key string, opts PutOptions) (Multipart, error) {
	if err := s.l.WaitRequest(ctx); err != nil {
		return nil, err
	}
	mp, err := s.s.CreateMultipart(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	return &limitedMultipart{mp, s.l}, nil
}

func (s *limitedStore) Delete(ctx context.Context, key string) error {
	if err := s.l.WaitRequest(ctx); err != nil {
		return err
	}
	return s.s.Delete(ctx, key)
}

type limitedMultipart struct {
	mp Multipart
	l  *Limiter
}

func (m *limitedMultipart) UploadID() string { return m.mp.UploadID() }

func (m *limitedMultipart) UploadPart(ctx context.Context, n int, data []byte) error {
	if err := m.l.WaitRequest(ctx); err != nil {
		return err
	}
	if err := m.l.WaitUpload(ctx, int64(len(data))); err != nil {
		return err
	}
	return m.mp.UploadPart(ctx, n, data)
}

// UploadsVectors answers for the wrapped upload.
func (m *limitedMultipart) UploadsVectors() bool { return UploadsVectors(m.mp) }

func (m *limitedMultipart) UploadPartVector(ctx context.Context, n int, data [][]byte) error {
	if err := m.l.WaitRequest(ctx); err != nil {
		return err
	}
	if err := m.l.WaitUpload(ctx, VectorLen(data)); err != nil {
		return err
	}
	return UploadPartVector(ctx, m.mp, n, data)
}

func (m *limitedMultipart) Complete(ctx context.Context) (Attrs, error) {
	if err := m.l.WaitRequest(ctx); err != nil {
		return Attrs{}, err
	}
	return m.mp.Complete(ctx)
}

func (m *limitedMultipart) Abort(ctx context.Context) error {
	if err := m.l.WaitRequest(ctx); err != nil {
		return err
	}
	return m.mp.Abort(ctx)
}

type limitedListerStore struct {
	*limitedStore
	ml MultipartLister
}

func (s *limitedListerStore) ListMultipart(ctx context.Context, prefix string) ([]Upload, error) {
	if err := s.l.WaitRequest(ctx); err != nil {
		return nil, err
	}
	return s.ml.ListMultipart(ctx, prefix)
}

func (s *limitedListerStore) AbortMultipart(ctx context.Context, key, uploadID string) error {
	if err := s.l.WaitRequest(ctx); err != nil {
		return err
	}
	return s.ml.AbortMultipart(ctx, key, uploadID)
}
