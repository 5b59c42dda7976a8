package repocheck

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The offloader's build links none of the bookie agent's benchmark, rule
// or host code: it reads the agent's /report through bookieagent/agentapi
// only (docs/design.md, "Architecture").
func TestOffloaderLinksNoBookieAgent(t *testing.T) {
	deps := goListDeps(t, "./cmd/offloader")
	if !deps["github.com/tierkeeper/tierkeeper/offloader/pressure"] {
		t.Fatalf("go list -deps ./cmd/offloader lacks offloader/pressure: the list is not what this test expects (%d packages)", len(deps))
	}
	const mod = "github.com/tierkeeper/tierkeeper/"
	for _, p := range []string{"diskbench", "bookieagent", "bookieagent/cluster", "internal/bookiedir", "internal/hostfs"} {
		if deps[mod+p] {
			t.Errorf("cmd/offloader depends on %s; the offloader may use only bookieagent/agentapi of the agent", p)
		}
	}
	if !deps[mod+"bookieagent/agentapi"] {
		t.Errorf("cmd/offloader does not depend on bookieagent/agentapi: pressure no longer decodes the agent's /report through it")
	}
}

// The agent's API package is a leaf: it imports nothing of the module.
func TestAgentAPIIsALeaf(t *testing.T) {
	for p := range goListDeps(t, "./bookieagent/agentapi") {
		if strings.HasPrefix(p, "github.com/tierkeeper/tierkeeper/") && p != "github.com/tierkeeper/tierkeeper/bookieagent/agentapi" {
			t.Errorf("bookieagent/agentapi depends on %s", p)
		}
	}
}

// goListDeps runs `go list -deps pkg` at the module root.
func goListDeps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "list", "-deps", pkg)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s (waited up to 2 min): %v\n%s", pkg, err, msg)
	}
	deps := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		deps[l] = true
	}
	return deps
}

// The bookie agent's half (its cluster view and its command included)
// imports nothing of the offloader: the cluster view takes the
// managed-ledger reader as a function (cluster.ManagedLedgerReader), which
// the command builds from Pulsar's model in pulsar/mledger/status, shared
// by both halves.
func TestBookieAgentLinksNoOffloader(t *testing.T) {
	for _, pkg := range []string{"./bookieagent/...", "./diskbench/...", "./cmd/bookieagent", "./pulsar/..."} {
		for p := range goListDeps(t, pkg) {
			if strings.HasPrefix(p, "github.com/tierkeeper/tierkeeper/offloader") {
				t.Errorf("%s depends on %s", pkg, p)
			}
		}
	}
}
