package testenv

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStartPrometheus: the server scrapes a target every second with the
// labels given, Series counts what an instant query returns, and Stop
// leaves the port refusing.
func TestStartPrometheus(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/custom/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "# TYPE tk_probe gauge\ntk_probe{a=\"1\"} 0.25\ntk_probe{a=\"2\"} 0.5\n")
	}))
	defer target.Close()
	p := StartPrometheus(t, PrometheusOptions{Targets: []PrometheusTarget{{URL: target.URL + "/custom/metrics", Labels: map[string]string{"bookie": "bk-0:3181"}}}})
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") {
		t.Errorf("URL %s", p.URL)
	}
	p.WaitSeries(t, `tk_probe{bookie="bk-0:3181",job="target-0"}`, 2, 30*time.Second)
	if n, err := p.Series(t.Context(), `tk_probe > 0.3`); n != 1 || err != nil {
		t.Errorf("Series(tk_probe > 0.3) = %d, %v; want 1", n, err)
	}
	if _, err := p.Series(t.Context(), `scalar(sum(tk_probe))`); err == nil || !strings.Contains(err.Error(), "a scalar, not a vector") {
		t.Errorf("Series(scalar) error %v", err)
	}
	if _, err := p.Series(t.Context(), `sum(`); err == nil || !strings.Contains(err.Error(), "parse error") {
		t.Errorf("Series(bad PromQL) error %v", err)
	}
	p.Stop()
	if _, err := p.Series(t.Context(), "up"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("after Stop: %v", err)
	}
}
