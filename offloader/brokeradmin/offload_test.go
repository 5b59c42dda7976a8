package brokeradmin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRuntimeConfigAndThresholds(t *testing.T) {
	rec := &recorder{status: 200, body: `{"managedLedgerOffloadAutoTriggerSizeThresholdBytes":"-1","managedLedgerOffloadThresholdInSeconds":"3600","managedLedgerOffloadDriver":"aws-s3","clusterName":"c"}`}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(Config{URL: srv.URL, Token: "SECRET"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.RuntimeConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	th, err := ThresholdsFrom(cfg)
	if err != nil || th.Bytes != -1 || th.Seconds != 3600 || th.Driver != "aws-s3" {
		t.Fatalf("thresholds %+v, %v", th, err)
	}
	if rec.paths[0] != "/admin/v2/brokers/configuration/runtime" || rec.methods[0] != http.MethodGet || rec.auth[0] != "Bearer SECRET" {
		t.Fatalf("sent %s %s auth %q", rec.methods[0], rec.paths[0], rec.auth[0])
	}
	for _, bad := range []map[string]string{{KeyThresholdBytes: "-1"}, {KeyThresholdBytes: "x", KeyThresholdSeconds: "-1"}} {
		if _, err := ThresholdsFrom(bad); !errors.Is(err, ErrRefused) {
			t.Errorf("%v: %v, want ErrRefused", bad, err)
		}
	}
	rec.mu.Lock()
	rec.status, rec.body = 403, `{"reason":"Don't have admin permission"}`
	rec.mu.Unlock()
	if _, err := c.RuntimeConfig(context.Background()); !errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), "SECRET") ||
		!strings.Contains(err.Error(), "admin permission") {
		t.Fatalf("refused: %v", err)
	}
}

func TestTopicOffloadPolicies(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL}, Options{})
	set := func(status int, body string) {
		rec.mu.Lock()
		rec.status, rec.body = status, body
		rec.mu.Unlock()
	}
	// A partition asks for its partitioned topic's policies.
	set(204, "")
	if p, err := c.TopicOffloadPolicies(context.Background(), topic(t, "persistent://t/ns/x-partition-3")); p != nil || err != nil {
		t.Fatalf("none: %s, %v", p, err)
	}
	if rec.paths[0] != "/admin/v2/persistent/t/ns/x/offloadPolicies" {
		t.Fatalf("path %s", rec.paths[0])
	}
	set(200, `{"managedLedgerOffloadThresholdInBytes":0}`)
	if p, err := c.TopicOffloadPolicies(context.Background(), topic(t, "persistent://t/ns/x")); err != nil || !strings.Contains(string(p), "InBytes") {
		t.Fatalf("set: %s, %v", p, err)
	}
	set(405, `{"reason":"Topic level policies is disabled, to enable the topic level policy and retry."}`)
	if _, err := c.TopicOffloadPolicies(context.Background(), topic(t, "persistent://t/ns/x")); !errors.Is(err, ErrTopicPoliciesDisabled) {
		t.Fatalf("disabled: %v", err)
	}
	set(500, `{"reason":"boom"}`)
	if _, err := c.TopicOffloadPolicies(context.Background(), topic(t, "persistent://t/ns/x")); !errors.Is(err, ErrRefused) || errors.Is(err, ErrTopicPoliciesDisabled) {
		t.Fatalf("failure: %v", err)
	}
}
