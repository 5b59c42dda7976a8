package zk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestReplyTooLarge lists a node whose child listing (about 1.2 MB, above
// the server's default jute.maxbuffer of 1 MiB) is larger than a small
// client bound: the read fails with ErrReplyTooLarge naming the path and
// the setting, the session survives; the default bound reads it whole.
func TestReplyTooLarge(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(max int) *zk.Session {
		s, err := zk.Connect(ctx, []string{z.Addr}, zk.Options{MaxBufferSize: max})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	big, small := connect(0), connect(256<<10)
	acl := gozk.WorldACL(gozk.PermAll)
	if _, err := big.Create("/big", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	const children, batch = 1200, 100
	pad := strings.Repeat("x", 1000)
	for i := 0; i < children; i += batch {
		var ops []any
		for j := i; j < i+batch; j++ {
			ops = append(ops, &gozk.CreateRequest{Path: fmt.Sprintf("/big/%05d-%s", j, pad), Acl: acl})
		}
		if _, err := big.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := small.Children("/big")
	if !errors.Is(err, zk.ErrReplyTooLarge) || !strings.Contains(err.Error(), "list /big:") ||
		!strings.Contains(err.Error(), "zookeeper.max_buffer_size") || !strings.Contains(err.Error(), "jute.maxbuffer") {
		t.Fatalf("listing over the bound: %v, want ErrReplyTooLarge naming /big and the settings", err)
	}
	// The session survives the dropped connection.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, _, err := small.Exists("/big")
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session unusable after the oversized reply: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := small.Err(); err != nil {
		t.Fatalf("session lost: %v", err)
	}
	names, _, err := big.Children("/big")
	if err != nil || len(names) != children {
		t.Fatalf("listing with the default bound: %d children, %v; want %d", len(names), err, children)
	}
}
