package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
)

// VectorMultipart is implemented by multipart uploads that can send a part
// given as a list of slices (a gather list) without joining them first: an
// offload's block whose payloads still lie in the bookie frames they were
// read into. Store wrappers implement it by forwarding and answer
// UploadsVectors for the upload they wrap.
type VectorMultipart interface {
	Multipart
	// UploadsVectors reports whether UploadPartVector sends the slices as
	// they are; false for a wrapper whose wrapped upload cannot.
	UploadsVectors() bool
	// UploadPartVector is UploadPart with the part's bytes the
	// concatenation of data. Every slice must stay unchanged until the call
	// returns; a retried request sends the same bytes again.
	UploadPartVector(ctx context.Context, partNumber int, data [][]byte) error
}

// UploadsVectors reports whether mp sends a gather list without joining it
// (VectorMultipart and UploadsVectors true). A caller for which it is
// false gives parts as one buffer (UploadPart).
func UploadsVectors(mp Multipart) bool {
	v, ok := mp.(VectorMultipart)
	return ok && v.UploadsVectors()
}

// errNoVectors is returned by UploadPartVector for an upload that does not
// take gather lists.
var errNoVectors = errors.New("blob: the multipart upload does not take gather lists")

// UploadPartVector uploads data as part n of mp when mp takes gather lists
// (UploadsVectors); wrappers forward through it.
func UploadPartVector(ctx context.Context, mp Multipart, n int, data [][]byte) error {
	if !UploadsVectors(mp) {
		return fmt.Errorf("upload part %d: %w", n, errNoVectors)
	}
	return mp.(VectorMultipart).UploadPartVector(ctx, n, data)
}

// VectorLen is the number of bytes in data.
func VectorLen(data [][]byte) int64 {
	var n int64
	for _, b := range data {
		n += int64(len(b))
	}
	return n
}

// VectorReader reads the concatenation of a gather list: a request body
// for a part given as slices. It seeks (an SDK rewinds it for a retry,
// which then reads the same bytes), reports its remaining length (Len, as
// bytes.Reader does, so SDKs size the request without reading it) and
// writes itself slice by slice (WriteTo). It never copies or changes the
// slices.
type VectorReader struct {
	data [][]byte
	size int64
	off  int64 // read position in the concatenation
	i    int   // slice holding off (len(data) at the end)
	in   int   // offset of off in data[i]
}

// NewVectorReader returns a reader of the concatenation of data.
func NewVectorReader(data [][]byte) *VectorReader {
	r := &VectorReader{data: data, size: VectorLen(data)}
	r.locate(0)
	return r
}

// locate sets the read position to off (0 <= off <= size).
func (r *VectorReader) locate(off int64) {
	r.off, r.i, r.in = off, 0, 0
	for r.i < len(r.data) {
		if n := int64(len(r.data[r.i])); off < n {
			r.in = int(off)
			return
		} else {
			off -= n
		}
		r.i++
	}
}

// Len is the number of bytes not read yet.
func (r *VectorReader) Len() int { return int(r.size - r.off) }

// Size is the length of the whole concatenation.
func (r *VectorReader) Size() int64 { return r.size }

// Read implements io.Reader.
func (r *VectorReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && r.i < len(r.data) {
		c := copy(p[n:], r.data[r.i][r.in:])
		n += c
		r.in += c
		if r.in == len(r.data[r.i]) {
			r.i, r.in = r.i+1, 0
		}
	}
	r.off += int64(n)
	return n, nil
}

// Seek implements io.Seeker.
func (r *VectorReader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.off + offset
	case io.SeekEnd:
		abs = r.size + offset
	default:
		return 0, fmt.Errorf("blob: vector reader: invalid whence %d", whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("blob: vector reader: negative position %d", abs)
	}
	if abs > r.size {
		abs = r.size
	}
	r.locate(abs)
	return abs, nil
}

// BuffersWriter is a writer that takes a gather list in one call: a
// connection of WholeBodyWrites, which hands it to the socket as one
// writev.
type BuffersWriter interface {
	WriteBuffers(bufs net.Buffers) (int64, error)
}

// WriteTo implements io.WriterTo: the unread bytes, in one call to a
// BuffersWriter, else one Write per slice.
func (r *VectorReader) WriteTo(w io.Writer) (int64, error) {
	if bw, ok := w.(BuffersWriter); ok && r.i < len(r.data) {
		bufs := make(net.Buffers, 0, len(r.data)-r.i)
		bufs = append(bufs, r.data[r.i][r.in:])
		bufs = append(bufs, r.data[r.i+1:]...)
		n, err := bw.WriteBuffers(bufs)
		r.locate(r.off + n)
		if err == nil && r.off < r.size {
			err = io.ErrShortWrite
		}
		return n, err
	}
	var total int64
	for r.i < len(r.data) {
		b := r.data[r.i][r.in:]
		n, err := w.Write(b)
		total += int64(n)
		r.off += int64(n)
		r.in += n
		if r.in == len(r.data[r.i]) {
			r.i, r.in = r.i+1, 0
		}
		if err != nil {
			return total, err
		}
		if n < len(b) {
			return total, io.ErrShortWrite
		}
	}
	return total, nil
}
