// Package charts holds the tests of the Helm chart in charts/tierkeeper:
// helm lint and helm template over the value sets in
// charts/tierkeeper/ci, every rendered object decoded strictly into the
// Kubernetes API types (an unknown or misplaced field fails), the
// offloader's rendered config parsed with exactly the files and variables
// its pod gets, values that cannot work rejected with a message naming
// the value, and the plain manifests in configs/ up to date with the chart
// (go test ./charts -run TestConfigsUpToDate -update rewrites them: make
// configs).
package charts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

var update = flag.Bool("update", false, "rewrite configs/*.yaml from the chart")

const (
	chartDir = "tierkeeper"
	// The Kubernetes version the chart is rendered for (helm built with
	// go install defaults to an old one).
	kubeVersion = "1.37.0"
	release     = "tk"
	namespace   = "pulsar"
)

// helmBin finds helm: .cache/bin (make installs it there) or PATH.
func helmBin(t *testing.T) string {
	t.Helper()
	if p := filepath.Join(testenv.CacheDir(), "bin", "helm"); fileExists(p) {
		return p
	}
	p, err := exec.LookPath("helm")
	if err != nil {
		testenv.Unavailable(t, "helm not installed (make deps installs it into .cache/bin)")
	}
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// helm runs helm with args, bounded in time; the error has stderr's tail.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := testenv.RunTool(context.Background(), time.Minute, exec.Command(helmBin(t), args...))
	return string(out), err
}

func render(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return helm(t, append([]string{"template", release, chartDir, "--namespace", namespace, "--kube-version", kubeVersion}, args...)...)
}

// valueSets are the chart's ci/*-values.yaml files.
func valueSets(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("value sets %v: %v", files, err)
	}
	return files
}

func TestLint(t *testing.T) {
	for _, f := range valueSets(t) {
		out, err := helm(t, "lint", "--strict", "--kube-version", kubeVersion, "--namespace", namespace, chartDir, "-f", f)
		if err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		} else if !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("%s: %s", f, out)
		}
	}
}

// objects are the rendered objects, decoded strictly by kind.
type objects struct {
	deployments  []*appsv1.Deployment
	daemonSets   []*appsv1.DaemonSet
	agentConf    agentConf // the value set's bookieagent.conf
	configMaps   []*corev1.ConfigMap
	services     []*corev1.Service
	accounts     []*corev1.ServiceAccount
	pdbs         []*policyv1.PodDisruptionBudget
	svcMonitors  []*monitoringv1.ServiceMonitor
	podMonitors  []*monitoringv1.PodMonitor
	rules        []*monitoringv1.PrometheusRule
	kinds        []string
	rbacRendered []string
}

func newDecoder() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, rbacv1.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// decodeStrict decodes one YAML document into the Kubernetes type its
// apiVersion/kind name; unknown fields, duplicate fields and unknown
// kinds are errors.
func decodeStrict(dec runtime.Decoder, doc []byte) (runtime.Object, error) {
	obj, _, err := dec.Decode(doc, nil, nil)
	return obj, err
}

func splitDocs(t *testing.T, s string) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufioReader(s))
	var docs [][]byte
	for {
		d, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(d []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(d, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func parse(t *testing.T, rendered string) *objects {
	t.Helper()
	dec := newDecoder()
	o := &objects{}
	for _, doc := range splitDocs(t, rendered) {
		obj, err := decodeStrict(dec, doc)
		if err != nil {
			t.Fatalf("strict decode: %v\n%s", err, doc)
		}
		o.kinds = append(o.kinds, obj.GetObjectKind().GroupVersionKind().Kind)
		switch v := obj.(type) {
		case *appsv1.Deployment:
			o.deployments = append(o.deployments, v)
		case *appsv1.DaemonSet:
			o.daemonSets = append(o.daemonSets, v)
		case *corev1.ConfigMap:
			o.configMaps = append(o.configMaps, v)
		case *corev1.Service:
			o.services = append(o.services, v)
		case *corev1.ServiceAccount:
			o.accounts = append(o.accounts, v)
		case *policyv1.PodDisruptionBudget:
			o.pdbs = append(o.pdbs, v)
		case *monitoringv1.ServiceMonitor:
			o.svcMonitors = append(o.svcMonitors, v)
		case *monitoringv1.PodMonitor:
			o.podMonitors = append(o.podMonitors, v)
		case *monitoringv1.PrometheusRule:
			o.rules = append(o.rules, v)
		case *rbacv1.Role, *rbacv1.ClusterRole, *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
			o.rbacRendered = append(o.rbacRendered, obj.GetObjectKind().GroupVersionKind().Kind)
		default:
			t.Fatalf("unexpected object %T", obj)
		}
	}
	return o
}

// configMapNamed is the ConfigMap called name, configMap the first whose
// name ends in suffix; nil if none.
func (o *objects) configMapNamed(name string) *corev1.ConfigMap {
	return o.findConfigMap(func(n string) bool { return n == name })
}

func (o *objects) configMap(suffix string) *corev1.ConfigMap {
	return o.findConfigMap(func(n string) bool { return strings.HasSuffix(n, suffix) })
}

func (o *objects) findConfigMap(match func(string) bool) *corev1.ConfigMap {
	for _, c := range o.configMaps {
		if match(c.Name) {
			return c
		}
	}
	return nil
}

// TestRenderValueSets renders each value set and checks the objects
// against each other and against the programs they run.
func TestRenderValueSets(t *testing.T) {
	for _, f := range valueSets(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := render(t, "-f", f)
			if err != nil {
				t.Fatal(err)
			}
			o := parse(t, out)
			var values struct {
				Offloader struct {
					Replicas int `json:"replicas"`
				} `json:"offloader"`
				Bookieagent struct {
					Layout string    `json:"layout"`
					Conf   agentConf `json:"conf"`
				} `json:"bookieagent"`
			}
			b, _ := os.ReadFile(f)
			_ = yaml.Unmarshal(b, &values)
			o.agentConf = values.Bookieagent.Conf
			if len(o.rbacRendered) > 0 {
				t.Errorf("RBAC objects %v: neither component calls the Kubernetes API", o.rbacRendered)
			}
			for _, sa := range o.accounts {
				if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
					t.Errorf("ServiceAccount %s mounts its token", sa.Name)
				}
			}
			checkOffloader(t, o, values.Offloader.Replicas)
			switch values.Bookieagent.Layout {
			case "", "daemonset":
				if len(o.daemonSets) != 1 {
					t.Fatalf("%d DaemonSets", len(o.daemonSets))
				}
				checkPod(t, "DaemonSet", o.daemonSets[0].Spec.Selector.MatchLabels, &o.daemonSets[0].Spec.Template)
				checkConf(t, "DaemonSet", &o.daemonSets[0].Spec.Template.Spec, values.Bookieagent.Conf)
			case "sidecar":
				checkSidecarPatch(t, o)
			case "none":
				if len(o.daemonSets) != 0 || o.configMap("-sidecar") != nil {
					t.Errorf("layout none rendered an agent")
				}
			}
			checkMonitoring(t, o)
		})
	}
}

func checkOffloader(t *testing.T, o *objects, replicas int) {
	t.Helper()
	if len(o.deployments) != 1 {
		t.Fatalf("%d Deployments", len(o.deployments))
	}
	d := o.deployments[0]
	if replicas == 0 {
		replicas = 2 // the chart's default
	}
	if d.Spec.Replicas == nil || int(*d.Spec.Replicas) != replicas {
		t.Errorf("replicas %v, want %d", d.Spec.Replicas, replicas)
	}
	checkPod(t, "Deployment", d.Spec.Selector.MatchLabels, &d.Spec.Template)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	port := map[string]int32{}
	for _, p := range c.Ports {
		port[p.Name] = p.ContainerPort
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Port.StrVal != "http" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port.StrVal != "http" || port["http"] == 0 {
		t.Errorf("probes %+v %+v on ports %v: want /healthz and /readyz on http", c.LivenessProbe, c.ReadinessProbe, port)
	}

	// The config the pod gets parses with exactly the pod's files and env.
	files := map[string]string{}
	var cfgText string
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name != m.Name {
				continue
			}
			if v.Secret != nil {
				for _, it := range v.Secret.Items {
					files[m.MountPath+"/"+it.Path] = "secret-" + it.Key
					if strings.Contains(it.Key, "digest") { // ZooKeeper digest credentials are user:password
						files[m.MountPath+"/"+it.Path] = "tierkeeper:secret-" + it.Key
					}
				}
			}
			if v.ConfigMap != nil && v.Name == "config" {
				cm := o.configMapNamed(v.ConfigMap.Name)
				if cm == nil {
					t.Fatalf("config volume %s names ConfigMap %s, not rendered", v.Name, v.ConfigMap.Name)
				}
				if m.MountPath != "/etc/tierkeeper/offloader.yaml" || m.SubPath != "offloader.yaml" {
					t.Errorf("config mounted at %s (subPath %s)", m.MountPath, m.SubPath)
				}
				cfgText = cm.Data["offloader.yaml"]
			}
		}
	}
	if !slices.Equal(c.Args[:3], []string{"run", "--config", "/etc/tierkeeper/offloader.yaml"}) {
		t.Errorf("args %v", c.Args)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	read := map[string]bool{}
	cfg, err := offloader.Parse([]byte(cfgText), offloader.ParseOptions{
		Getenv: func(k string) string { return env[k] },
		ReadFile: func(p string) ([]byte, error) {
			read[p] = true
			v, ok := files[p]
			if !ok {
				return nil, fmt.Errorf("open %s: %w (not mounted in the pod)", p, os.ErrNotExist)
			}
			return []byte(v), nil
		},
	})
	if err != nil {
		t.Fatalf("rendered offloader.yaml: %v\n%s", err, cfgText)
	}
	if !strings.HasSuffix(cfg.HTTP.Listen, fmt.Sprintf(":%d", port["http"])) {
		t.Errorf("config listens on %s, container port %d", cfg.HTTP.Listen, port["http"])
	}
	if tok := cfg.Admin.Token.Reveal(); tok != "" && !strings.HasPrefix(tok, "secret-") {
		t.Errorf("admin token %q is not from the Secret", tok)
	}
	if d := cfg.ZooKeeper.Digest.Reveal(); d != "" && !strings.HasPrefix(d, "tierkeeper:secret-") {
		t.Errorf("zookeeper digest %q is not from the Secret", d)
	}
	if grace := pod.TerminationGracePeriodSeconds; grace == nil || float64(*grace) < cfg.Scheduler.StopTimeout.D().Seconds()+30 {
		t.Errorf("terminationGracePeriodSeconds %v is not above scheduler.stop_timeout %s + 30s", grace, cfg.Scheduler.StopTimeout)
	}
	for f := range files {
		if !read[f] {
			t.Errorf("Secret file %s is mounted but the config never reads it", f)
		}
	}

	// Service and PDB select the Deployment's pods.
	podLabels := d.Spec.Template.Labels
	for _, s := range o.services {
		if strings.HasSuffix(s.Name, "-offloader") {
			if !selects(s.Spec.Selector, podLabels) || s.Spec.Ports[0].TargetPort.StrVal != "http" {
				t.Errorf("Service %s selector %v / ports %v do not reach the pods %v", s.Name, s.Spec.Selector, s.Spec.Ports, podLabels)
			}
		}
	}
	if replicas >= 2 {
		if len(o.pdbs) != 1 || !selects(o.pdbs[0].Spec.Selector.MatchLabels, podLabels) || o.pdbs[0].Spec.MaxUnavailable.IntValue() != 1 {
			t.Errorf("PodDisruptionBudget %+v", o.pdbs)
		}
	}
}

// checkPod: selector matches the template, non-root, token not mounted,
// every container with resources, read-only root, no privileges, and
// mounts naming volumes.
func checkPod(t *testing.T, what string, selector map[string]string, tpl *corev1.PodTemplateSpec) {
	t.Helper()
	if len(selector) == 0 || !selects(selector, tpl.Labels) {
		t.Errorf("%s selector %v does not match its pods %v", what, selector, tpl.Labels)
	}
	spec := tpl.Spec
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s mounts a service account token", what)
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("%s pod security %+v: want non-root", what, spec.SecurityContext)
	}
	vols := map[string]bool{}
	for _, v := range spec.Volumes {
		vols[v.Name] = true
	}
	for _, c := range spec.Containers {
		checkContainer(t, what, &c, vols)
	}
}

func checkContainer(t *testing.T, what string, c *corev1.Container, vols map[string]bool) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s container %s security %+v", what, c.Name, sc)
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s container %s: no memory request/limit", what, c.Name)
	}
	if !strings.HasPrefix(c.Image, "ghcr.io/tierkeeper/") {
		t.Errorf("%s image %s", what, c.Image)
	}
	for _, m := range c.VolumeMounts {
		if vols != nil && !vols[m.Name] {
			t.Errorf("%s mount %s names no volume", what, m.Name)
		}
	}
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// confVolume is the volume of the bookie's bookkeeper.conf
// (bookieagent.conf).
const confVolume = "tierkeeper-bookie-conf"

// agentConf is bookieagent.conf of a value set.
type agentConf struct {
	HostPath  string `json:"hostPath"`
	ConfigMap struct {
		Name string `json:"name"`
		Key  string `json:"key"`
	} `json:"configMap"`
}

// checkConf: with bookieagent.conf set, the agent's pod has exactly one
// volume of it (the node's file or the ConfigMap key, as bookkeeper.conf),
// mounted read-only, and serve gets --conf of the mounted file; without
// it, neither.
func checkConf(t *testing.T, what string, pod *corev1.PodSpec, want agentConf) {
	t.Helper()
	c := pod.Containers[0]
	var arg string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--conf="); ok {
			arg = v
		}
	}
	var vol *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == confVolume {
			vol = &pod.Volumes[i]
		}
	}
	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == confVolume {
			mount = &c.VolumeMounts[i]
		}
	}
	if want.HostPath == "" && want.ConfigMap.Name == "" {
		if arg != "" || vol != nil || mount != nil {
			t.Errorf("%s: no bookieagent.conf, but --conf=%q, volume %+v, mount %+v", what, arg, vol, mount)
		}
		return
	}
	if vol == nil || mount == nil || !mount.ReadOnly || arg == "" {
		t.Fatalf("%s: bookieagent.conf %+v: --conf=%q, volume %+v, mount %+v; want a read-only mount passed as --conf", what, want, arg, vol, mount)
	}
	switch {
	case want.HostPath != "":
		if vol.HostPath == nil || vol.HostPath.Path != want.HostPath || vol.HostPath.Type == nil || *vol.HostPath.Type != corev1.HostPathFile || arg != mount.MountPath {
			t.Errorf("%s: volume %+v mounted at %s, --conf=%s: want the node's file %s", what, vol.VolumeSource, mount.MountPath, arg, want.HostPath)
		}
	default:
		cm := vol.ConfigMap
		if cm == nil || cm.Name != want.ConfigMap.Name || len(cm.Items) != 1 || cm.Items[0].Key != want.ConfigMap.Key ||
			arg != mount.MountPath+"/"+cm.Items[0].Path {
			t.Errorf("%s: volume %+v mounted at %s, --conf=%s: want key %s of ConfigMap %s", what, vol.VolumeSource, mount.MountPath, arg, want.ConfigMap.Key, want.ConfigMap.Name)
		}
	}
}

// checkSidecarPatch: the patch is a strict apps/v1 StatefulSet for the
// Apache chart's bookies, mounting their volumes read-only by that chart's
// names (<fullname>-<component>-<volume>).
func checkSidecarPatch(t *testing.T, o *objects) {
	t.Helper()
	cm := o.configMap("-bookieagent-sidecar")
	if cm == nil {
		t.Fatal("no sidecar patch ConfigMap")
	}
	obj, err := decodeStrict(newDecoder(), []byte(cm.Data["bookie-statefulset-patch.yaml"]))
	if err != nil {
		t.Fatalf("patch: %v\n%s", err, cm.Data["bookie-statefulset-patch.yaml"])
	}
	sts, ok := obj.(*appsv1.StatefulSet)
	if !ok || len(sts.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("patch is %T", obj)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	checkContainer(t, "sidecar", &c, nil)
	if !strings.HasSuffix(sts.Name, "-bookie") || sts.Spec.Template.Labels["tierkeeper.io/bookieagent"] != "sidecar" {
		t.Errorf("patch targets %s with labels %v", sts.Name, sts.Spec.Template.Labels)
	}
	for _, m := range c.VolumeMounts {
		if m.Name == confVolume {
			continue // checkConf
		}
		if !m.ReadOnly || !strings.HasPrefix(m.Name, sts.Name+"-") || !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasSuffix(a, "="+m.MountPath) }) {
			t.Errorf("mount %+v: want read-only, named %s-<volume>, passed as a --*-dir", m, sts.Name)
		}
	}
	checkConf(t, "sidecar", &sts.Spec.Template.Spec, o.agentConf)
	if sc := c.SecurityContext; sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("sidecar runs as %+v", sc)
	}
}

func checkMonitoring(t *testing.T, o *objects) {
	t.Helper()
	for _, sm := range o.svcMonitors {
		found := false
		for _, s := range o.services {
			if selects(sm.Spec.Selector.MatchLabels, s.Labels) {
				for _, p := range s.Spec.Ports {
					found = found || p.Name == sm.Spec.Endpoints[0].Port
				}
			}
		}
		if !found {
			t.Errorf("ServiceMonitor %s selects no Service port %s", sm.Name, sm.Spec.Endpoints[0].Port)
		}
	}
	for _, pm := range o.podMonitors {
		if pm.Spec.PodMetricsEndpoints[0].Port == nil || *pm.Spec.PodMetricsEndpoints[0].Port != "tk-agent" {
			t.Errorf("PodMonitor %s port %v", pm.Name, pm.Spec.PodMetricsEndpoints[0].Port)
		}
		for _, ds := range o.daemonSets {
			if !selects(pm.Spec.Selector.MatchLabels, ds.Spec.Template.Labels) {
				t.Errorf("PodMonitor %s does not select the DaemonSet's pods", pm.Name)
			}
		}
	}
	for _, r := range o.rules {
		var got []string
		for _, g := range r.Spec.Groups {
			for _, rule := range g.Rules {
				got = append(got, rule.Alert)
			}
		}
		want := alertNames(t, "offloader-alerts.yaml")
		if len(o.daemonSets) > 0 || o.configMap("-sidecar") != nil {
			want = append(want, alertNames(t, "bookieagent-alerts.yaml")...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("PrometheusRule alerts %v, want the rule files' %v", got, want)
		}
	}
	for _, cm := range o.configMaps {
		for k, v := range cm.Data {
			if !strings.HasSuffix(k, ".json") {
				continue
			}
			var d struct {
				UID string `json:"uid"`
			}
			if err := json.Unmarshal([]byte(v), &d); err != nil || d.UID == "" || cm.Labels["grafana_dashboard"] != "1" {
				t.Errorf("dashboard %s/%s: %v uid %q labels %v", cm.Name, k, err, d.UID, cm.Labels)
			}
		}
	}
}

func alertNames(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "files", file))
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Alert)
		}
	}
	return out
}

// TestBadValues: values that cannot work fail helm template with a
// message naming the value.
func TestBadValues(t *testing.T) {
	base := filepath.Join(chartDir, "ci", "s3-static-values.yaml")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"defaults: no store", nil, "offloader.zookeeper.servers is required"},
		{"no store", []string{"--set", "offloader.zookeeper.servers=zk:2181"}, "offloader.store.type is required"},
		{"unknown store", []string{"-f", base, "--set", "offloader.store.type=gcs"}, `offloader.store.type is required: s3, cos or fs (got "gcs")`},
		{"no bucket", []string{"-f", base, "--set", "offloader.store.config.bucket="}, "offloader.store.config.bucket is required"},
		{"replicas 0", []string{"-f", base, "--set", "offloader.replicas=0"}, "offloader.replicas must be an integer >= 1"},
		{"replicas -1", []string{"-f", base, "--set", "offloader.replicas=-1"}, "offloader.replicas must be an integer >= 1"},
		{"secret name missing", []string{"-f", base, "--set", "offloader.secret.name="}, "offloader.secret.name is required"},
		{"zookeeper digest without a secret", []string{"-f", base, "--set", "offloader.secret.name=,offloader.store.secretKeys=null,offloader.admin.tokenSecretKey=,offloader.store.config.credentials=null"},
			"offloader.zookeeper.digestSecretKey name keys of that Secret"},
		{"inline secret", []string{"-f", base, "--set", "offloader.store.config.credentials.secret_access_key=abc"}, "offloader.store.config.credentials.secret_access_key: secrets do not go into values"},
		{"settings.store", []string{"-f", base, "--set", "offloader.settings.store.type=s3"}, "offloader.settings.store: set it with offloader.store"},
		{"token without url", []string{"-f", base, "--set", "offloader.admin.url="}, "offloader.admin.url is required"},
		{"short grace", []string{"-f", base, "--set", "offloader.terminationGracePeriodSeconds=10"}, "offloader.terminationGracePeriodSeconds 10 is too short"},
		{"bad layout", []string{"-f", base, "--set", "bookieagent.layout=host"}, "bookieagent.layout must be daemonset, sidecar or none"},
		{"conf twice", []string{"-f", base, "--set", "bookieagent.conf.hostPath=/etc/bk.conf,bookieagent.conf.configMap.name=bk,bookieagent.conf.configMap.key=k"}, "bookieagent.conf: set hostPath or configMap, not both"},
		{"conf relative", []string{"-f", base, "--set", "bookieagent.conf.hostPath=conf/bookkeeper.conf"}, "bookieagent.conf.hostPath must be an absolute path"},
		{"conf hostPath in a sidecar", []string{"-f", base, "--set", "bookieagent.layout=sidecar,bookieagent.conf.hostPath=/etc/bk.conf"}, "a sidecar cannot mount a node's file"},
		{"conf configMap without key", []string{"-f", base, "--set", "bookieagent.conf.hostPath=,bookieagent.conf.configMap.name=bk"}, "bookieagent.conf.configMap.key is required"},
		{"no host dirs", []string{"-f", base, "--set", "bookieagent.daemonset.ledgerDirs=null"}, "bookieagent.daemonset.ledgerDirs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.args...)
			if err == nil {
				t.Fatalf("rendered; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to contain %q", err, tc.want)
			}
			if _, msg, _ := strings.Cut(err.Error(), "Error:"); strings.Contains(msg, "abc") {
				t.Errorf("the secret value is in the message")
			}
		})
	}
}

// configFiles are the plain manifests in configs/ rendered from the chart
// with ci/configs-values.yaml (release tierkeeper, namespace pulsar).
var configFiles = []struct {
	file, what string
	args       []string
	patch      bool
}{
	{"offloader-deployment.yaml", "The offload service", []string{"--set", "bookieagent.layout=none"}, false},
	{"bookieagent-daemonset.yaml", "The bookie agent as a DaemonSet (host paths)", []string{"--set", "offloader.enabled=false"}, false},
	{"bookieagent-sidecar-patch.yaml", "The bookie agent as a sidecar: a patch of the pulsar chart's bookie StatefulSet",
		[]string{"--set", "offloader.enabled=false", "--set", "bookieagent.layout=sidecar"}, true},
}

// TestConfigsUpToDate: configs/ holds exactly what the chart renders
// (-update rewrites the files).
func TestConfigsUpToDate(t *testing.T) {
	for _, cf := range configFiles {
		args := append([]string{"template", "tierkeeper", chartDir, "--namespace", "pulsar", "--kube-version", kubeVersion,
			"-f", filepath.Join(chartDir, "ci", "configs-values.yaml")}, cf.args...)
		out, err := helm(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if cf.patch {
			o := parse(t, out)
			cm := o.configMap("-sidecar")
			if cm == nil {
				t.Fatal("no sidecar ConfigMap")
			}
			out = cm.Data["bookie-statefulset-patch.yaml"]
		}
		want := fmt.Sprintf("# %s.\n# Rendered from charts/tierkeeper by `make configs` (values:\n# charts/tierkeeper/ci/configs-values.yaml). Do not edit: change the chart and\n# run make configs; see charts/tierkeeper/README.md.\n%s", cf.what, out)
		path := filepath.Join("..", "configs", cf.file)
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("configs/%s is not what the chart renders: run make configs", cf.file)
		}
	}
}

// TestValuesDocumented: the README's values table names every key of
// values.yaml (maps are documented as a whole when they are free-form).
func TestValuesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, val := range m {
			key := prefix + k
			if sub, ok := val.(map[string]any); ok && len(sub) > 0 && !freeForm[key] {
				walk(key+".", sub)
				continue
			}
			keys = append(keys, key)
		}
	}
	walk("", v)
	sort.Strings(keys)
	for _, k := range keys {
		if !bytes.Contains(readme, []byte("| `"+k+"` |")) {
			t.Errorf("README.md: no row for `%s`", k)
		}
	}
}

// freeForm are maps of values.yaml passed through as a whole.
var freeForm = map[string]bool{
	"offloader.settings": true, "offloader.resources": true, "bookieagent.resources": true,
	"offloader.livenessProbe": true, "offloader.readinessProbe": true, "offloader.store.config": true,
	"bookieagent.daemonset.nodeSelector": true, "monitoring.dashboards.labels": true,
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

// TestStrictDecodeRejectsTypos: a misspelt field passed through values
// (periodSecond) renders, and the strict decoding catches it.
func TestStrictDecodeRejectsTypos(t *testing.T) {
	out, err := render(t, "-f", filepath.Join(chartDir, "ci", "s3-static-values.yaml"), "--set", "offloader.livenessProbe.periodSecond=10")
	if err != nil {
		t.Fatal(err)
	}
	dec := newDecoder()
	var errs []string
	for _, doc := range splitDocs(t, out) {
		if _, err := decodeStrict(dec, doc); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], `unknown field "spec.template.spec.containers[0].livenessProbe.periodSecond"`) {
		t.Errorf("decode errors %q, want one naming the unknown field", errs)
	}
}
