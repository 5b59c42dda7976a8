package diskbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// journalTrace wraps OpenOSFile: it records every write of every file and,
// when a file is closed, reads it back and parses it as a BookKeeper
// journal (as Journal.scanJournal reads one).
type journalTrace struct {
	mu    sync.Mutex
	files map[string]*tracedFile
}

type traceWrite struct{ off, n int64 }

type tracedFile struct {
	File
	t      *journalTrace
	name   string
	writes []traceWrite
	// Filled in at Close:
	size    int64
	parsed  parsedJournal
	dataEnd int64 // SEEK_HOLE from 0
	lastDat int64 // SEEK_DATA from the end of the records
	err     error
	closed  bool
}

func (t *journalTrace) open(name string, flag int, perm os.FileMode) (File, error) {
	f, err := OpenOSFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	tf := &tracedFile{File: f, t: t, name: name}
	t.mu.Lock()
	if t.files == nil {
		t.files = map[string]*tracedFile{}
	}
	t.files[name] = tf
	t.mu.Unlock()
	return tf, nil
}

func (f *tracedFile) WriteAt(p []byte, off int64) (int, error) {
	f.t.mu.Lock()
	f.writes = append(f.writes, traceWrite{off, int64(len(p))})
	f.t.mu.Unlock()
	return f.File.WriteAt(p, off)
}

func (f *tracedFile) Close() error {
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if !f.closed {
		f.closed = true
		f.inspect()
	}
	return f.File.Close()
}

// inspect reads the whole file back (it may be unlinked already; the
// descriptor still holds it).
func (f *tracedFile) inspect() {
	fd := f.File.(*osFile).fd
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.err = err
		return
	}
	f.size = st.Size
	b := make([]byte, st.Size)
	if _, err := f.File.ReadAt(b, 0); err != nil {
		f.err = fmt.Errorf("read back: %w", err)
		return
	}
	f.parsed, f.err = parseJournal(b)
	if f.err != nil {
		return
	}
	if off, err := unix.Seek(fd, 0, unix.SEEK_HOLE); err == nil {
		f.dataEnd = off
	}
	if off, err := unix.Seek(fd, f.dataEnd, unix.SEEK_DATA); err == nil {
		f.lastDat = off
	}
}

// parsedJournal is what a journal file holds.
type parsedJournal struct {
	version   int
	entries   []int   // entry lengths
	groupEnds []int64 // offsets right after each padding record
	end       int64   // end of the last record
}

// parseJournal reads a journal file the way BookKeeper's scanJournal does:
// a header, then records (4-byte big-endian length + bytes); a length of
// PADDING_MASK is a padding record (length + zeros); a zero length ends
// the journal.
func parseJournal(b []byte) (parsedJournal, error) {
	var pj parsedJournal
	if len(b) < bkHeaderSize || string(b[:4]) != "BKLG" {
		return pj, errors.New("no BKLG header")
	}
	pj.version = int(binary.BigEndian.Uint32(b[4:8]))
	for i := 8; i < bkHeaderSize; i++ {
		if b[i] != 0 {
			return pj, fmt.Errorf("header byte %d is %d", i, b[i])
		}
	}
	pos := int64(bkHeaderSize)
	for pos+4 <= int64(len(b)) {
		n := int32(binary.BigEndian.Uint32(b[pos:]))
		if n == 0 {
			break
		}
		if n == bkPaddingMask {
			pl := int64(binary.BigEndian.Uint32(b[pos+4:]))
			for _, c := range b[pos+8 : pos+8+pl] {
				if c != 0 {
					return pj, fmt.Errorf("padding at %d is not zeros", pos)
				}
			}
			pos += 8 + pl
			pj.groupEnds = append(pj.groupEnds, pos)
			continue
		}
		if n < 0 || pos+4+int64(n) > int64(len(b)) {
			return pj, fmt.Errorf("bad record length %d at %d", n, pos)
		}
		pj.entries = append(pj.entries, int(n))
		pos += 4 + int64(n)
	}
	pj.end = pos
	return pj, nil
}

func (t *journalTrace) sorted() []*tracedFile {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*tracedFile
	for _, f := range t.files {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func bkOpts(t *testing.T, tr *journalTrace) Options {
	o := quick(testDir(t))
	if tr != nil {
		o.OpenFile = tr.open
	}
	return o
}

// TestBKJournalOnDisk checks the files the BookKeeper model writes, byte
// by byte, against the journal format and BookKeeper's growth rules: a
// 512-byte BKLG header; records of a 4-byte length and the entry; each
// group padded to journalAlignmentSize with a padding record; a zero block
// at the end of each pre-allocation window and nothing allocated before it
// (SEEK_HOLE/SEEK_DATA); writes of the whole buffer or ending on a group's
// end; a new file once a flush leaves one past journalMaxSizeMB.
func TestBKJournalOnDisk(t *testing.T) {
	const entry = 3000 // not a divisor of anything: records straddle buffers and alignment
	s := DefaultJournalSettings()
	s.JournalPreAllocSizeMB = 1
	s.JournalMaxSizeMB = 1
	s.JournalWriteBufferSizeKB = 16
	for _, inFlight := range []int{1, 0} {
		t.Run(fmt.Sprintf("in-flight=%d", inFlight), func(t *testing.T) {
			tr := &journalTrace{}
			o := bkOpts(t, tr)
			o.MaxBytes = 8 * MiB
			o.Duration = 2 * time.Second
			res, err := RunJournal(context.Background(), JournalOptions{Options: o, JournalParams: JournalParams{
				Writers: []int{1}, BlockSizes: []int64{entry}, Settings: &s, InFlight: inFlight}})
			if err != nil {
				t.Fatal(err)
			}
			r := res[0]
			if r.Model != JournalModelBookKeeper || r.AddLatency == nil || r.Ops == 0 || r.Bytes != r.Ops*entry ||
				r.JournalIO == nil || r.JournalIO.Groups == 0 || r.JournalSettings == nil || *r.JournalSettings != s {
				t.Fatalf("result %+v io %+v", r, r.JournalIO)
			}
			if inFlight == 1 && r.JournalIO.MeanGroupEntries != 1 {
				t.Errorf("in-flight 1: %.2f entries per group, want exactly 1", r.JournalIO.MeanGroupEntries)
			}
			files := tr.sorted()
			if len(files) < 2 {
				t.Fatalf("%d journal files; %s written with journalMaxSizeMB=1 must roll", len(files), units.FormatBytes(r.BytesWritten))
			}
			align := int64(s.JournalAlignmentSize)
			window := s.preAllocSize()
			bufSize := int64(s.JournalWriteBufferSizeKB) * KiB
			for i, f := range files {
				if f.err != nil || !f.closed {
					t.Fatalf("%s: closed %v, %v", f.name, f.closed, f.err)
				}
				pj := f.parsed
				if i == len(files)-1 && (len(pj.entries) == 0 || len(pj.groupEnds) == 0) {
					// The window closed right after a roll, or the budget cut
					// the last file before its first group commit (the write
					// buffer had spilled entries but no padded group end).
					continue
				}
				if pj.version != 5 || len(pj.entries) == 0 || len(pj.groupEnds) == 0 {
					t.Fatalf("%s: version %d, %d entries, %d groups", f.name, pj.version, len(pj.entries), len(pj.groupEnds))
				}
				for _, n := range pj.entries {
					if n != entry {
						t.Fatalf("%s: entry of %d bytes", f.name, n)
					}
				}
				for _, g := range pj.groupEnds {
					if g%align != 0 {
						t.Errorf("%s: group ends at %d, not a multiple of %d", f.name, g, align)
					}
				}
				// Sparse growth: the size is whole windows, the data runs from
				// 0 to the records' end (then a hole), and the window's last
				// alignment block is zeros that were written.
				if f.size%window != 0 || f.size < pj.end {
					t.Errorf("%s: size %d, records end %d, window %d", f.name, f.size, pj.end, window)
				}
				// (The budget may cut the last file inside a group: its last
				// record may run into the hole.)
				lastGroup := pj.groupEnds[len(pj.groupEnds)-1]
				if f.dataEnd < lastGroup || f.dataEnd > pj.end+window {
					t.Errorf("%s: first hole at %d, last group ends at %d, records at %d", f.name, f.dataEnd, lastGroup, pj.end)
				}
				if f.dataEnd < f.size-align && f.lastDat != f.size-align {
					t.Errorf("%s: data after the records' hole at %d, want the zero block at %d", f.name, f.lastDat, f.size-align)
				}
				// A rolled file ends past journalMaxSizeMB; the last one is
				// cut by the budget.
				if i < len(files)-1 && pj.end <= s.JournalMaxSizeMB*MiB {
					t.Errorf("%s rolled at %d, before journalMaxSizeMB", f.name, pj.end)
				}
				// Writes: the header, window zero blocks, then the records in
				// order, each write the whole buffer or ending a group.
				ends := map[int64]bool{}
				for _, g := range pj.groupEnds {
					ends[g] = true
				}
				next := int64(0)
				for k, w := range f.writes {
					switch {
					case k == 0:
						if w.off != 0 || w.n != bkHeaderSize {
							t.Fatalf("%s: first write %+v, want the header", f.name, w)
						}
						next = bkHeaderSize
					case w.n == align && (w.off+align)%window == 0 && w.off != next:
						// pre-allocation zero block
					default:
						if w.off != next {
							t.Fatalf("%s: write %d at %d, want %d (sequential)", f.name, k, w.off, next)
						}
						next += w.n
						if w.n != bufSize && !ends[next] {
							t.Errorf("%s: write of %d ending at %d is neither a full buffer nor a group's end", f.name, w.n, next)
						}
					}
				}
			}
		})
	}
}

// TestBKJournalGroupWait: an entry alone waits journalMaxGroupWaitMSec for
// company, unless journalFlushWhenQueueEmpty.
func TestBKJournalGroupWait(t *testing.T) {
	s := DefaultJournalSettings()
	s.JournalMaxGroupWaitMSec = 20
	run := func(s JournalSettings) Result {
		o := bkOpts(t, nil)
		o.Duration = 400 * time.Millisecond
		res, err := RunJournal(context.Background(), JournalOptions{Options: o, JournalParams: JournalParams{
			Writers: []int{1}, BlockSizes: []int64{4 * KiB}, Settings: &s, InFlight: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	r := run(s)
	if r.AddLatency == nil || r.AddLatency.MinNs < 20e6 {
		t.Errorf("journalMaxGroupWaitMSec=20, one entry in flight: fastest add %v, want ≥ 20ms", r.AddLatency)
	}
	// Every group is due by the wait (BookKeeper's JOURNAL_NUM_FLUSH_MAX_WAIT).
	if io := r.JournalIO; io == nil || io.Groups == 0 || io.FlushedByWait != io.Groups || io.FlushedBySize+io.FlushedEmpty != 0 {
		t.Errorf("one entry in flight: flush causes %+v, want every group by the wait", io)
	}
	s.JournalFlushWhenQueueEmpty = true
	r = run(s)
	if r.AddLatency == nil || r.AddLatency.MinNs >= 20e6 {
		t.Errorf("journalFlushWhenQueueEmpty: fastest add %v, want < 20ms", r.AddLatency)
	}
	// (On a loaded machine the journal thread can be late by the 20 ms
	// wait now and then: that group is due by the wait.)
	if io := r.JournalIO; io == nil || io.Groups == 0 || io.FlushedEmpty < io.Groups*9/10 || io.FlushedBySize != 0 {
		t.Errorf("journalFlushWhenQueueEmpty: flush causes %+v, want the groups by the empty queue", io)
	}
}

// TestBKJournalThreshold: groups are flushed once they pass
// journalBufferedWritesThreshold while more entries wait.
func TestBKJournalThreshold(t *testing.T) {
	for _, th := range []int64{64 * KiB, 1 * MiB} {
		s := DefaultJournalSettings()
		s.JournalBufferedWritesThreshold = th
		s.JournalMaxGroupWaitMSec = 200 // only the threshold ends groups
		o := bkOpts(t, nil)
		o.MaxBytes = 128 * MiB
		o.Duration = 2 * time.Second // the budget ends it; a slow fdatasync must not leave nothing measured
		res, err := RunJournal(context.Background(), JournalOptions{Options: o, JournalParams: JournalParams{
			Writers: []int{1}, BlockSizes: []int64{16 * KiB}, Settings: &s, InFlight: int(4 * th / (16 * KiB))}})
		if err != nil {
			t.Fatal(err)
		}
		io := res[0].JournalIO
		// A group holds more than the threshold, by at most one record and
		// its padding.
		if io.Groups == 0 || io.MeanGroupBytes <= float64(th) || io.MeanGroupBytes > float64(th+16*KiB+4+4096) {
			t.Errorf("threshold %s: %d groups of %.0f bytes on average", units.FormatBytes(th), io.Groups, io.MeanGroupBytes)
		}
		if io.FlushedBySize == 0 || io.FlushedBySize < io.Groups*9/10 {
			t.Errorf("threshold %s: %d of %d groups due by size (%+v)", units.FormatBytes(th), io.FlushedBySize, io.Groups, io)
		}
	}
}

func TestBKJournalFaults(t *testing.T) {
	for name, ffs := range map[string]*faultFS{
		"write": {failWriteAfter: 20, writeErr: syscall.EIO},
		"sync":  {syncErr: syscall.EIO},
		"full":  {failWriteAfter: 20, writeErr: syscall.ENOSPC},
	} {
		t.Run(name, func(t *testing.T) {
			o := bkOpts(t, nil)
			o.OpenFile = ffs.open
			_, err := RunJournal(context.Background(), JournalOptions{Options: o, JournalParams: JournalParams{
				Writers: []int{2}, BlockSizes: []int64{4 * KiB}}})
			want := map[string]error{"write": syscall.EIO, "sync": ErrSync, "full": ErrNoSpace}[name]
			if !errors.Is(err, want) {
				t.Fatalf("want %v, got %v", want, err)
			}
			ffs.assertGone(t)
		})
	}
}

func TestBKJournalByteBudget(t *testing.T) {
	o := bkOpts(t, nil)
	o.MaxBytes = 24 * MiB
	o.Duration = 5 * time.Second
	res, err := RunJournal(context.Background(), JournalOptions{Options: o, JournalParams: JournalParams{
		Writers: []int{2}, BlockSizes: []int64{64 * KiB}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.BytesWritten > o.MaxBytes || r.StopReason != "byte budget" {
		t.Errorf("wrote %d of %d, stop %q", r.BytesWritten, o.MaxBytes, r.StopReason)
	}
}

func TestBKJournalInvalidSettings(t *testing.T) {
	for name, mod := range map[string]func(*JournalSettings){
		"buffer 0":     func(s *JournalSettings) { s.JournalWriteBufferSizeKB = 0 },
		"align 1000":   func(s *JournalSettings) { s.JournalAlignmentSize = 1000 },
		"format 3":     func(s *JournalSettings) { s.JournalFormatVersionToWrite = 3 },
		"prealloc 0":   func(s *JournalSettings) { s.JournalPreAllocSizeMB = 0 },
		"max size 0":   func(s *JournalSettings) { s.JournalMaxSizeMB = 0 },
		"wait -1":      func(s *JournalSettings) { s.JournalMaxGroupWaitMSec = -1 },
		"threshold -1": func(s *JournalSettings) { s.JournalBufferedWritesThreshold = -1 },
	} {
		s := DefaultJournalSettings()
		mod(&s)
		_, err := RunJournal(context.Background(), JournalOptions{Options: quick(testDir(t)), JournalParams: JournalParams{Settings: &s}})
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: want ErrInvalidOptions, got %v", name, err)
		}
	}
	_, err := RunJournal(context.Background(), JournalOptions{Options: quick(testDir(t)), JournalParams: JournalParams{InFlight: bkMaxQueue + 1}})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "in-flight") {
		t.Errorf("in-flight: %v", err)
	}
}

func TestDefaultInFlight(t *testing.T) {
	s := DefaultJournalSettings()
	for _, c := range []struct {
		es   int64
		want int
	}{{4 * KiB, 256}, {64 * KiB, 16}, {3000, 350}, {8 * MiB, 1}} {
		if got := DefaultInFlight(s, c.es); got != c.want {
			t.Errorf("DefaultInFlight(%d) = %d, want %d", c.es, got, c.want)
		}
	}
}

// TestLatencyBuckets: with Options.LatencyBuckets every latency of a point
// carries buckets that hold all its values, and two points pool into one
// distribution of both; without it none does.
func TestLatencyBuckets(t *testing.T) {
	run := func(buckets bool) Result {
		o := bkOpts(t, nil)
		o.Duration = 300 * time.Millisecond
		o.LatencyBuckets = buckets
		res, err := RunJournal(context.Background(), JournalOptions{Options: o, JournalParams: JournalParams{
			Writers: []int{1}, BlockSizes: []int64{4 * KiB}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	a, b := run(true), run(true)
	for name, l := range map[string]*Latency{"add": a.AddLatency, "sync": a.SyncLatency, "write": a.WriteLatency, "commit": a.CommitLatency} {
		if l == nil {
			t.Errorf("no %s latency", name)
			continue
		}
		var n int64
		for _, bk := range l.Buckets {
			n += bk[1]
		}
		if l.Count == 0 || n != l.Count {
			t.Errorf("%s latency %+v: buckets hold %d values", name, l, n)
		}
	}
	p, err := PoolLatencies(a.AddLatency, b.AddLatency)
	if err != nil {
		t.Fatal(err)
	}
	if p.Count != a.AddLatency.Count+b.AddLatency.Count || p.MinNs != min(a.AddLatency.MinNs, b.AddLatency.MinNs) ||
		p.MaxNs != max(a.AddLatency.MaxNs, b.AddLatency.MaxNs) ||
		p.P99Ns < min(a.AddLatency.P99Ns, b.AddLatency.P99Ns) || p.P99Ns > max(a.AddLatency.P99Ns, b.AddLatency.P99Ns) {
		t.Errorf("pooled %+v from %+v and %+v", p, a.AddLatency, b.AddLatency)
	}
	if c := run(false); c.AddLatency == nil || c.AddLatency.Buckets != nil || c.SyncLatency.Buckets != nil {
		t.Errorf("without LatencyBuckets: add %+v", c.AddLatency)
	}
}
