package blob

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"io"
	"os"
)

// Payload holds the body of a Put so that it can be sent again on a retry
// and its MD5 is known before sending (Content-MD5 is a header). Providers
// use it; callers do not need it.
type Payload struct {
	r    io.ReaderAt
	size int64
	md5  []byte
	file *os.File
}

// MaxPayloadMemory is the largest non-seekable Put body buffered in memory;
// larger ones are spooled to a temporary file.
const MaxPayloadMemory = 64 << 20

// NewPayload takes exactly size bytes of r. A reader that is an
// io.ReaderAt and io.Seeker (bytes.Reader, strings.Reader, *os.File) is used
// in place from its current offset; any other reader is buffered. Fewer
// than size bytes give an error wrapping io.ErrUnexpectedEOF. Close
// releases a spool file.
func NewPayload(r io.Reader, size int64) (*Payload, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: negative size %d", ErrInvalidArgument, size)
	}
	short := func(n int64) error {
		return fmt.Errorf("reader gave %d bytes, size is %d: %w", n, size, io.ErrUnexpectedEOF)
	}
	h := md5.New()
	if ra, ok := r.(interface {
		io.ReaderAt
		io.Seeker
	}); ok {
		if start, err := ra.Seek(0, io.SeekCurrent); err == nil {
			n, err := io.Copy(h, io.NewSectionReader(ra, start, size))
			if err != nil {
				return nil, err
			}
			if n != size {
				return nil, short(n)
			}
			return &Payload{r: io.NewSectionReader(ra, start, size), size: size, md5: h.Sum(nil)}, nil
		}
	}
	if size <= MaxPayloadMemory {
		buf := make([]byte, size)
		n, err := io.ReadFull(r, buf)
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil, short(int64(n))
			}
			return nil, err
		}
		h.Write(buf)
		return &Payload{r: bytes.NewReader(buf), size: size, md5: h.Sum(nil)}, nil
	}
	f, err := os.CreateTemp("", "tierkeeper-payload-")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // unlinked: gone when closed, even after a crash
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size))
	if err == nil && n != size {
		err = short(n)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Payload{r: f, size: size, md5: h.Sum(nil), file: f}, nil
}

// Size is the body length.
func (p *Payload) Size() int64 { return p.size }

// MD5 is the body's MD5 digest.
func (p *Payload) MD5() []byte { return p.md5 }

// Reader returns a fresh reader of the whole body.
func (p *Payload) Reader() *io.SectionReader { return io.NewSectionReader(p.r, 0, p.size) }

// Close releases the spool file, if any.
func (p *Payload) Close() error {
	if p.file != nil {
		return p.file.Close()
	}
	return nil
}
