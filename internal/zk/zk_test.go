package zk_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/internal/zk"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func TestParseServiceURI(t *testing.T) {
	cases := []struct {
		in      string
		servers []string
		path    string
	}{
		{"127.0.0.1:2181", []string{"127.0.0.1:2181"}, ""},
		{" a:1, b:2 ", []string{"a:1", "b:2"}, ""},
		{"a:1/ledgers", []string{"a:1"}, "/ledgers"},
		{"zk+hierarchical://a:1;b:2/ledgers", []string{"a:1", "b:2"}, "/ledgers"},
		{"zk://a:1/pulsar/ledgers/", []string{"a:1"}, "/pulsar/ledgers"},
		{"metadata-store:zk:a:1,b:2/ledgers", []string{"a:1", "b:2"}, "/ledgers"},
		{"zk:a:1", []string{"a:1"}, ""},
		{"zk1", []string{"zk1"}, ""},
		{"[::1]:2181,zk2:2181/x", []string{"[::1]:2181", "zk2:2181"}, "/x"},
		{"a:1/", []string{"a:1"}, ""},
	}
	for _, c := range cases {
		s, p, err := zk.ParseServiceURI(c.in)
		if err != nil || !reflect.DeepEqual(s, c.servers) || p != c.path {
			t.Errorf("ParseServiceURI(%q) = %q %q %v, want %q %q", c.in, s, p, err, c.servers, c.path)
		}
	}
	for _, in := range []string{"", "etcd://a:1/ledgers", "/ledgers", "a:1//x", "a:1/x/../y", "a:0", "a:65536",
		"a:b", "a:+1", ":2181", "::1:2181", "a b:1", "u:pw@h:1", "2181", "a:1,,b:x"} {
		if s, p, err := zk.ParseServiceURI(in); !errors.Is(err, zk.ErrBadAddress) {
			t.Errorf("ParseServiceURI(%q) = %q %q %v, want ErrBadAddress", in, s, p, err)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", in)) {
			t.Errorf("error does not name the input: %v", err)
		}
	}
}

// FuzzParseServiceURI: never panics; a success is a non-empty list of
// clean servers and a clean path, and the canonical form parses back to
// the same; a small input allocates little.
func FuzzParseServiceURI(f *testing.F) {
	for _, s := range []string{"127.0.0.1:2181", "zk+hierarchical://a:1;b:2/ledgers", "metadata-store:zk:a:1,b:2/l",
		"zk:a:1", "[::1]:2181/x/", "a:1//x", "etcd://x", "", "zk://", "a:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		servers, path, err := zk.ParseServiceURI(in)
		if err != nil {
			if !errors.Is(err, zk.ErrBadAddress) {
				t.Fatalf("%q: error %v does not wrap ErrBadAddress", in, err)
			}
			return
		}
		if len(servers) == 0 {
			t.Fatalf("%q: success without servers", in)
		}
		for _, s := range servers {
			if s == "" || strings.ContainsAny(s, ",;/ \t\n") {
				t.Fatalf("%q: server %q", in, s)
			}
		}
		if path != "" && (!strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//")) {
			t.Fatalf("%q: path %q", in, path)
		}
		canon := strings.Join(servers, ",") + path
		s2, p2, err := zk.ParseServiceURI(canon)
		if err != nil || !reflect.DeepEqual(s2, servers) || p2 != path {
			t.Fatalf("%q: canonical %q parses to %q %q %v", in, canon, s2, p2, err)
		}
		if len(in) <= 64 {
			if a := testing.AllocsPerRun(1, func() { _, _, _ = zk.ParseServiceURI(in) }); a > 40 {
				t.Fatalf("%q: %v allocations", in, a)
			}
		}
	})
}

func TestUnavailable(t *testing.T) {
	for _, err := range []error{gozk.ErrNoServer, gozk.ErrConnectionClosed, gozk.ErrSessionExpired, gozk.ErrClosing,
		gozk.ErrSessionMoved, gozk.ErrAuthFailed, zk.ErrSessionLost, zk.ErrClosed, fmt.Errorf("read /x: %w", gozk.ErrNoServer)} {
		if !zk.Unavailable(err) {
			t.Errorf("Unavailable(%v) = false", err)
		}
	}
	for _, err := range []error{nil, gozk.ErrNoNode, gozk.ErrBadVersion, gozk.ErrNodeExists, context.Canceled,
		context.DeadlineExceeded, errors.New("other")} {
		if zk.Unavailable(err) {
			t.Errorf("Unavailable(%v) = true", err)
		}
	}
}

func TestDoReturnsWhenContextEnds(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := zk.Do(ctx, func() (int, error) { <-block; return 1, nil })
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("Do = %v after %v", err, time.Since(start))
	}
	if v, err := zk.Do(context.Background(), func() (int, error) { return 7, gozk.ErrNoNode }); v != 7 || err != gozk.ErrNoNode {
		t.Errorf("Do passes results through: %d %v", v, err)
	}
	called := false
	if _, err := zk.Do(ctx, func() (int, error) { called = true; return 0, nil }); err == nil || called {
		t.Errorf("done context: %v, called %v", err, called)
	}
}

func TestConnectUnreachable(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	start := time.Now()
	s, err := zk.Connect(context.Background(), []string{addr}, zk.Options{ConnectTimeout: 1500 * time.Millisecond})
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("connected to a closed port")
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, zk.ErrConnectTimeout) || !strings.Contains(err.Error(), addr) ||
		!strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "1.5s") {
		t.Errorf("unclear error: %v", err)
	}
	if took < 1400*time.Millisecond || took > 6*time.Second {
		t.Errorf("returned after %v, want about the 1.5s connect timeout", took)
	}
	if _, err := zk.Connect(context.Background(), []string{" , "}, zk.Options{}); !errors.Is(err, zk.ErrNoServers) {
		t.Errorf("empty list: %v", err)
	}
}

// A server that accepts TCP connections and never answers (a wrong port, a
// hung server): go-zookeeper alone would wait 10 × 2/3 of the session
// timeout for the handshake.
func TestConnectSilentServer(t *testing.T) {
	silent := testenv.SilentAddr(t)
	start := time.Now()
	_, err := zk.Connect(context.Background(), []string{silent}, zk.Options{ConnectTimeout: time.Second})
	t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, zk.ErrConnectTimeout) || !strings.Contains(err.Error(), "established no session") {
		t.Errorf("unclear error: %v", err)
	}
	if time.Since(start) > 6*time.Second {
		t.Errorf("took %v", time.Since(start))
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := zk.Connect(ctx, []string{silent}, zk.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled connect: %v", err)
	}
}

func TestSessionRealZooKeeper(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(timeout time.Duration) *zk.Session {
		s, err := zk.Connect(ctx, []string{z.Addr}, zk.Options{SessionTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	long, short := connect(20*time.Second), connect(2*time.Second)
	if _, err := long.Create("/x", []byte("v"), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if d, _, err := zk.Get(ctx, short, "/x"); err != nil || string(d) != "v" {
		t.Fatalf("Get = %q, %v", d, err)
	}
	if kids, err := zk.Children(ctx, short, "/"); err != nil || len(kids) < 2 {
		t.Fatalf("Children = %q, %v", kids, err)
	}
	st, err := zk.Set(ctx, long, "/x", []byte("w"), 0)
	if err != nil || st.Version != 1 {
		t.Fatalf("Set = %v, %v", st, err)
	}
	if _, err := zk.Set(ctx, long, "/x", []byte("z"), 0); !errors.Is(err, gozk.ErrBadVersion) {
		t.Fatalf("stale Set: %v", err)
	}
	if got := short.SessionTimeout(); got != 2*time.Second {
		t.Errorf("negotiated timeout %v, want 2s", got)
	}

	// The server dies: the short session is lost once disconnected for
	// longer than its timeout; its requests fail as Unavailable; the long
	// one survives a restart within its timeout.
	killed := time.Now() // the client sees the disconnection after this
	z.Kill()
	select {
	case <-short.Lost():
	case <-time.After(15 * time.Second):
		t.Fatal("short session not lost 15s after the server died")
	}
	t.Logf("short session lost %v after the kill: %v", time.Since(killed).Round(time.Millisecond), short.Err())
	if took := time.Since(killed); took < 2*time.Second {
		t.Errorf("lost after %v, before its 2s timeout", took)
	}
	if err := short.Err(); !errors.Is(err, zk.ErrSessionLost) || !strings.Contains(err.Error(), z.Addr) {
		t.Errorf("Err = %v", err)
	}
	if _, _, err := zk.Get(ctx, short, "/x"); !zk.Unavailable(err) {
		t.Errorf("Get on a lost session: %v", err)
	}
	if long.Err() != nil {
		t.Fatalf("long session lost early: %v", long.Err())
	}
	z.Start(t)
	var d []byte
	for i := 0; i < 60; i++ {
		if d, _, err = zk.Get(ctx, long, "/x"); err == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil || string(d) != "w" || long.Err() != nil {
		t.Fatalf("long session after restart: %q %v (session %v)", d, err, long.Err())
	}

	long.Close()
	<-long.Lost()
	if err := long.Err(); !errors.Is(err, zk.ErrClosed) || !zk.Unavailable(err) {
		t.Errorf("Err after Close = %v", err)
	}
	long.Close() // idempotent
	if _, _, err := zk.Get(ctx, long, "/x"); !zk.Unavailable(err) {
		t.Errorf("Get after Close: %v", err)
	}
}

// A network partition between the client and a live server (a fault proxy
// holding every byte): the client hears nothing, LastHeard ages past half
// the session timeout while the client still believes it is connected;
// the server expires the session (its ephemeral node goes); once the
// network heals, the client's reconnect is told so and the session ends
// with the server's zk.ErrSessionExpired (not the client's own timeout).
func TestSessionExpiresBehindPartition(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	px := testenv.StartFaultProxy(t, z.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const timeout = 4 * time.Second
	s, err := zk.Connect(ctx, []string{px.Addr}, zk.Options{SessionTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	w := z.Session(t, zk.Options{})
	if _, err := s.Create("/eph", nil, gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ok, _, gone, err := w.ExistsW("/eph")
	if err != nil || !ok {
		t.Fatalf("watcher: exists %v %v", ok, err)
	}
	// Healthy: pings every third of the timeout keep LastHeard fresh.
	time.Sleep(timeout / 2)
	if age := time.Since(s.LastHeard()); age > timeout/3+time.Second {
		t.Fatalf("LastHeard %v ago on a healthy session", age)
	}

	px.Partition()
	parted := time.Now()
	var silentAt time.Time
	var stateThen gozk.State
	for silentAt.IsZero() && time.Since(parted) < 3*timeout {
		if time.Since(s.LastHeard()) > timeout/2 {
			silentAt, stateThen = time.Now(), s.State()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if silentAt.IsZero() {
		t.Fatal("LastHeard never aged past half the session timeout behind the partition")
	}
	if s.Err() != nil {
		t.Fatalf("session already ended (%v) when LastHeard passed half the timeout", s.Err())
	}
	t.Logf("silent for half the timeout %v after the partition; client state then %v", silentAt.Sub(parted).Round(time.Millisecond), stateThen)
	select {
	case ev := <-gone:
		if ev.Type != gozk.EventNodeDeleted {
			t.Fatalf("watch event %+v", ev)
		}
	case <-time.After(4 * timeout):
		t.Fatal("the server did not expire the partitioned session")
	}
	expired := time.Since(parted)
	t.Logf("server expired the session %v after the partition", expired.Round(time.Millisecond))
	if expired < timeout*2/3-200*time.Millisecond {
		t.Errorf("expired %v after the partition, before the %v timeout could pass", expired, timeout)
	}
	if silentAt.After(time.Now()) || silentAt.Sub(parted) >= expired {
		t.Errorf("LastHeard passed half the timeout only at %v, after the expiry at %v", silentAt.Sub(parted), expired)
	}
	px.Heal()
	select {
	case <-s.Lost():
	case <-time.After(2 * timeout):
		t.Fatalf("session not lost %v after the heal (state %v)", 2*timeout, s.State())
	}
	err = s.Err()
	t.Logf("session ended %v after the partition: %v", time.Since(parted).Round(time.Millisecond), err)
	if !errors.Is(err, zk.ErrSessionLost) || !errors.Is(err, gozk.ErrSessionExpired) || !strings.Contains(err.Error(), px.Addr) {
		t.Errorf("Err = %v, want ErrSessionLost with the server's ErrSessionExpired, naming %s", err, px.Addr)
	}
	if _, _, err := zk.Get(ctx, s, "/"); !zk.Unavailable(err) {
		t.Errorf("Get on the expired session: %v", err)
	}
	if ok, _, err := w.Exists("/eph"); err != nil || ok {
		t.Errorf("ephemeral node after the expiry: exists %v %v", ok, err)
	}
}
