package blob

import (
	"bytes"
	"io"
	"testing"
)

// A VectorReader reads, seeks and writes the concatenation of its slices
// (empty ones included) without changing them: read in odd-sized pieces,
// from a position sought from the start, the current position or the end,
// and the rest written by WriteTo, it gives exactly the joined bytes.
func TestVectorReaderReadsSeeksAndWritesTheConcatenation(t *testing.T) {
	data := [][]byte{[]byte("block header "), nil, []byte("0123456789"), []byte("x"), {}, bytes.Repeat([]byte("payload"), 100), []byte("pad")}
	var all []byte
	for _, b := range data {
		all = append(all, b...)
	}
	orig := bytes.Clone(all)
	r := NewVectorReader(data)
	if r.Size() != int64(len(all)) || r.Len() != len(all) {
		t.Fatalf("Size %d Len %d, want %d", r.Size(), r.Len(), len(all))
	}
	for _, chunk := range []int{1, 3, 7, 64, 1000} {
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		var got []byte
		buf := make([]byte, chunk)
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, all) {
			t.Fatalf("read in %d-byte pieces: %q, want %q", chunk, got, all)
		}
	}
	for _, tc := range []struct {
		off    int64
		whence int
		want   int64
	}{{5, io.SeekStart, 5}, {13, io.SeekStart, 13}, {-4, io.SeekEnd, int64(len(all)) - 4}, {2, io.SeekCurrent, int64(len(all)) - 2}, {100, io.SeekEnd, int64(len(all))}} {
		pos, err := r.Seek(tc.off, tc.whence)
		if err != nil || pos != tc.want {
			t.Fatalf("Seek(%d, %d) = %d, %v; want %d", tc.off, tc.whence, pos, err, tc.want)
		}
		var w bytes.Buffer
		if n, err := r.WriteTo(&w); err != nil || n != int64(len(all))-pos || !bytes.Equal(w.Bytes(), all[pos:]) {
			t.Fatalf("WriteTo from %d: %d bytes, %v; got %q want %q", pos, n, err, w.Bytes(), all[pos:])
		}
		if r.Len() != 0 {
			t.Fatalf("Len after WriteTo = %d", r.Len())
		}
		r.Seek(pos, io.SeekStart)
	}
	if _, err := r.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("Seek to -1 succeeded")
	}
	var joined []byte
	for _, b := range data {
		joined = append(joined, b...)
	}
	if !bytes.Equal(joined, orig) {
		t.Fatal("the slices were changed")
	}
}
