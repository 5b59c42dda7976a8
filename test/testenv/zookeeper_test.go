package testenv_test

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func TestZooKeeperCreateReadRestart(t *testing.T) {
	start := time.Now()
	z := testenv.StartZooKeeper(t)
	t.Logf("ZooKeeper %s serving after %s", z.Addr, time.Since(start).Round(time.Millisecond))
	if !strings.HasPrefix(z.Addr, "127.0.0.1:") {
		t.Fatalf("Addr = %q, want 127.0.0.1:port", z.Addr)
	}
	out, err := testenv.FourLetter(z.Addr, "srvr", 2*time.Second)
	if err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("srvr = %q, %v", out, err)
	}

	c := z.Session(t, tkzk.Options{SessionTimeout: 4 * time.Second})
	if _, err := c.Create("/tk", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := c.Create("/tk/child", []byte{0, 1, 2, 255}, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create child: %v", err)
	}
	got, st, err := c.Get("/tk")
	if err != nil || string(got) != "hello" {
		t.Fatalf("get = %q, %v", got, err)
	}
	if _, err := c.Set("/tk", []byte("world"), st.Version); err != nil {
		t.Fatalf("set: %v", err)
	}
	c.Close()

	// Graceful restart keeps data.
	start = time.Now()
	z.Restart(t)
	t.Logf("restart took %s", time.Since(start).Round(time.Millisecond))
	c2 := z.Session(t, tkzk.Options{SessionTimeout: 4 * time.Second})
	got, _, err = c2.Get("/tk")
	if err != nil || string(got) != "world" {
		t.Fatalf("after restart: get = %q, %v", got, err)
	}
	c2.Close()

	// A crash (SIGKILL) keeps committed data too.
	z.Kill()
	if z.Running() {
		t.Fatal("still running after Kill")
	}
	if _, err := testenv.FourLetter(z.Addr, "srvr", time.Second); err == nil {
		t.Fatal("server still answers after Kill")
	}
	z.Restart(t)
	c3 := z.Session(t, tkzk.Options{SessionTimeout: 4 * time.Second})
	got, _, err = c3.Get("/tk/child")
	if err != nil || string(got) != "\x00\x01\x02\xff" {
		t.Fatalf("after kill+restart: get = %q, %v", got, err)
	}
}

func TestZooKeeperFreshEachTime(t *testing.T) {
	a := testenv.StartZooKeeper(t)
	b := testenv.StartZooKeeper(t)
	if a.Addr == b.Addr || a.DataDir == b.DataDir {
		t.Fatalf("servers share %s / %s", a.Addr, a.DataDir)
	}
	c := b.Session(t, tkzk.Options{SessionTimeout: 4 * time.Second})
	if ok, _, err := c.Exists("/tk"); err != nil || ok {
		t.Fatalf("fresh server has /tk (%v, %v)", ok, err)
	}
	a.Stop()
	if _, err := testenv.FourLetter(a.Addr, "srvr", time.Second); err == nil {
		t.Fatal("server still answers after Stop")
	}
}
