package fs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/allocs"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(Config{Dir: t.TempDir()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAcceptance(t *testing.T) {
	blobtest.AcceptanceTest(t, newStore(t))
}

func TestAcceptanceNoSync(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir(), NoSync: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	blobtest.AcceptanceTest(t, s)
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "dir") {
		t.Errorf("missing dir: %v", err)
	}
	if err := (Config{Dir: "x", MinPartSize: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "min_part_size") {
		t.Errorf("negative min_part_size: %v", err)
	}
}

func TestNameEncoding(t *testing.T) {
	for _, k := range []string{"a", "a/b", "%", "%2F", ".", "..", "./x", "ü/%/", strings.Repeat("k/", 150)} {
		n := encodeName(k)
		if strings.Contains(n, "/") || n == "." || n == ".." || len(n) > 255 {
			t.Errorf("encodeName(%q) = %q: not a safe file name", k, n)
		}
		if got, ok := decodeName(n); ok && got != k {
			t.Errorf("decodeName(encodeName(%q)) = %q", k, got)
		} else if !ok && !strings.HasPrefix(n, "%h") {
			t.Errorf("decodeName(%q) failed", n)
		}
	}
	for _, bad := range []string{"%", "%4", "%zz"} {
		if _, ok := decodeName(bad); ok {
			t.Errorf("decodeName(%q) accepted", bad)
		}
	}
}

func FuzzNameEncoding(f *testing.F) {
	for _, s := range []string{"a/b", "%2F", "..", "%h00", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		n := encodeName(k)
		if strings.Contains(n, "/") || n == "." || n == ".." || n == "" && k != "" {
			t.Fatalf("encodeName(%q) = %q", k, n)
		}
		if got, ok := decodeName(n); ok && got != k {
			t.Fatalf("round trip %q -> %q -> %q", k, n, got)
		}
		decodeName(k) // never panics
	})
}

func TestLongKeysHashed(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	long := "long/" + strings.Repeat("é", 300) // 605 bytes
	if _, err := s.Put(ctx, long, strings.NewReader("x"), 1, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "long/a", strings.NewReader("y"), 1, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := s.Iter(ctx, "long/", func(a blob.Attrs) error { keys = append(keys, a.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != "long/a" || keys[1] != long {
		t.Errorf("Iter = %q", keys)
	}
	if _, err := s.Put(ctx, strings.Repeat("k", blob.MaxKeyLen+1), strings.NewReader("x"), 1, blob.PutOptions{}); !errors.Is(err, blob.ErrInvalidArgument) {
		t.Errorf("over-long key: %v", err)
	}
}

const crashEnv = "TK_FS_CRASH" // "<dir>|<step>" for the child of TestCrashDuringPut

// crashChild is the child process of TestCrashDuringPut: it overwrites key
// k in the store at dir with 1 MiB and stops at step, printing "ready", to
// be killed there. Steps: "writing" (half the data written to the
// temporary file), "data-renamed", "record-renamed".
func crashChild(spec string) {
	dir, step, _ := strings.Cut(spec, "|")
	s, err := New(Config{Dir: dir}, Options{})
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	stop := func() {
		fmt.Println("ready")
		time.Sleep(time.Minute) // killed here
		os.Exit(3)
	}
	s.crashPoint = func(at string) {
		if at == step {
			stop()
		}
	}
	data := bytes.Repeat([]byte("new!"), 256<<10)
	var r io.Reader = bytes.NewReader(data)
	if step == "writing" {
		r = io.MultiReader(bytes.NewReader(data[:len(data)/2]), readerFunc(func([]byte) (int, error) { stop(); return 0, nil }))
	}
	if _, err := s.Put(context.Background(), "k", r, int64(len(data)), blob.PutOptions{}); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	os.Exit(4) // the step was never reached
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		crashChild(spec)
	}
	os.Exit(m.Run())
}

// A real Put, in a child process, is killed (SIGKILL) at each step of its
// commit protocol. The store is never left with a broken object: before
// the record rename the old object is served, after it the new one; what
// the crash leaves (a partial temporary file, an unreferenced data file) is
// only removed by Sweep, and only once it is older than the grace period.
func TestCrashDuringPut(t *testing.T) {
	for _, c := range []struct {
		step     string
		want     string // the object after the crash
		leftover string // the sub-directory holding what the crash left
	}{
		{"writing", "old", "tmp"},
		{"data-renamed", "old", "data"},
		{"record-renamed", "new!", "data"},
	} {
		t.Run(c.step, func(t *testing.T) {
			dir := t.TempDir()
			s, err := New(Config{Dir: dir}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := s.Put(ctx, "k", strings.NewReader("old"), 3, blob.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			before := listDir(t, filepath.Join(dir, c.leftover))

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashEnv+"="+dir+"|"+c.step)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ready := make(chan string, 1)
			go func() {
				line, _ := bufio.NewReader(out).ReadString('\n')
				ready <- line
			}()
			select {
			case line := <-ready:
				if line != "ready\n" {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("child: %q", line)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("child never reached the crash point")
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err == nil {
				t.Fatal("child exited cleanly")
			}

			got := getAll(t, s, "k")
			if string(got) != c.want && !(c.want == "new!" && bytes.Equal(got, bytes.Repeat([]byte("new!"), 256<<10))) {
				t.Fatalf("after a crash at %s: %d bytes %.8q..., want %q", c.step, len(got), got, c.want)
			}
			left := listDir(t, filepath.Join(dir, c.leftover))
			if len(left) != len(before)+1 {
				t.Fatalf("%s/ holds %v after the crash, had %v: want one file left by the crash", c.leftover, left, before)
			}
			// Young leftovers stay (a write may be in progress) ...
			if n, err := s.Sweep(ctx, time.Hour); err != nil || n != 0 {
				t.Fatalf("Sweep(1h) removed %d, %v", n, err)
			}
			// ... old ones go, and only they.
			old := time.Now().Add(-2 * time.Hour)
			for _, f := range left {
				os.Chtimes(filepath.Join(dir, c.leftover, f), old, old)
			}
			if n, err := s.Sweep(ctx, time.Hour); err != nil || n != 1 {
				t.Fatalf("Sweep removed %d, %v; want the 1 leftover", n, err)
			}
			if got2 := getAll(t, s, "k"); !bytes.Equal(got2, got) {
				t.Fatal("Sweep changed the live object")
			}
			if _, err := s.Put(ctx, "k", strings.NewReader("next"), 4, blob.PutOptions{}); err != nil {
				t.Fatalf("Put after the crash: %v", err)
			}
			blobtest.AssertStored(t, s, "k", []byte("next"))
		})
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func getAll(t *testing.T, s *Store, key string) []byte {
	t.Helper()
	rc, _, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

func TestCorruptRecordIsAnErrorNotNotFound(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Put(ctx, "k", strings.NewReader("abc"), 3, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	path := s.recordPath("k")
	for name, content := range map[string][]byte{
		"garbage":   []byte("{not json"),
		"wrong key": mustJSON(t, record{Version: 1, Key: "other", Data: newID(), Size: 3}),
		"bad data":  mustJSON(t, record{Version: 1, Key: "k", Data: "../../etc/passwd", Size: 3}),
		"huge":      bytes.Repeat([]byte(" "), maxRecordSize+10),
	} {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Head(ctx, "k"); err == nil || errors.Is(err, blob.ErrNotFound) {
			t.Errorf("%s: Head = %v, want a corruption error", name, err)
		}
	}
	// A record whose data file has the wrong size.
	r := record{Version: 1, Key: "k", Data: newID(), Size: 10}
	os.WriteFile(s.dataPath(r.Data), []byte("short"), 0o644)
	os.WriteFile(path, mustJSON(t, r), 0o644)
	if _, _, err := s.Get(ctx, "k"); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("size mismatch: Get = %v", err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Errorf("Delete of a corrupt object: %v", err)
	}
	if _, err := s.Head(ctx, "k"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("after Delete: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newUpload starts a multipart upload of key k on a fresh store whose
// parts must have at least minPart bytes.
func newUpload(t *testing.T, minPart int64) (*Store, blob.Multipart) {
	t.Helper()
	s, err := New(Config{Dir: t.TempDir(), MinPartSize: minPart}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := s.CreateMultipart(context.Background(), "k", blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, mp
}

func TestMinPartSizeConfigurable(t *testing.T) {
	_, mp := newUpload(t, 10)
	ctx := context.Background()
	mp.UploadPart(ctx, 1, []byte("0123456789"))
	mp.UploadPart(ctx, 2, []byte("ab"))
	a, err := mp.Complete(ctx)
	if err != nil || a.Size != 12 || !strings.HasSuffix(a.ETag, "-2") {
		t.Fatalf("Complete = %+v, %v", a, err)
	}
}

// FuzzRecord: whatever decodeRecord accepts is a record the store can
// serve (valid key, metadata, data name, size) that re-encodes to the same;
// a record file allocates a bounded multiple of its (capped) size.
func FuzzRecord(f *testing.F) {
	good, _ := json.Marshal(record{Version: 1, Key: "a/b", Data: strings.Repeat("ab", 16), Size: 3, ETag: "x",
		Metadata: map[string]string{"role": "data"}})
	f.Add(good)
	f.Add([]byte(`{"v":1,"key":"k","data":"../../etc/passwd","size":3}`))
	f.Add([]byte(`{"v":1,"key":"","data":"0123456789abcdef0123456789abcdef","size":0}`))
	f.Add([]byte(`{"v":1,"key":"k","data":"0123456789abcdef0123456789abcdef","size":-1}`))
	f.Add([]byte(`{"v":1,"key":"k","data":"0123456789abcdef0123456789abcdef","metadata":{"Role":"x"}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r *record
		var err error
		if n := allocs.Bytes(1, func() { r, err = decodeRecord(b, "rec", "") }); n > 64<<10+16*uint64(min(len(b), maxRecordSize+1)) {
			t.Fatalf("decodeRecord of %d bytes allocated %d bytes", len(b), n)
		}
		if err != nil {
			if errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("a corrupt record reads as not found: %v", err)
			}
			return
		}
		if blob.ValidateKey(r.Key) != nil || !isHexID(r.Data) || r.Size < 0 || r.Version != recordVersion {
			t.Fatalf("accepted a record the store cannot serve: %+v", r)
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := decodeRecord(again, "rec", r.Key)
		if err != nil || r2.Key != r.Key || r2.Data != r.Data || r2.Size != r.Size || len(r2.Metadata) != len(r.Metadata) {
			t.Fatalf("re-encoded record does not decode the same: %v", err)
		}
	})
}

// FuzzUploadRecord: an accepted upload.json has a valid key and metadata.
func FuzzUploadRecord(f *testing.F) {
	f.Add([]byte(`{"key":"k","initiated":"2026-01-01T00:00:00Z","metadata":{"role":"data"}}`))
	f.Add([]byte(`{"key":""}`))
	f.Add([]byte(`{"key":"k","metadata":{"a b":"c"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var u *upload
		var err error
		if n := allocs.Bytes(1, func() { u, err = decodeUpload(b, "id") }); n > 64<<10+16*uint64(len(b)) {
			t.Fatalf("decodeUpload of %d bytes allocated %d bytes", len(b), n)
		}
		if err != nil {
			return
		}
		if blob.ValidateKey(u.Key) != nil {
			t.Fatalf("accepted upload key %q", u.Key)
		}
		if _, err := blob.NormalizeMetadata(u.Metadata); err != nil {
			t.Fatalf("accepted upload metadata %v: %v", u.Metadata, err)
		}
	})
}

// FuzzPartName: only partName's own spelling of 1..MaxParts is a part.
func FuzzPartName(f *testing.F) {
	for _, s := range []string{"part-00001", "part-1", "part-+0001", "part-00000", "part-10000", "part-10001", "part-99999", "upload.json", "part-0001a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n, ok := parsePartName(name)
		if ok && (partName(n) != name || n < 1 || n > blob.MaxParts) {
			t.Fatalf("parsePartName(%q) = %d, but partName(%d) = %q", name, n, n, partName(n))
		}
		if !ok && strings.HasPrefix(name, "part-") {
			if m, err := strconv.Atoi(name[5:]); err == nil && m >= 1 && m <= blob.MaxParts && partName(m) == name {
				t.Fatalf("parsePartName(%q) refused part %d", name, m)
			}
		}
	})
}

// A stray file that spells a part number another way is not a part: it
// used to stand in for part 1 (Atoi("1") == Atoi("00001")).
func TestStrayPartFilesIgnored(t *testing.T) {
	s, mp := newUpload(t, 1)
	ctx := context.Background()
	if err := mp.UploadPart(ctx, 1, []byte("real")); err != nil {
		t.Fatal(err)
	}
	dir := s.uploadDir(mp.UploadID())
	for _, stray := range []string{"part-1", "part-+0002", "part-00002.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, stray), []byte("stray bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := mp.Complete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != 4 {
		t.Fatalf("completed object has %d bytes, want the 4 of part 1", a.Size)
	}
	blobtest.AssertStored(t, s, "k", []byte("real"))
}
