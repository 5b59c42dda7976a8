package testenv_test

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func TestBookiesStartStopAdd(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	start := time.Now()
	// A short ZK session (replacing the 10 s default) keeps the
	// kill-and-restart below quick.
	c := testenv.StartBookiesWith(t, z, 3, testenv.BookieOptions{Extra: []string{"zkTimeout=3000"}})
	t.Logf("3 bookies registered after %s", time.Since(start).Round(time.Millisecond))

	if got, want := c.MetadataServiceURI(), "zk+hierarchical://"+z.Addr+"/ledgers"; got != want {
		t.Fatalf("MetadataServiceURI = %q, want %q", got, want)
	}
	bs := c.Bookies()
	if len(bs) != 3 {
		t.Fatalf("%d bookies", len(bs))
	}
	var ids []string
	for i, b := range bs {
		if b.Index != i || !b.Running || !strings.HasPrefix(b.ID, "127.0.0.1:") || b.Addr != b.ID {
			t.Fatalf("bookie %d = %+v", i, b)
		}
		ids = append(ids, b.ID)
	}
	sort.Strings(ids)
	avail, err := c.AvailableBookies()
	if err != nil || !reflect.DeepEqual(avail, ids) {
		t.Fatalf("available = %v (%v), want %v", avail, err, ids)
	}

	c.StopBookie(1)
	if c.Bookie(1).Running {
		t.Fatal("bookie 1 running after StopBookie")
	}
	avail, _ = c.AvailableBookies()
	if len(avail) != 2 {
		t.Fatalf("available after stop = %v", avail)
	}
	start = time.Now()
	c.StartBookie(t, 1)
	t.Logf("bookie restart took %s", time.Since(start).Round(time.Millisecond))
	avail, _ = c.AvailableBookies()
	if !reflect.DeepEqual(avail, ids) {
		t.Fatalf("available after restart = %v, want %v", avail, ids)
	}

	start = time.Now()
	i := c.AddBookie(t)
	t.Logf("AddBookie took %s", time.Since(start).Round(time.Millisecond))
	if i != 3 || len(c.RunningBookies()) != 4 {
		t.Fatalf("AddBookie = %d, running %v", i, c.RunningBookies())
	}
	c.KillBookie(3)
	if c.Bookie(3).Running {
		t.Fatal("bookie 3 running after KillBookie")
	}
	// A crashed bookie comes back with the same id; its old registration
	// (ephemeral, session not yet expired) must not confuse the restart.
	start = time.Now()
	c.StartBookie(t, 3)
	t.Logf("restart after kill took %s (old session expiry included)", time.Since(start).Round(time.Millisecond))
	conf, err := os.ReadFile(filepath.Join(c.Bookie(3).Dir, "bk.conf"))
	if err != nil || strings.Count(string(conf), "zkTimeout=") != 1 || !strings.Contains(string(conf), "zkTimeout=3000\n") {
		t.Fatalf("bk.conf zkTimeout lines wrong (%v):\n%s", err, conf)
	}
	if n := len(c.RunningBookies()); n != 4 {
		t.Fatalf("%d bookies running, want 4", n)
	}
	avail, _ = c.AvailableBookies()
	if len(avail) != 4 {
		t.Fatalf("available after kill+restart = %v", avail)
	}
}

// TestBookiePulsarJVM starts a bookie with Pulsar's JVM settings and finds
// their threads in the process: G1's and the C2 compiler's, which the
// harness's quick-start JVM (serial GC, C1 only) does not have.
func TestBookiePulsarJVM(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	c := testenv.StartBookiesWith(t, z, 1, testenv.BookieOptions{PulsarJVM: true})
	pid := c.Bookie(0).PID
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "comm"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads of bookie pid %d: %v (%d)", pid, err, len(tasks))
	}
	var g1, c2, c1 bool
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		name := strings.TrimSpace(string(b))
		g1 = g1 || strings.HasPrefix(name, "G1 ")
		c2 = c2 || strings.HasPrefix(name, "C2 Compiler")
		c1 = c1 || strings.HasPrefix(name, "C1 Compiler")
	}
	if !g1 || !c2 || !c1 {
		t.Fatalf("bookie with PulsarJVM: G1 threads %v, C2 compiler %v, C1 compiler %v; want all", g1, c2, c1)
	}
}
