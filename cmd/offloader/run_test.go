package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "offloader.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunCheck(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	t.Setenv("TK_TEST_TOKEN", "token-SECRET-value")
	cfg := writeConfig(t, fmt.Sprintf(`zookeeper: {servers: %q, connect_timeout: 5s}
store: {type: fs, config: {dir: %q}}
admin: {token: !env TK_TEST_TOKEN}
`, z.Addr, t.TempDir()))
	stdout, _, err := run(t, "run", "--config", cfg, "--check", "--print-config")
	// No BookKeeper cluster in this ZooKeeper: that check fails, the rest pass.
	if err == nil || err.Error() != "check failed" {
		t.Fatalf("err = %v", err)
	}
	for _, w := range []string{"config " + cfg + ": valid", "zookeeper            ok", "store                ok",
		"bookkeeper-metadata  FAILED", "admin                skipped", "broker-offload       ok", "token: <redacted>"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output misses %q:\n%s", w, stdout)
		}
	}
	if strings.Contains(stdout, "token-SECRET-value") {
		t.Errorf("output shows the token:\n%s", stdout)
	}
	stdout, _, _ = run(t, "run", "--config", cfg, "--check", "-o", "json", "--print-config")
	var doc struct {
		OK        bool             `json:"ok"`
		Checks    []map[string]any `json:"checks"`
		Effective map[string]any   `json:"effective"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if doc.Effective["scheduler"].(map[string]any)["interval"] != "30s" {
		t.Errorf("effective config in JSON: %v", doc.Effective["scheduler"])
	}
	if doc.OK || len(doc.Checks) != 7 || strings.Contains(stdout, "token-SECRET-value") || !strings.Contains(stdout, `redacted`) {
		t.Errorf("json: %s", stdout)
	}
}

func TestRunConfigErrors(t *testing.T) {
	cfg := writeConfig(t, "zookeeper: {servers: x:1}\nstore: {type: fs, config: {dir: /tmp}}\nschedular: {}\n")
	_, _, err := run(t, "run", "--config", cfg, "--check")
	if err == nil || !strings.Contains(err.Error(), `line 3: unknown key "schedular" at the top level (did you mean "scheduler"?)`) {
		t.Errorf("err = %v", err)
	}
	if _, _, err := run(t, "run"); err == nil || err.Error() != "--config is required" {
		t.Errorf("no --config: %v", err)
	}
}
