package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tierkeeper/tierkeeper/offloader"
)

const configsDir = "../../configs"

// The subset of the Kubernetes API the manifest uses; decoding is strict,
// so a typo or a wrong nesting fails the test.
type (
	k8sMeta struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	k8sConfigMap struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   k8sMeta           `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
	k8sProbe struct {
		HTTPGet struct {
			Path string `json:"path"`
			Port string `json:"port"`
		} `json:"httpGet"`
		InitialDelaySeconds int `json:"initialDelaySeconds"`
		PeriodSeconds       int `json:"periodSeconds"`
		FailureThreshold    int `json:"failureThreshold"`
	}
	k8sContainer struct {
		Name  string   `json:"name"`
		Image string   `json:"image"`
		Args  []string `json:"args"`
		Ports []struct {
			Name          string `json:"name"`
			ContainerPort int    `json:"containerPort"`
		} `json:"ports"`
		Env []struct {
			Name      string `json:"name"`
			ValueFrom struct {
				SecretKeyRef struct {
					Name string `json:"name"`
					Key  string `json:"key"`
				} `json:"secretKeyRef"`
			} `json:"valueFrom"`
		} `json:"env"`
		LivenessProbe  k8sProbe `json:"livenessProbe"`
		ReadinessProbe k8sProbe `json:"readinessProbe"`
		Resources      struct {
			Requests map[string]string `json:"requests"`
			Limits   map[string]string `json:"limits"`
		} `json:"resources"`
		VolumeMounts []struct {
			Name      string `json:"name"`
			MountPath string `json:"mountPath"`
			SubPath   string `json:"subPath,omitempty"`
			ReadOnly  bool   `json:"readOnly"`
		} `json:"volumeMounts"`
	}
	k8sDeployment struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Metadata   k8sMeta `json:"metadata"`
		Spec       struct {
			Replicas int `json:"replicas"`
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Strategy struct {
				Type          string `json:"type"`
				RollingUpdate struct {
					MaxUnavailable int `json:"maxUnavailable"`
					MaxSurge       int `json:"maxSurge"`
				} `json:"rollingUpdate"`
			} `json:"strategy"`
			Template struct {
				Metadata k8sMeta `json:"metadata"`
				Spec     struct {
					TerminationGracePeriodSeconds int `json:"terminationGracePeriodSeconds"`
					SecurityContext               struct {
						RunAsNonRoot bool `json:"runAsNonRoot"`
						RunAsUser    int  `json:"runAsUser"`
					} `json:"securityContext"`
					Containers []k8sContainer `json:"containers"`
					Volumes    []struct {
						Name      string `json:"name"`
						ConfigMap *struct {
							Name string `json:"name"`
						} `json:"configMap,omitempty"`
						Secret *struct {
							SecretName string `json:"secretName"`
							Items      []struct {
								Key  string `json:"key"`
								Path string `json:"path"`
							} `json:"items"`
						} `json:"secret,omitempty"`
					} `json:"volumes"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
)

// TestDeploymentManifest checks the Deployment: 2 replicas, probes on the
// service's endpoints, a grace period longer than the stop timeout, and an
// embedded config that parses with exactly the files and variables the pod
// provides (the secret volume's items, the container env).
func TestDeploymentManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(configsDir, "offloader-deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("%d documents, want ConfigMap and Deployment", len(docs))
	}
	var cm k8sConfigMap
	if err := yaml.UnmarshalStrict(docs[0], &cm); err != nil {
		t.Fatalf("ConfigMap: %v", err)
	}
	var dep k8sDeployment
	if err := yaml.UnmarshalStrict(docs[1], &dep); err != nil {
		t.Fatalf("Deployment: %v", err)
	}
	spec := dep.Spec.Template.Spec
	if dep.Kind != "Deployment" || dep.Spec.Replicas != 2 || len(spec.Containers) != 1 {
		t.Fatalf("deployment: kind %s, %d replicas, %d containers", dep.Kind, dep.Spec.Replicas, len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe.HTTPGet.Port != "http" || c.Ports[0].ContainerPort != 8090 {
		t.Errorf("probes/ports: %+v %+v %+v", c.LivenessProbe, c.ReadinessProbe, c.Ports)
	}
	// The container's files: secret items under their mount, the config.
	files := map[string]string{}
	var cfgPath string
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name != m.Name {
				continue
			}
			if v.Secret != nil {
				for _, it := range v.Secret.Items {
					files[m.MountPath+"/"+it.Path] = "secret-" + it.Key
				}
			}
			if v.ConfigMap != nil && v.ConfigMap.Name == cm.Metadata.Name {
				cfgPath = m.MountPath
			}
		}
	}
	envs := map[string]string{}
	for _, e := range c.Env {
		envs[e.Name] = "secret-" + e.ValueFrom.SecretKeyRef.Key
	}
	if !strings.Contains(strings.Join(c.Args, " "), "run --config "+cfgPath) {
		t.Errorf("args %v do not run the mounted config %s", c.Args, cfgPath)
	}
	var read []string
	cfg, err := offloader.Parse([]byte(cm.Data["offloader.yaml"]), offloader.ParseOptions{
		Getenv: func(k string) string { return envs[k] },
		ReadFile: func(p string) ([]byte, error) {
			read = append(read, p)
			v, ok := files[p]
			if !ok {
				return nil, fmt.Errorf("open %s: %w", p, os.ErrNotExist)
			}
			return []byte(v), nil
		},
	})
	if err != nil {
		t.Fatalf("embedded config: %v", err)
	}
	if len(read) != 2 || cfg.Admin.Token.Reveal() != "secret-pulsar-token" {
		t.Errorf("config read %v; token from the mount: %v", read, cfg.Admin.Token.Reveal() == "secret-pulsar-token")
	}
	if grace := spec.TerminationGracePeriodSeconds; float64(grace) < cfg.Scheduler.StopTimeout.D().Seconds()+30 {
		t.Errorf("terminationGracePeriodSeconds %d is not above scheduler.stop_timeout %s + 30s", grace, cfg.Scheduler.StopTimeout)
	}
	if !strings.HasSuffix(cfgPath, "/offloader.yaml") || cfg.HTTP.Listen != ":8090" {
		t.Errorf("config at %s listens on %s", cfgPath, cfg.HTTP.Listen)
	}
}

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
