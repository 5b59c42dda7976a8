package policy

import (
	"encoding/json"
	"fmt"
	"time"
)

// Pulsar keeps a namespace's policies as JSON (Jackson, the Policies class)
// at /admin/policies/<tenant>/<namespace> in the configuration metadata
// store. The offload-related fields, as Pulsar 4.0 writes them:
//
//	"offload_threshold": -1,                 long, bytes; -1 = unset
//	"offload_threshold_in_seconds": -1,      long, seconds; -1 = unset
//	"offload_deletion_lag_ms": null,         Long, ms; null = unset
//	"offload_policies": {                    OffloadPoliciesImpl or null
//	    "managedLedgerOffloadDriver": "aws-s3",
//	    "managedLedgerOffloadThresholdInBytes": null,     Long
//	    "managedLedgerOffloadThresholdInSeconds": null,   Long
//	    "managedLedgerOffloadDeletionLagInMillis": null,  Long
//	    "managedLedgerOffloadMaxBlockSizeInBytes": ...,   Integer
//	    ... (bucket, region, endpoint, credentials, read priority)
//	}
//
// Precedence (OffloadPoliciesImpl.oldPoliciesCompatible, then
// mergeConfiguration): a value in offload_policies wins; else the legacy
// top-level field when set (≠ -1, non-null); else the broker's own setting.
// Topic-level policies live in the __change_events system topic, not in
// the metadata store, and are not read here.

// NamespacePolicy is the offload part of a namespace's Pulsar policies.
// Nil fields are unset (the broker's setting applies).
type NamespacePolicy struct {
	ThresholdBytes   *int64
	ThresholdSeconds *int64
	DeletionLagMs    *int64
	// MaxBlockSizeBytes is managedLedgerOffloadMaxBlockSizeInBytes from
	// offload_policies (informational: the rule's block size applies).
	MaxBlockSizeBytes *int64
	// Driver is offload_policies.managedLedgerOffloadDriver.
	Driver string
}

// Set reports whether the namespace sets any offload trigger or lag.
func (p *NamespacePolicy) Set() bool {
	return p != nil && (p.ThresholdBytes != nil || p.ThresholdSeconds != nil || p.DeletionLagMs != nil)
}

type policiesJSON struct {
	OffloadThreshold          *int64               `json:"offload_threshold"`
	OffloadThresholdInSeconds *int64               `json:"offload_threshold_in_seconds"`
	OffloadDeletionLagMs      *int64               `json:"offload_deletion_lag_ms"`
	OffloadPolicies           *offloadPoliciesJSON `json:"offload_policies"`
}

type offloadPoliciesJSON struct {
	Driver           *string `json:"managedLedgerOffloadDriver"`
	ThresholdBytes   *int64  `json:"managedLedgerOffloadThresholdInBytes"`
	ThresholdSeconds *int64  `json:"managedLedgerOffloadThresholdInSeconds"`
	DeletionLagMs    *int64  `json:"managedLedgerOffloadDeletionLagInMillis"`
	MaxBlockSize     *int64  `json:"managedLedgerOffloadMaxBlockSizeInBytes"`
}

// ParseNamespacePolicies reads the offload settings from the JSON value of
// /admin/policies/<tenant>/<namespace>; every other field is ignored.
func ParseNamespacePolicies(data []byte) (*NamespacePolicy, error) {
	var pj policiesJSON
	if err := json.Unmarshal(data, &pj); err != nil {
		return nil, fmt.Errorf("pulsar namespace policies: %w", err)
	}
	p := &NamespacePolicy{}
	if op := pj.OffloadPolicies; op != nil {
		p.ThresholdBytes, p.ThresholdSeconds, p.DeletionLagMs = op.ThresholdBytes, op.ThresholdSeconds, op.DeletionLagMs
		p.MaxBlockSizeBytes = op.MaxBlockSize
		if op.Driver != nil {
			p.Driver = *op.Driver
		}
	}
	if p.ThresholdBytes == nil && pj.OffloadThreshold != nil && *pj.OffloadThreshold != -1 {
		p.ThresholdBytes = pj.OffloadThreshold
	}
	if p.ThresholdSeconds == nil && pj.OffloadThresholdInSeconds != nil && *pj.OffloadThresholdInSeconds != -1 {
		p.ThresholdSeconds = pj.OffloadThresholdInSeconds
	}
	if p.DeletionLagMs == nil && pj.OffloadDeletionLagMs != nil {
		p.DeletionLagMs = pj.OffloadDeletionLagMs
	}
	return p, nil
}

// effective merges a namespace policy with the broker defaults into the
// rule's settings (mergeConfiguration: namespace over broker): Pulsar's
// size and age thresholds, when one is enabled (≥ 0), replace the rule's
// triggers; a deletion lag set there replaces the rule's.
func (p *NamespacePolicy) effective(rule Rule, bd BrokerDefaults) Rule {
	bytes := bd.ThresholdBytes
	if p.ThresholdBytes != nil {
		bytes = *p.ThresholdBytes
	}
	secs := bd.ThresholdSeconds
	if p.ThresholdSeconds != nil {
		secs = *p.ThresholdSeconds
	}
	if bytes >= 0 || secs >= 0 {
		rule.After, rule.KeepBytes, rule.KeepLedgers = -1, -1, -1
		if bytes >= 0 {
			rule.KeepBytes = bytes
		}
		if secs >= 0 {
			rule.After = time.Duration(secs) * time.Second
		}
	}
	if p.DeletionLagMs == nil && bd.DeletionLag == nil && rule.DeletionLag.Mode != LagBroker {
		return rule // neither Pulsar nor the config says: the rule's lag
	}
	lag := 4 * time.Hour // the broker's managedLedgerOffloadDeletionLagMs default
	if bd.DeletionLag != nil {
		lag = *bd.DeletionLag
	}
	if p.DeletionLagMs != nil {
		lag = time.Duration(*p.DeletionLagMs) * time.Millisecond
	}
	if lag < 0 {
		rule.DeletionLag = DeletionLag{Mode: LagNever}
	} else {
		rule.DeletionLag = DeletionLag{Mode: LagAfter, After: lag}
	}
	return rule
}

// ParseOffloadPolicies reads a topic's offload policies (the JSON of an
// OffloadPoliciesImpl, as GET …/{topic}/offloadPolicies answers): null
// fields are unset.
func ParseOffloadPolicies(data []byte) (*NamespacePolicy, error) {
	var op offloadPoliciesJSON
	if err := json.Unmarshal(data, &op); err != nil {
		return nil, fmt.Errorf("pulsar offload policies: %w", err)
	}
	p := &NamespacePolicy{ThresholdBytes: op.ThresholdBytes, ThresholdSeconds: op.ThresholdSeconds, DeletionLagMs: op.DeletionLagMs,
		MaxBlockSizeBytes: op.MaxBlockSize}
	if op.Driver != nil {
		p.Driver = *op.Driver
	}
	return p, nil
}
