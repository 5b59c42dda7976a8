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
	"sigs.k8s.io/yaml"

	"github.com/tierkeeper/tierkeeper/bookieagent"
)

const configsDir = "../../configs"

// The subset of the Kubernetes API the DaemonSet uses. Decoding is strict:
// a field not listed here (a typo, a wrong nesting) fails the test.
type (
	objectMeta struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	daemonSet struct {
		APIVersion string     `json:"apiVersion"`
		Kind       string     `json:"kind"`
		Metadata   objectMeta `json:"metadata"`
		Spec       struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			UpdateStrategy struct {
				Type string `json:"type"`
			} `json:"updateStrategy"`
			Template struct {
				Metadata objectMeta `json:"metadata"`
				Spec     podSpec    `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	podSpec struct {
		NodeSelector map[string]string `json:"nodeSelector,omitempty"`
		Tolerations  []struct {
			Key      string `json:"key"`
			Operator string `json:"operator"`
			Value    string `json:"value"`
			Effect   string `json:"effect"`
		} `json:"tolerations,omitempty"`
		Containers []container `json:"containers"`
		Volumes    []struct {
			Name     string `json:"name"`
			HostPath *struct {
				Path string `json:"path"`
				Type string `json:"type"`
			} `json:"hostPath,omitempty"`
			PersistentVolumeClaim *struct {
				ClaimName string `json:"claimName"`
				ReadOnly  bool   `json:"readOnly"`
			} `json:"persistentVolumeClaim,omitempty"`
		} `json:"volumes"`
	}
	probe struct {
		HTTPGet struct {
			Path string `json:"path"`
			Port string `json:"port"`
		} `json:"httpGet"`
		InitialDelaySeconds int `json:"initialDelaySeconds"`
		PeriodSeconds       int `json:"periodSeconds"`
		FailureThreshold    int `json:"failureThreshold,omitempty"`
	}
	container struct {
		Name  string   `json:"name"`
		Image string   `json:"image"`
		Args  []string `json:"args"`
		Ports []struct {
			Name          string `json:"name"`
			ContainerPort int    `json:"containerPort"`
			Protocol      string `json:"protocol"`
		} `json:"ports"`
		ReadinessProbe *probe `json:"readinessProbe"`
		LivenessProbe  *probe `json:"livenessProbe"`
		Resources      struct {
			Requests map[string]string `json:"requests"`
			Limits   map[string]string `json:"limits"`
		} `json:"resources"`
		SecurityContext map[string]any `json:"securityContext,omitempty"`
		VolumeMounts    []struct {
			Name             string `json:"name"`
			MountPath        string `json:"mountPath"`
			ReadOnly         bool   `json:"readOnly"`
			MountPropagation string `json:"mountPropagation,omitempty"`
		} `json:"volumeMounts"`
	}
)

func TestDaemonSetManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(configsDir, "bookieagent-daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds daemonSet
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	if ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet" || ds.Metadata.Name == "" {
		t.Fatalf("header: %+v", ds)
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod template", k, v)
		}
	}
	if len(ds.Spec.Selector.MatchLabels) == 0 {
		t.Error("empty selector")
	}
	pod := ds.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	// The args must be accepted by the real serve command.
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("args %v", c.Args)
	}
	serve := newServeCmd()
	if err := serve.ParseFlags(c.Args[1:]); err != nil {
		t.Errorf("serve rejects the manifest's args: %v", err)
	}
	listen, _ := serve.Flags().GetString("listen")
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if !strings.HasSuffix(listen, ":9580") || ports["metrics"] != 9580 || ds.Spec.Template.Metadata.Annotations["prometheus.io/port"] != "9580" {
		t.Errorf("listen %q, ports %v and scrape annotation disagree", listen, ports)
	}
	for _, p := range []*probe{c.ReadinessProbe, c.LivenessProbe} {
		if p == nil || p.HTTPGet.Path != "/healthz" || ports[p.HTTPGet.Port] == 0 {
			t.Errorf("probe %+v: want /healthz on a named container port", p)
		}
	}
	for _, k := range []string{"cpu", "memory"} {
		if c.Resources.Requests[k] == "" || c.Resources.Limits[k] == "" {
			t.Errorf("resources lack %s request or limit", k)
		}
	}
	vols := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.HostPath == nil && v.PersistentVolumeClaim == nil {
			t.Errorf("volume %s has no source", v.Name)
		}
		if v.HostPath != nil && !filepath.IsAbs(v.HostPath.Path) {
			t.Errorf("volume %s: hostPath %q not absolute", v.Name, v.HostPath.Path)
		}
		vols[v.Name] = true
	}
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if !vols[m.Name] {
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
	for _, p := range append(append([]string{procfs, sysfs}, jd...), ld...) {
		if !mounted[p] {
			t.Errorf("flag path %s is not a volume mount", p)
		}
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
// metrics, not numbers in the rules (issue 10: the rules treated journal
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
