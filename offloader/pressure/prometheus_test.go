package pressure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// documentedPrometheus is the commented-out pressure.prometheus block of
// configs/offloader.yaml, uncommented: the tests run the query operators
// are told to use.
func documentedPrometheus(t *testing.T) (query, label string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "configs", "offloader.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	for _, line := range strings.Split(string(b), "\n") {
		c, ok := strings.CutPrefix(strings.TrimLeft(line, " "), "#")
		if !ok {
			if block != nil {
				break
			}
			continue
		}
		c = strings.TrimPrefix(c, " ")
		if block == nil && c != "prometheus:" {
			continue
		}
		block = append(block, c)
	}
	var doc struct {
		Prometheus struct {
			URL         string `yaml:"url"`
			Query       string `yaml:"query"`
			BookieLabel string `yaml:"bookie_label"`
		} `yaml:"prometheus"`
	}
	if err := yaml.Unmarshal([]byte(strings.Join(block, "\n")), &doc); err != nil || doc.Prometheus.Query == "" || doc.Prometheus.BookieLabel == "" {
		t.Fatalf("configs/offloader.yaml: no commented pressure.prometheus example with query and bookie_label (%v):\n%s", err, strings.Join(block, "\n"))
	}
	return doc.Prometheus.Query, doc.Prometheus.BookieLabel
}

// TestPrometheusRead: a real Prometheus scrapes two real bookie agents'
// /metrics (mltest.AgentServer: ledger mounts at 91% and 5%, journal
// mounts at 10%) and a third bookie whose agent is down, each target
// labelled with its bookie id; Read runs the documented query and others
// against it.
func TestPrometheusRead(t *testing.T) {
	query, label := documentedPrometheus(t)
	a0, a1 := mltest.AgentServer(t, 0.91, nil), mltest.AgentServer(t, 0.05, nil)
	const b0, b1, b2 = "bk-0:3181", "bk-1:3181", "bk-2:3181"
	prom := testenv.StartPrometheus(t, testenv.PrometheusOptions{Targets: []testenv.PrometheusTarget{
		{URL: a0 + "/metrics", Labels: map[string]string{label: b0}},
		{URL: a1 + "/metrics", Labels: map[string]string{label: b1}},
		{URL: "http://" + testenv.ClosedAddr(t) + "/metrics", Labels: map[string]string{label: b2}},
	}})
	// Two mounts per agent (journal, ledger), and the down target's up == 0.
	prom.WaitSeries(t, "tierkeeper_bookieagent_mount_usage_ratio", 4, 30*time.Second)
	prom.WaitSeries(t, "up == 0", 1, 30*time.Second)

	// What the agents source reads from the same agents' /report.
	agents := NewAgents("", map[string]string{b0: a0 + "/report", b1: a1 + "/report"}, Options{}).Read(t.Context(), []string{b0, b1})
	if len(agents.Errors) > 0 || len(agents.Usage) != 2 {
		t.Fatalf("agents source: %v %v", agents.Usage, agents.Errors)
	}
	const secret = "s3cret-pw"
	withCreds := strings.Replace(prom.URL, "http://", "http://tk:"+secret+"@", 1)
	read := func(t *testing.T, url, q string, bookies ...string) Reading {
		t.Helper()
		p, err := NewPrometheus(url, q, label, Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := p.Read(t.Context(), bookies)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("Read took %s with a 5s timeout", took)
		}
		if s := fmt.Sprint(r.Errors, p.Describe()); strings.Contains(s, secret) {
			t.Errorf("password printed: %s", s)
		}
		return r
	}
	errorsOf := func(r Reading) string { return fmt.Sprint(r.Errors) }
	wantErrors := func(t *testing.T, r Reading, n int, parts ...string) {
		t.Helper()
		if len(r.Errors) != n {
			t.Errorf("%d errors, want %d: %s", len(r.Errors), n, errorsOf(r))
		}
		for _, p := range parts {
			if !strings.Contains(errorsOf(r), p) {
				t.Errorf("errors %s\nmiss %q", errorsOf(r), p)
			}
		}
	}

	t.Run("documented query", func(t *testing.T) {
		r := read(t, prom.URL, query, b0, b1, b2)
		// Exactly what the agents report (the text format and the query API
		// carry float64 exactly); the journal mounts' 10% does not count.
		if len(r.Usage) != 2 || r.Usage[b0] != agents.Usage[b0] || r.Usage[b1] != agents.Usage[b1] {
			t.Errorf("usage %v, agents report %v", r.Usage, agents.Usage)
		}
		if math.Abs(r.Usage[b0]-0.91) > 1e-9 || math.Abs(r.Usage[b1]-0.05) > 1e-9 {
			t.Errorf("usage %v, want bk-0 0.91, bk-1 0.05", r.Usage)
		}
		wantErrors(t, r, 1, fmt.Sprintf(`bookie %s: prometheus %s: no sample with %s="%s" in the result of %q`, b2, prom.URL, label, b2, query))
		if r.At.IsZero() {
			t.Error("Reading.At not set")
		}
	})
	t.Run("several samples of a bookie: the largest", func(t *testing.T) {
		r := read(t, prom.URL, "tierkeeper_bookieagent_mount_usage_ratio")
		if len(r.Usage) != 2 || r.Usage[b0] != agents.Usage[b0] || math.Abs(r.Usage[b1]-0.10) > 1e-9 {
			t.Errorf("usage %v, want bk-0 %v (ledger), bk-1 0.10 (its journal mount)", r.Usage, agents.Usage[b0])
		}
		wantErrors(t, r, 0)
	})
	t.Run("credentials in the URL", func(t *testing.T) {
		// Prometheus without a web config ignores basic auth: the query
		// works, and no message shows the password.
		r := read(t, withCreds, query, b0, b1)
		if len(r.Usage) != 2 || r.Usage[b0] != agents.Usage[b0] {
			t.Errorf("usage %v", r.Usage)
		}
		wantErrors(t, r, 0)
		p, _ := NewPrometheus(withCreds, query, label, Options{})
		if d := p.Describe(); d != "prometheus "+strings.Replace(withCreds, "tk:"+secret, "<redacted>", 1) {
			t.Errorf("Describe = %q", d)
		}
	})
	t.Run("scalar", func(t *testing.T) {
		r := read(t, prom.URL, "scalar(sum(up))", b0)
		wantErrors(t, r, 1, fmt.Sprintf(`prometheus %s: query "scalar(sum(up))" returned a scalar, want an instant vector`, prom.URL))
		if len(r.Usage) != 0 || !errors.Is(r.Errors[0], ErrNotVector) {
			t.Errorf("usage %v, error %v", r.Usage, r.Errors)
		}
	})
	t.Run("range vector", func(t *testing.T) {
		r := read(t, prom.URL, "tierkeeper_bookieagent_mount_usage_ratio[1m]", b0)
		wantErrors(t, r, 1, "returned a matrix, want an instant vector")
	})
	t.Run("samples without the bookie label", func(t *testing.T) {
		r := read(t, prom.URL, "max(tierkeeper_bookieagent_mount_usage_ratio)")
		wantErrors(t, r, 1, fmt.Sprintf(`prometheus %s: a sample has no %q label: {}`, prom.URL, label))
		if len(r.Usage) != 0 {
			t.Errorf("usage %v", r.Usage)
		}
		// With bookies asked for, each is also named as missing.
		r = read(t, prom.URL, "max by (job) (tierkeeper_bookieagent_mount_usage_ratio)", b0, b1)
		wantErrors(t, r, 4, `a sample has no "bookie" label: {job="target-0"}`, `a sample has no "bookie" label: {job="target-1"}`,
			"bookie bk-0:3181: prometheus", "bookie bk-1:3181: prometheus")
	})
	t.Run("percentages are not ratios", func(t *testing.T) {
		r := read(t, prom.URL, "100 * ("+query+")", b0, b1)
		wantErrors(t, r, 2, "bookie bk-0:3181: prometheus "+prom.URL+": usage 91", "bookie bk-1:3181: prometheus "+prom.URL+": usage 5", "is not a ratio 0..1")
		if len(r.Usage) != 0 || !errors.Is(r.Errors[0], ErrNotRatio) {
			t.Errorf("usage %v (a bookie at 5%% would count as 500%% full)", r.Usage)
		}
		r = read(t, prom.URL, "0 / 0 * ("+query+")", b0)
		wantErrors(t, r, 2, "bookie bk-0:3181: prometheus "+prom.URL+": usage NaN is not a ratio")
	})
	t.Run("bad PromQL", func(t *testing.T) {
		const bad = "max by (bookie) (tierkeeper_bookieagent_mount_usage_ratio"
		r := read(t, withCreds, bad, b0)
		wantErrors(t, r, 1, fmt.Sprintf("prometheus http://<redacted>@%s: query %q: bad_data: ", prom.Addr, bad), "parse error")
	})
	t.Run("no samples", func(t *testing.T) {
		r := read(t, prom.URL, "tierkeeper_no_such_metric")
		wantErrors(t, r, 1, fmt.Sprintf(`prometheus %s: query "tierkeeper_no_such_metric" returned no samples`, prom.URL))
		r = read(t, prom.URL, "tierkeeper_no_such_metric", b0, b1)
		wantErrors(t, r, 2, "bookie bk-0:3181: prometheus", "bookie bk-1:3181: prometheus", `no sample with bookie="bk-1:3181"`)
	})
	t.Run("stopped", func(t *testing.T) {
		prom.Stop()
		r := read(t, withCreds, query, b0)
		wantErrors(t, r, 1, fmt.Sprintf("prometheus http://<redacted>@%s: query %q: ", prom.Addr, query), "connection refused")
	})
}

// TestPrometheusUnreachable: a Prometheus URL where nothing answers gives
// one error within the timeout, naming the URL (password redacted), the
// query and the wait.
func TestPrometheusUnreachable(t *testing.T) {
	for name, addr := range map[string]string{"hanging": testenv.SilentAddr(t), "refused": testenv.ClosedAddr(t)} {
		t.Run(name, func(t *testing.T) {
			p, err := NewPrometheus("http://tk:s3cret@"+addr, "up", "bookie", Options{Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := p.Read(context.Background(), []string{"bk-0:3181"})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("Read took %s with a 300ms timeout", took)
			}
			msg := fmt.Sprint(r.Errors)
			want := fmt.Sprintf(`prometheus http://<redacted>@%s: query "up": `, addr)
			if name == "hanging" {
				want += "no answer within 300ms"
			}
			if len(r.Errors) != 1 || len(r.Usage) != 0 || !strings.Contains(msg, want) || strings.Contains(msg, "s3cret") {
				t.Errorf("usage %v errors %s\nwant one error with %q and no password", r.Usage, msg, want)
			}
		})
	}
	for _, u := range []string{"prometheus:9090", "ftp://tk:s3cret@prometheus:9090", "http://"} {
		if _, err := NewPrometheus(u, "up", "bookie", Options{}); !errors.Is(err, ErrBadPrometheusURL) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NewPrometheus(%q): %v", u, err)
		}
	}
}
