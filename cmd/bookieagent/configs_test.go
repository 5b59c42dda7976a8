package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tierkeeper/tierkeeper/bookieagent"
)

const configsDir = "../../configs"

// readWorkload returns the DaemonSet or StatefulSet (the sidecar patch)
// in a manifest of configs/ (rendered from charts/tierkeeper), decoded
// strictly into the Kubernetes API types: an unknown field fails.
func readWorkload(t *testing.T, file string) (kind string, meta metav1.ObjectMeta, tpl corev1.PodTemplateSpec) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(configsDir, file))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var head metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		switch head.Kind {
		case "DaemonSet":
			var ds appsv1.DaemonSet
			if err := yaml.UnmarshalStrict([]byte(doc), &ds); err != nil {
				t.Fatalf("%s: strict decode: %v", file, err)
			}
			for k, v := range ds.Spec.Selector.MatchLabels {
				if ds.Spec.Template.Labels[k] != v {
					t.Errorf("selector %s=%s does not match the pod template", k, v)
				}
			}
			if len(ds.Spec.Selector.MatchLabels) == 0 {
				t.Error("empty selector")
			}
			return head.Kind, ds.ObjectMeta, ds.Spec.Template
		case "StatefulSet":
			var sts appsv1.StatefulSet
			if err := yaml.UnmarshalStrict([]byte(doc), &sts); err != nil {
				t.Fatalf("%s: strict decode: %v", file, err)
			}
			return head.Kind, sts.ObjectMeta, sts.Spec.Template
		}
	}
	t.Fatalf("%s: no DaemonSet or StatefulSet", file)
	return
}

// TestDaemonSetManifest checks the bookie agent's container in both
// layouts (configs/bookieagent-daemonset.yaml with host paths,
// configs/bookieagent-sidecar-patch.yaml in the bookie pods): the args are
// accepted by the real serve command, its listen port is the named
// container port the probes use, every directory flag is a read-only
// mount of a volume (the DaemonSet's own, or the bookie pod's).
func TestDaemonSetManifest(t *testing.T) {
	for _, tc := range []struct {
		file     string
		wantKind string
	}{{"bookieagent-daemonset.yaml", "DaemonSet"}, {"bookieagent-sidecar-patch.yaml", "StatefulSet"}} {
		t.Run(tc.file, func(t *testing.T) {
			kind, meta, tpl := readWorkload(t, tc.file)
			if kind != tc.wantKind || meta.Name == "" {
				t.Fatalf("%s %q", kind, meta.Name)
			}
			pod := tpl.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers", len(pod.Containers))
			}
			c := pod.Containers[0]
			if len(c.Args) == 0 || c.Args[0] != "serve" {
				t.Fatalf("args %v", c.Args)
			}
			serve := newServeCmd()
			if err := serve.ParseFlags(c.Args[1:]); err != nil {
				t.Errorf("serve rejects the manifest's args: %v", err)
			}
			listen, _ := serve.Flags().GetString("listen")
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			if !strings.HasSuffix(listen, ":9580") || ports["tk-agent"] != 9580 {
				t.Errorf("listen %q and ports %v disagree", listen, ports)
			}
			if kind == "DaemonSet" && tpl.Annotations["prometheus.io/port"] != "9580" {
				t.Errorf("scrape annotation %q", tpl.Annotations["prometheus.io/port"])
			}
			probes := []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe}
			if kind == "StatefulSet" {
				// In the bookie pod the agent must not gate the bookie's readiness.
				if c.ReadinessProbe != nil {
					t.Errorf("the sidecar has a readiness probe: an agent problem would make the bookie unready")
				}
				probes = probes[1:]
			}
			for _, p := range probes {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || ports[p.HTTPGet.Port.StrVal] == 0 {
					t.Errorf("probe %+v: want /healthz on a named container port", p)
				}
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("resources lack a cpu or memory request or limit: %+v", c.Resources)
			}
			vols := map[string]bool{}
			for _, v := range pod.Volumes {
				if v.HostPath == nil {
					t.Errorf("volume %s is not a hostPath", v.Name)
				} else if !filepath.IsAbs(v.HostPath.Path) {
					t.Errorf("volume %s: hostPath %q not absolute", v.Name, v.HostPath.Path)
				}
				vols[v.Name] = true
			}
			mounted := map[string]bool{}
			for _, m := range c.VolumeMounts {
				// The sidecar mounts the bookie pod's own volumes.
				if kind == "DaemonSet" && !vols[m.Name] || kind == "StatefulSet" && !strings.HasPrefix(m.Name, meta.Name+"-") {
					t.Errorf("mount %s references no volume", m.Name)
				}
				if !m.ReadOnly {
					t.Errorf("mount %s should be read-only (the agent never writes to a live bookie's disk)", m.Name)
				}
				mounted[m.MountPath] = true
			}
			procfs, _ := serve.Flags().GetString("path.procfs")
			sysfs, _ := serve.Flags().GetString("path.sysfs")
			jd, _ := serve.Flags().GetStringSlice("journal-dir")
			ld, _ := serve.Flags().GetStringSlice("ledger-dir")
			paths := append(jd, ld...)
			if kind == "DaemonSet" {
				paths = append(paths, procfs, sysfs)
			} else if procfs != "/proc" || sysfs != "/sys" {
				t.Errorf("the sidecar reads its own /proc and /sys, not %s %s", procfs, sysfs)
			}
			if len(jd) == 0 || len(ld) == 0 {
				t.Errorf("journal dirs %v, ledger dirs %v", jd, ld)
			}
			for _, p := range paths {
				if !mounted[p] {
					t.Errorf("flag path %s is not a volume mount", p)
				}
			}
		})
	}
}

var metricRE = regexp.MustCompile(`\btierkeeper_[a-z_]+\b`)

// exportedMetrics returns the metric names the collector describes.
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	s, err := bookieagent.NewSampler(bookieagent.SamplerOptions{Dirs: []bookieagent.DirRole{{Dir: dir, Role: bookieagent.RoleLedger}}})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 100)
	bookieagent.NewCollector(s).Describe(ch)
	close(ch)
	var names []string
	re := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		names = append(names, re.FindStringSubmatch(d.String())[1])
	}
	return names
}

// TestConfigsReferenceRealMetrics: every tierkeeper_* name in the alert
// rules and the dashboard is one the agent exports.
func TestConfigsReferenceRealMetrics(t *testing.T) {
	names := exportedMetrics(t)
	for _, f := range []string{"bookieagent-alerts.yaml", "bookieagent-dashboard.json"} {
		b, err := os.ReadFile(filepath.Join(configsDir, f))
		if err != nil {
			t.Fatal(err)
		}
		found := metricRE.FindAllString(string(b), -1)
		if len(found) == 0 {
			t.Errorf("%s references no metric", f)
		}
		for _, m := range found {
			if !slices.Contains(names, m) {
				t.Errorf("%s references %s, which the agent does not export (have %v)", f, m, names)
			}
		}
	}
	dash := loadDashboard(t)
	if dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard: %+v", dash)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 || p.Targets[0].Expr == "" {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
}

// TestAlertRules runs promtool check rules and the rule unit tests.
func TestAlertRules(t *testing.T) {
	pt := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", "bookieagent-alerts.yaml"},
		{"test", "rules", "bookieagent-alerts.test.yaml"},
	} {
		cmd := exec.Command(pt, args...)
		cmd.Dir = configsDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// TestConfigsOnlyLedgerDirs: BookKeeper's thresholds apply to ledger dirs,
// so every alert and capacity panel over per-mount figures is restricted to
// mounts holding a ledger dir, and thresholds come from the agent's
// metrics, not numbers in the rules (they once treated journal
// mounts as if they could turn the bookie read-only).
func TestConfigsOnlyLedgerDirs(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	b, err := os.ReadFile(filepath.Join(configsDir, "bookieagent-alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	capacity := regexp.MustCompile(`tierkeeper_bookieagent_mount_(usage_ratio|avail_bytes|seconds_to|growth)`)
	ledger := `dir_info{role="ledger"}`
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if capacity.MatchString(r.Expr) && !strings.Contains(r.Expr, ledger) {
				t.Errorf("alert %s is not restricted to ledger dirs: %s", r.Alert, r.Expr)
			}
			if regexp.MustCompile(`0\.9[05]?\b`).MatchString(r.Expr) {
				t.Errorf("alert %s hard-codes a threshold: %s", r.Alert, r.Expr)
			}
		}
	}
	for _, p := range loadDashboard(t).Panels {
		for _, tg := range p.Targets {
			if capacity.MatchString(tg.Expr) && !strings.Contains(tg.Expr, ledger) {
				t.Errorf("panel %q is not restricted to ledger dirs: %s", p.Title, tg.Expr)
			}
		}
	}
}

// dashboard is the part of the Grafana dashboard the tests read.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	b, err := os.ReadFile(filepath.Join(configsDir, "bookieagent-dashboard.json"))
	if err == nil {
		err = json.Unmarshal(b, &d)
	}
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	return d
}
