package brokeradmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Broker-level offload thresholds (ServiceConfiguration; not dynamic, so
// the runtime configuration is broker.conf as loaded).
const (
	KeyThresholdBytes   = "managedLedgerOffloadAutoTriggerSizeThresholdBytes"
	KeyThresholdSeconds = "managedLedgerOffloadThresholdInSeconds"
	KeyDeletionLagMs    = "managedLedgerOffloadDeletionLagMs"
	KeyOffloadDriver    = "managedLedgerOffloadDriver"
)

// RuntimeConfig returns the configuration of the broker the admin URL
// reaches (GET /admin/v2/brokers/configuration/runtime: every
// ServiceConfiguration field, dynamic updates included, as strings).
// Pulsar requires super-user credentials for it.
func (c *Client) RuntimeConfig(ctx context.Context) (map[string]string, error) {
	const op = "broker runtime configuration"
	body, err := c.do(ctx, op, http.MethodGet, "/admin/v2/brokers/configuration/runtime", nil)
	if err != nil {
		return nil, err
	}
	var m map[string]string
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%s: %w: answer is not a JSON map of strings: %v", op, ErrRefused, err)
	}
	return m, nil
}

// OffloadThresholds are the broker-level offload settings of a runtime
// configuration.
type OffloadThresholds struct {
	// Bytes and Seconds: < 0 off (Pulsar's default -1).
	Bytes, Seconds int64
	// Driver is managedLedgerOffloadDriver ("" : none configured).
	Driver string
}

// ThresholdsFrom reads the offload thresholds out of a runtime
// configuration; a missing or malformed key is an error (the broker is not
// the Pulsar this was written for).
func ThresholdsFrom(cfg map[string]string) (OffloadThresholds, error) {
	var t OffloadThresholds
	for _, kv := range []struct {
		key string
		dst *int64
	}{{KeyThresholdBytes, &t.Bytes}, {KeyThresholdSeconds, &t.Seconds}} {
		s, ok := cfg[kv.key]
		if !ok {
			return t, fmt.Errorf("%w: the broker's runtime configuration has no %s", ErrRefused, kv.key)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return t, fmt.Errorf("%w: the broker's %s is %q, not an integer", ErrRefused, kv.key, s)
		}
		*kv.dst = v
	}
	t.Driver = cfg[KeyOffloadDriver]
	return t, nil
}

// ErrTopicPoliciesDisabled: the broker runs with topic-level policies off
// (topicLevelPoliciesEnabled=false), so no topic has any.
var ErrTopicPoliciesDisabled = errors.New("brokeradmin: topic-level policies are disabled on the broker")

// TopicOffloadPolicies returns the topic-level offload policies of t's
// partitioned topic (GET …/{topic}/offloadPolicies, not applied: the topic's
// own, without the namespace's and the broker's) as the broker's JSON
// (OffloadPoliciesImpl), or nil when the topic has none. A broker with
// topic-level policies disabled answers ErrTopicPoliciesDisabled.
func (c *Client) TopicOffloadPolicies(ctx context.Context, t mledger.TopicName) (json.RawMessage, error) {
	pt := t.PartitionedTopic()
	p, err := TopicPath(pt)
	if err != nil {
		return nil, err
	}
	body, err := c.do(ctx, "offload policies of "+pt.String(), http.MethodGet, p+"/offloadPolicies", nil)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusMethodNotAllowed {
		return nil, fmt.Errorf("%w: %w", ErrTopicPoliciesDisabled, err)
	}
	if err != nil {
		return nil, err
	}
	if s := strings.TrimSpace(string(body)); s == "" || s == "null" || s == "{}" {
		return nil, nil
	}
	return json.RawMessage(body), nil
}
