package diskbench

import (
	"errors"
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// File is the small set of file operations diskbench needs. OpenOSFile
// returns the real implementation (raw pwrite/pread/fdatasync on a file
// descriptor); tests wrap it to inject faults.
type File interface {
	// WriteAt writes len(p) bytes at off (pwrite(2), retried on short writes).
	WriteAt(p []byte, off int64) (int, error)
	// ReadAt reads len(p) bytes at off (pread(2)); reading past the end
	// returns io.EOF.
	ReadAt(p []byte, off int64) (int, error)
	// Datasync is fdatasync(2).
	Datasync() error
	// Sync is fsync(2): data and metadata (BookKeeper's force(true) when it
	// creates a journal file).
	Sync() error
	// Truncate is ftruncate(2): a sparse file of size bytes (fio's
	// fallocate=truncate).
	Truncate(size int64) error
	// Allocate is fallocate(2) with mode 0 over [off, off+size).
	Allocate(off, size int64) error
	// Fadvise is posix_fadvise(2) (unix.FADV_DONTNEED, ...).
	Fadvise(off, size int64, advice int) error
	// Close closes the descriptor.
	Close() error
}

// OpenFunc opens a file like os.OpenFile. flag may include unix.O_DIRECT;
// an implementation that cannot do direct I/O returns an error wrapping
// syscall.EINVAL, and diskbench then falls back to buffered reads.
type OpenFunc func(name string, flag int, perm os.FileMode) (File, error)

// OpenOSFile is the default OpenFunc: open(2) with O_CLOEXEC.
func OpenOSFile(name string, flag int, perm os.FileMode) (File, error) {
	for {
		fd, err := unix.Open(name, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return &osFile{fd: fd, name: name}, nil
	}
}

type osFile struct {
	fd   int
	name string
	// raw issues pwrite/pread/fdatasync with RawSyscall: the calling
	// goroutine keeps its P while blocked, so no P hand-off and no wake-up
	// of another thread happen around each I/O. Only safe when every
	// worker has a P of its own (the engine raises GOMAXPROCS for that);
	// see Options.RaiseGOMAXPROCS.
	raw bool
}

// openRawFile is the engine's opener with Options.RaiseGOMAXPROCS:
// OpenOSFile with raw syscalls.
func openRawFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := OpenOSFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.(*osFile).raw = true
	return f, nil
}

func (f *osFile) pwrite(p []byte, off int64) (int, error) {
	if !f.raw {
		return unix.Pwrite(f.fd, p, off)
	}
	r, _, e := unix.RawSyscall6(unix.SYS_PWRITE64, uintptr(f.fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))),
		uintptr(len(p)), uintptr(off), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func (f *osFile) pread(p []byte, off int64) (int, error) {
	if !f.raw {
		return unix.Pread(f.fd, p, off)
	}
	r, _, e := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(f.fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))),
		uintptr(len(p)), uintptr(off), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func (f *osFile) fdatasync() error {
	if !f.raw {
		return unix.Fdatasync(f.fd)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_FDATASYNC, uintptr(f.fd), 0, 0); e != 0 {
		return e
	}
	return nil
}

var _ File = (*osFile)(nil)

func (f *osFile) WriteAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := f.pwrite(p[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, &os.PathError{Op: "write", Path: f.name, Err: err}
		}
		if n == 0 {
			return done, &os.PathError{Op: "write", Path: f.name, Err: io.ErrShortWrite}
		}
		done += n
	}
	return done, nil
}

func (f *osFile) ReadAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := f.pread(p[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, &os.PathError{Op: "read", Path: f.name, Err: err}
		}
		if n == 0 {
			return done, io.EOF
		}
		done += n
	}
	return done, nil
}

func (f *osFile) Datasync() error {
	for {
		err := f.fdatasync()
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fdatasync", Path: f.name, Err: err}
		}
		return nil
	}
}

func (f *osFile) Sync() error {
	for {
		err := unix.Fsync(f.fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fsync", Path: f.name, Err: err}
		}
		return nil
	}
}

func (f *osFile) Truncate(size int64) error {
	for {
		err := unix.Ftruncate(f.fd, size)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "ftruncate", Path: f.name, Err: err}
		}
		return nil
	}
}

func (f *osFile) Allocate(off, size int64) error {
	for {
		err := unix.Fallocate(f.fd, 0, off, size)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fallocate", Path: f.name, Err: err}
		}
		return nil
	}
}

func (f *osFile) Fadvise(off, size int64, advice int) error {
	if err := unix.Fadvise(f.fd, off, size, advice); err != nil {
		return &os.PathError{Op: "fadvise", Path: f.name, Err: err}
	}
	return nil
}

func (f *osFile) Close() error {
	if f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	if err != nil {
		return &os.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// alignedBuf returns a size-byte slice whose address is a multiple of align
// (a power of two), as O_DIRECT needs. Go's collector does not move heap
// objects, so the alignment holds for the slice's life.
func alignedBuf(size int64, align int) []byte {
	if align < 512 {
		align = 512
	}
	raw := make([]byte, int(size)+align)
	off := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw)))) & (align - 1); r != 0 {
		off = align - r
	}
	return raw[off : off+int(size) : off+int(size)]
}

// isNoSpace reports whether err means the filesystem or quota is full.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
