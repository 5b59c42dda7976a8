package testenv

// Prometheus: a real Prometheus server (Debian's prometheus package,
// /usr/bin/prometheus) on 127.0.0.1 scraping the targets a test names.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// promStartTimeout bounds the wait for a started server to be ready.
const promStartTimeout = 60 * time.Second

// PrometheusTarget is one scrape target: its /metrics URL and the labels
// Prometheus adds to every series scraped from it (as a relabelling of the
// target would, e.g. {"bookie": "bk-0:3181"}).
type PrometheusTarget struct {
	URL    string // "http://127.0.0.1:port/metrics"
	Labels map[string]string
}

// PrometheusOptions configure StartPrometheus.
type PrometheusOptions struct {
	// ScrapeInterval is the global scrape_interval. Default 1s.
	ScrapeInterval time.Duration
	Targets        []PrometheusTarget
}

// Prometheus is a running server with its own TSDB directory, stopped
// when the test that started it ends.
type Prometheus struct {
	URL     string // "http://127.0.0.1:port"
	Addr    string // "127.0.0.1:port"
	Dir     string // config and TSDB
	LogPath string
	proc    *Process
}

// StartPrometheus starts a server scraping o.Targets (one job per
// target, job="target-<i>") and returns once /-/ready answers 200. Without
// the prometheus binary the test is skipped (failed when peers are
// required).
func StartPrometheus(t testing.TB, o PrometheusOptions) *Prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		Unavailable(t, "prometheus not installed (make deps installs Debian's prometheus package)")
		return nil
	}
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = time.Second
	}
	dir := t.TempDir()
	cfg, err := prometheusConfig(o)
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	port := FreePort(t)
	p := &Prometheus{Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: dir}
	p.URL = "http://" + p.Addr
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+p.Addr, "--storage.tsdb.retention.time=1h")
	p.proc = Start(t, "prometheus", dir, cmd)
	p.LogPath = p.proc.LogPath
	if err := p.waitReady(promStartTimeout); err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	return p
}

// prometheusConfig renders the configuration (JSON is YAML).
func prometheusConfig(o PrometheusOptions) (string, error) {
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type job struct {
		Name          string   `json:"job_name"`
		Scheme        string   `json:"scheme"`
		MetricsPath   string   `json:"metrics_path"`
		ScrapeTimeout string   `json:"scrape_timeout"`
		Static        []static `json:"static_configs"`
	}
	jobs := []job{}
	for i, tg := range o.Targets {
		u, err := url.Parse(tg.URL)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("target %q: want http://host:port/path", tg.URL)
		}
		jobs = append(jobs, job{Name: fmt.Sprintf("target-%d", i), Scheme: u.Scheme, MetricsPath: u.EscapedPath(),
			ScrapeTimeout: o.ScrapeInterval.String(), Static: []static{{Targets: []string{u.Host}, Labels: tg.Labels}}})
	}
	b, err := json.Marshal(map[string]any{
		"global":         map[string]string{"scrape_interval": o.ScrapeInterval.String(), "evaluation_interval": o.ScrapeInterval.String()},
		"scrape_configs": jobs,
	})
	return string(b), err
}

func (p *Prometheus) waitReady(timeout time.Duration) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if done, err := p.proc.Exited(); done {
			return fmt.Errorf("exited during start-up: %v; log tail:\n%s", err, Tail(p.LogPath, 30))
		}
		resp, err := c.Get(p.URL + "/-/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s/-/ready not 200 after %s (last: %s); log tail:\n%s", p.URL, timeout, last, Tail(p.LogPath, 30))
}

// Stop stops the server (SIGTERM, then SIGKILL): its URL refuses
// connections afterwards.
func (p *Prometheus) Stop() { p.proc.Stop() }

// Series returns the number of series the instant query expr returns now
// (an error for a failed query or a result that is not a vector), through
// the plain HTTP API, independent of any client under test.
func (p *Prometheus) Series(ctx context.Context, expr string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&r); err != nil {
		return 0, fmt.Errorf("query %q: %s: %w", expr, resp.Status, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query %q: %s: %s", expr, resp.Status, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return 0, fmt.Errorf("query %q: a %s, not a vector", expr, r.Data.ResultType)
	}
	return len(r.Data.Result), nil
}

// WaitSeries waits (at most limit, polling every 200 ms) until expr
// returns at least n series: the scrapes a test needs have landed. t fails
// naming the query and its last answer.
func (p *Prometheus) WaitSeries(t testing.TB, expr string, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got, err := p.Series(t.Context(), expr)
		if err == nil && got >= n {
			return
		}
		if time.Now().After(deadline) {
			last := fmt.Sprintf("%d series", got)
			if err != nil {
				last = err.Error()
			}
			t.Fatalf("not within %s: %d series of %s in %s (last: %s); log tail:\n%s", limit, n, expr, p.URL, last, Tail(p.LogPath, 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
