package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var fixture = FS{ProcPath: "testdata/proc", SysPath: "testdata/sys"}

// procTree writes a procfs root holding one file (self/mountinfo or
// diskstats) and returns an FS reading it.
func procTree(t testing.TB, name, content string) FS {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, "proc", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	return FS{ProcPath: filepath.Join(root, "proc"), SysPath: filepath.Join(root, "sys")}
}

func TestMountsFixture(t *testing.T) {
	ms, err := fixture.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 7 {
		t.Fatalf("got %d mounts, want 7", len(ms))
	}
	j := ms[3]
	if j.MountPoint != "/pulsar/data/bookkeeper/journal" || j.FSType != "xfs" || j.DevID() != "259:0" || j.Source != "/dev/nvme0n1" {
		t.Errorf("journal mount = %+v", j)
	}
	if _, ok := j.Options["noatime"]; !ok {
		t.Errorf("journal mount options %v lack noatime", j.Options)
	}
	if ms[5].MountPoint != "/mnt/with space" {
		t.Errorf("octal escape not undone: %q", ms[5].MountPoint)
	}
}

func TestMountsBad(t *testing.T) {
	for _, in := range []string{
		"22 27 0:21 / /proc rw,relatime proc proc rw",   // no separator
		"22 27 x:21 / /proc rw,relatime - proc proc rw", // bad device
		"22 27 0:21 / /proc rw,relatime -",              // nothing after separator
		"22 27 0:21",                                    // short
		"x 27 0:21 / /proc rw,relatime - proc proc rw",  // bad mount id
	} {
		if _, err := procTree(t, "self/mountinfo", in+"\n").Mounts(); !errors.Is(err, ErrBadProcFile) {
			t.Errorf("%q: err = %v, want ErrBadProcFile", in, err)
		}
	}
	// A missing file is a file error, not a format error.
	if _, err := (FS{ProcPath: t.TempDir()}).Mounts(); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrBadProcFile) {
		t.Errorf("missing mountinfo: %v", err)
	}
}

func TestMountFor(t *testing.T) {
	ms, err := fixture.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/pulsar/data/bookkeeper/journal":       "/pulsar/data/bookkeeper/journal",
		"/pulsar/data/bookkeeper/journal/0":     "/pulsar/data/bookkeeper/journal",
		"/pulsar/data/bookkeeper/journalx":      "/",
		"/pulsar/data/bookkeeper/ledgers/1/":    "/pulsar/data/bookkeeper/ledgers",
		"/pulsar/data/bookkeeper/ledgers/tmp/a": "/pulsar/data/bookkeeper/ledgers/tmp",
		"/var/lib":                              "/",
	} {
		m, err := MountFor(ms, path)
		if err != nil || m.MountPoint != want {
			t.Errorf("MountFor(%q) = %q, %v; want %q", path, m.MountPoint, err, want)
		}
	}
	if _, err := MountFor(ms[3:4], "/var"); !errors.Is(err, ErrMountNotFound) {
		t.Errorf("err = %v, want ErrMountNotFound", err)
	}
}

func TestBlockDeviceFixture(t *testing.T) {
	for _, tc := range []struct {
		maj, min int
		want     BlockDevice
	}{
		// A partition: queue attributes come from the whole disk.
		{8, 1, BlockDevice{Name: "sda1", Disk: "sda", Leaves: []string{"sda"}, PhysicalBlockSize: 512, LogicalBlockSize: 512, Rotational: true, Scheduler: "bfq"}},
		{259, 0, BlockDevice{Name: "nvme0n1", Disk: "nvme0n1", Leaves: []string{"nvme0n1"}, PhysicalBlockSize: 4096, LogicalBlockSize: 512, Scheduler: "none"}},
		// device-mapper over two disks: largest block size, rotational if any leaf is.
		{253, 0, BlockDevice{Name: "dm-0", Disk: "dm-0", Leaves: []string{"sdb", "sdc"}, PhysicalBlockSize: 4096, LogicalBlockSize: 512, Rotational: true, Scheduler: "none"}},
	} {
		got, err := fixture.BlockDevice(tc.maj, tc.min)
		if err != nil {
			t.Fatalf("%d:%d: %v", tc.maj, tc.min, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%d:%d = %+v\nwant %+v", tc.maj, tc.min, got, tc.want)
		}
	}
	if _, err := fixture.BlockDevice(1, 2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unknown device: %v", err)
	}
}

// TestDeviceOfReadsConfiguredRoot: the device lookup goes through SysPath
// (diskbench's copy read /sys whatever the roots said). A sysfs tree with
// nothing in it finds no device for a real directory.
func TestDeviceOfReadsConfiguredRoot(t *testing.T) {
	dir := t.TempDir()
	if _, err := (FS{SysPath: t.TempDir()}).DeviceOf(dir); !errors.Is(err, ErrNoBlockDevice) {
		t.Errorf("empty sysfs root: %v, want ErrNoBlockDevice", err)
	}
	if _, err := (FS{}).DeviceOf(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
}

func TestDiskstatsFixture(t *testing.T) {
	ds, err := fixture.Diskstats()
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 6 {
		t.Fatalf("got %d devices", len(ds))
	}
	n := ds[2]
	if n.Name != "nvme0n1" || n.Major != 259 || n.ReadsCompleted != 52907 || n.ReadBytes != 2288770*512 || n.WrittenBytes != 4200640*512 ||
		n.WriteTimeSeconds != 8.188 || n.IOsInProgress != 3 || n.IOTimeSeconds != 5.728 || n.IOTimeWeightedSecond != 20.219 {
		t.Errorf("nvme0n1 = %+v", n)
	}
	if n.DiscardsCompleted != 5185 || n.DiscardedBytes != 802384*512 || n.DiscardTimeSeconds != 0.329 || n.FlushesCompleted != 686 || n.FlushTimeSeconds != 0.024 {
		t.Errorf("nvme0n1 discards and flushes = %+v", n)
	}
	if d := ds[0]; d.FlushesCompleted != 30 || d.FlushTimeSeconds != 0.04 {
		t.Errorf("sda flushes = %+v", d)
	}
	if d := ds[5]; d.Name != "dm-0" || d.WrittenBytes != 4800*512 {
		t.Errorf("14-field line (no discard/flush counters): %+v", d)
	} else if d.DiscardsCompleted != 0 || d.FlushesCompleted != 0 {
		t.Errorf("14-field line has discards or flushes: %+v", d)
	}
	if _, err := procTree(t, "diskstats", "8 0 sda 1 2 3 4 5 6 7 8 9 10 x\n").Diskstats(); !errors.Is(err, ErrBadProcFile) {
		t.Errorf("bad number: %v", err)
	}
	if ds, err := procTree(t, "diskstats", "8 0 sda 1 2 3\n").Diskstats(); err == nil && len(ds) != 0 {
		t.Errorf("short line taken as a device: %+v", ds)
	}
}

func TestActiveScheduler(t *testing.T) {
	for in, want := range map[string]string{"none [mq-deadline] kyber bfq\n": "mq-deadline", "none": "none", "[none] mq-deadline": "none"} {
		if got := ActiveScheduler(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

func FuzzMounts(f *testing.F) {
	f.Add("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n")
	f.Add(`30 27 259:0 / /a\040b\ rw - xfs /dev/x rw`)
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := procTree(t, "self/mountinfo", s).Mounts()
		if err == nil {
			for _, m := range ms {
				_, _ = MountFor(ms, m.MountPoint)
			}
		}
	})
}

func FuzzDiskstats(f *testing.F) {
	f.Add("   8       0 sda 1000 10 80000 500 2000 20 160000 1500 0 1800 2000 0 0 0 0 30 40\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = procTree(t, "diskstats", s).Diskstats() })
}

func TestFakeSysfsDeviceOf(t *testing.T) {
	dir := t.TempDir()
	h, err := FakeSysfs(t.TempDir(), dir, "fakedisk0")
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.DeviceOf(dir)
	want := BlockDevice{Name: "fakedisk0", Disk: "fakedisk0", Leaves: []string{"fakedisk0"}, PhysicalBlockSize: 4096, LogicalBlockSize: 512, Scheduler: "none"}
	if err != nil || !reflect.DeepEqual(d, want) {
		t.Errorf("DeviceOf = %+v, %v; want %+v", d, err, want)
	}
}
