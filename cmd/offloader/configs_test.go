package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const configsDir = "../../configs"

// The Kubernetes manifests (configs/offloader-deployment.yaml, rendered
// from charts/tierkeeper) are checked by charts/chart_test.go: strict API
// types, and the embedded config parsed with the pod's files and env.

// TestAlertRules runs promtool on the offload service's alert rules and
// their unit tests (configs/offloader-alerts.test.yaml).
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("TIERKEEPER_REQUIRE_PEERS") != "" {
			t.Fatal("promtool not installed (make deps installs Debian's prometheus package)")
		}
		t.Skip("promtool not installed (make deps)")
	}
	for _, args := range [][]string{{"check", "rules", "offloader-alerts.yaml"}, {"test", "rules", "offloader-alerts.test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = configsDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
