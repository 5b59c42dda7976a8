package diskbench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/internal/hostfs"
)

func TestCheckAcceptsPlainDir(t *testing.T) {
	dir := testDir(t)
	tg, err := Check(context.Background(), Options{Dir: dir, AllowAnyFS: true, MaxBytes: MiB})
	if err != nil {
		t.Fatal(err)
	}
	if tg.FSType == "" || tg.FreeBytes == 0 || tg.TotalBytes < tg.FreeBytes || tg.MaxBytes != MiB {
		t.Errorf("target %+v", tg)
	}
	abs, _ := filepath.Abs(dir)
	if tg.Dir != abs {
		t.Errorf("Dir %q, want %q", tg.Dir, abs)
	}
}

func TestCheckDefaultMaxBytes(t *testing.T) {
	tg, err := Check(context.Background(), Options{Dir: testDir(t), AllowAnyFS: true})
	if err != nil {
		t.Fatal(err)
	}
	want := min(DefaultMaxBytesCap, int64(tg.FreeBytes/10))
	if tg.MaxBytes != want {
		t.Errorf("MaxBytes %d, want min(2GiB, free/10) = %d", tg.MaxBytes, want)
	}
}

func TestCheckBadTargets(t *testing.T) {
	dir := testDir(t)
	file := filepath.Join(dir, "plain-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := Check(ctx, Options{Dir: filepath.Join(dir, "missing"), AllowAnyFS: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := Check(ctx, Options{Dir: file, AllowAnyFS: true}); !errors.Is(err, ErrNotDirectory) {
		t.Errorf("file: %v", err)
	}
	if _, err := Check(ctx, Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("empty dir: %v", err)
	}
	// A negative budget is an error, not the default.
	if _, err := Check(ctx, Options{Dir: dir, AllowAnyFS: true, MaxBytes: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative MaxBytes: %v", err)
	}
	if _, err := Check(ctx, Options{Dir: dir, AllowAnyFS: true, MaxBytes: 1 << 62}); !errors.Is(err, ErrInsufficientSpace) {
		t.Errorf("huge budget: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Check(cctx, Options{Dir: dir}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// /proc is not a disk, also with AllowAnyFS; the run used to be refused
	// for "0B free".
	for _, allow := range []bool{false, true} {
		tg, err := Check(ctx, Options{Dir: "/proc", AllowAnyFS: allow})
		if !errors.Is(err, ErrUnsupportedFS) || !strings.Contains(err.Error(), "not a disk") || tg == nil || tg.FSType != "proc" {
			t.Errorf("/proc (AllowAnyFS %v): %v, target %+v", allow, err, tg)
		}
	}
}

func TestCheckRefusesTmpfs(t *testing.T) {
	const shm = "/dev/shm"
	var st unix.Statfs_t
	if err := unix.Statfs(shm, &st); err != nil || st.Type != 0x01021994 {
		t.Skipf("%s is not tmpfs here", shm)
	}
	dir, err := os.MkdirTemp(shm, "diskbench-test-")
	if err != nil {
		t.Skipf("cannot create a dir in %s: %v", shm, err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tg, err := Check(context.Background(), Options{Dir: dir, MaxBytes: MiB})
	if !errors.Is(err, ErrUnsupportedFS) {
		t.Fatalf("tmpfs accepted: %v", err)
	}
	if tg == nil || tg.FSType != "tmpfs" {
		t.Errorf("target %+v", tg)
	}
	// RunJournal refuses too, before creating anything.
	_, err = RunJournal(context.Background(), JournalOptions{Options: Options{Dir: dir, MaxBytes: MiB}})
	if !errors.Is(err, ErrUnsupportedFS) {
		t.Errorf("RunJournal on tmpfs: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files created on a refused target: %v", ents)
	}
	if _, err := Check(context.Background(), Options{Dir: dir, MaxBytes: MiB, AllowAnyFS: true}); err != nil {
		t.Errorf("AllowAnyFS: %v", err)
	}
}

func TestCheckRefusesBookieData(t *testing.T) {
	cases := map[string][]string{
		"cookie":            {"current/VERSION"},
		"journal file":      {"current/1a2b.txn"},
		"entry log":         {"current/0.log"},
		"top-level txn":     {"17.txn"},
		"parent of bookie":  {"journal/current/VERSION"},
		"ledger entry logs": {"current/ff.log", "current/ledgers/x"},
		// What the bookie agent's detector found and Check missed (both used to be missed):
		"entry log, other name":   {"current/entries.log"},
		"parent of entry logs":    {"l0/current/5.log"},
		"rocksdb index":           {"current/locations/CURRENT"},
		"lastMark, no other data": {"current/lastMark"},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			dir := testDir(t)
			for _, f := range files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)
			_, err := Check(context.Background(), Options{Dir: dir, AllowAnyFS: true, MaxBytes: MiB})
			if !errors.Is(err, ErrBookieData) {
				t.Fatalf("bookie data accepted: %v", err)
			}
			_, err = RunJournal(context.Background(), JournalOptions{Options: quick(dir)})
			if !errors.Is(err, ErrBookieData) {
				t.Fatalf("RunJournal: %v", err)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("directory changed:\n%s\nvs\n%s", before, after)
			}
			tg, err := Check(context.Background(), Options{Dir: dir, AllowAnyFS: true, MaxBytes: MiB, Force: true})
			if err != nil || len(tg.BookieData) == 0 {
				t.Errorf("Force: %v, found %v", err, tg)
			}
		})
	}
	// Names that only look similar are fine.
	dir := testDir(t)
	for _, f := range []string{"app.log", "notes.txn.bak", "current/gc.log.1"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Check(context.Background(), Options{Dir: dir, AllowAnyFS: true, MaxBytes: MiB}); err != nil {
		t.Errorf("non-bookie files refused: %v", err)
	}
}

func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var s string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			s += p + "\n"
		}
		return nil
	})
	return s
}

func TestStaleFilesOfDeadRunsAreRemoved(t *testing.T) {
	dir := testDir(t)
	// A pid that cannot exist (above pid_max) and our parent's (alive).
	dead := filepath.Join(dir, ".diskbench-99999999-abc-journal-0.dat")
	deadFio := filepath.Join(dir, ".diskbench-fio-99999999.0")
	alive := filepath.Join(dir, fmt.Sprintf(".diskbench-%d-abc-journal-0.dat", os.Getppid()))
	other := filepath.Join(dir, "keep.me")
	for _, p := range []string{dead, deadFio, alive, other} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := RunJournal(context.Background(), JournalOptions{Options: quick(dir),
		JournalParams: JournalParams{Writers: []int{1}, BlockSizes: []int64{4 * KiB}}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dead, deadFio} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stale %s not removed", p)
		}
	}
	for _, p := range []string{alive, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	os.Remove(alive) // not ours: keep the cleanliness check meaningful
}

// TestCheckRefusesRamfsAndOverlay mounts a real ramfs and overlayfs (root
// only) and checks both are refused like tmpfs.
func TestCheckRefusesRamfsAndOverlay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	base := t.TempDir()
	ram := filepath.Join(base, "ram")
	os.Mkdir(ram, 0o755)
	if err := unix.Mount("ramfs", ram, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount ramfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(ram, unix.MNT_DETACH) })
	lower, upper, work, merged := filepath.Join(ram, "l"), filepath.Join(ram, "u"), filepath.Join(ram, "w"), filepath.Join(base, "ov")
	for _, d := range []string{lower, upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]string{"ramfs": ram}
	if err := unix.Mount("overlay", merged, "overlay", 0, "lowerdir="+lower+",upperdir="+upper+",workdir="+work); err == nil {
		t.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) })
		cases["overlayfs"] = merged
	} else {
		t.Logf("overlayfs not testable here: %v", err)
	}
	for name, dir := range cases {
		tg, err := Check(context.Background(), Options{Dir: dir, MaxBytes: 1})
		if !errors.Is(err, ErrUnsupportedFS) || tg == nil || tg.FSType != name {
			t.Errorf("%s: %v (target %+v)", name, err, tg)
		}
		if _, err := Check(context.Background(), Options{Dir: dir, MaxBytes: 1, AllowAnyFS: true}); err != nil && !errors.Is(err, ErrInsufficientSpace) {
			t.Errorf("%s with AllowAnyFS: %v", name, err)
		}
	}
}

// TestCheckReadsDeviceFromSysPath: the device lookup goes through the
// configured sysfs root; it used to read /sys whatever the roots said.
func TestCheckReadsDeviceFromSysPath(t *testing.T) {
	dir := testDir(t)
	h, err := hostfs.FakeSysfs(t.TempDir(), dir, "fakedisk0")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := Check(context.Background(), Options{Dir: dir, AllowAnyFS: true, MaxBytes: MiB, SysPath: h.SysPath})
	if err != nil {
		t.Fatal(err)
	}
	if tg.Device != "fakedisk0" {
		t.Errorf("device %q, want fakedisk0 from the configured sysfs root", tg.Device)
	}
}
