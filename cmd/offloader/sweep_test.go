package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
)

func TestSweepCommand(t *testing.T) {
	z, c := mltest.ZooKeeper(t)
	now := time.Now()
	if err := c.CreateML("t/ns/persistent/a", mltest.Info(mltest.Ledger{ID: 5, Entries: 1, Size: 1, Closed: now, Offloaded: now}, mltest.Ledger{ID: 6})); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, err := fs.New(fs.Config{Dir: dir, MinPartSize: blob.MinPartSize}, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// mltest marks ledger 5 offloaded by attempt (5, 5).
	referenced := format.DataKey(uuid.UUID{0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 5}, 5)
	for _, k := range []string{referenced, format.DataKey(uuid.New(), 77), "other-file"} {
		if _, err := st.Put(context.Background(), k, bytes.NewReader([]byte("x")), 1, blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	cfg := writeConfig(t, fmt.Sprintf("zookeeper: {servers: %q}\nstore: {type: fs, config: {dir: %q}}\nsweeper: {grace: 1h}\n", z.Addr, dir))
	out, _, err := run(t, "sweep", "--config", cfg, "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "3 objects and 0 incomplete uploads listed; would remove nothing (0 B); kept 1 foreign, 1 referenced, 1 young; 0 errors") {
		t.Errorf("output:\n%s", out)
	}
}
