package offloader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// brokerView reads what makes the brokers offload topics by themselves
// (policy.BrokerOffload): the broker-level thresholds of the broker the
// admin URL reaches, and topic-level offload policies, through the admin
// API (each call bounded by admin.timeout), cached for
// brokerViewTTL; without an admin URL, the configured broker_threshold_*
// values and no topic policies (they are in a system topic only the
// broker reads).
type brokerView struct {
	admin    *brokeradmin.Client // nil: no admin.url
	fallback policy.BrokerSettings
	log      *slog.Logger
	now      func() time.Time

	mu            sync.Mutex
	settings      *policy.BrokerSettings
	settingsAt    time.Time // of the last successful read
	triedAt       time.Time
	topics        map[string]topicEntry // by partitioned topic name
	disabledUntil time.Time             // topic-level policies off on the broker
}

type topicEntry struct {
	tp policy.TopicPolicy
	at time.Time
}

// Cache lifetimes of the broker view. A topic policy set meanwhile is
// seen at most brokerViewTTL later (the runner checks the topic's own
// policies again right before each job).
const (
	brokerViewTTL = 5 * time.Minute
	// brokerStale: a broker configuration last read this long ago no
	// longer counts; every topic is refused until it is read again.
	brokerStale = 15 * time.Minute
	// topicLookupsPerRound bounds the topic-policy calls of one
	// evaluation; topics not looked up yet are refused meanwhile.
	topicLookupsPerRound = 200
)

func newBrokerView(admin *brokeradmin.Client, c *Config, log *slog.Logger) *brokerView {
	return newBrokerViewWith(admin, c.brokerFallback(), log)
}

// brokerFallback are the broker thresholds assumed without admin.url.
func (c *Config) brokerFallback() policy.BrokerSettings {
	fb := policy.BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: -1,
		Source: "configured policy.pulsar_namespace_policies.broker_threshold_*; no admin.url to read the broker's"}
	if v := c.Policy.PulsarNamespacePolicies.BrokerThresholdBytes; v != nil {
		fb.ThresholdBytes = *v
	}
	if v := c.Policy.PulsarNamespacePolicies.BrokerThresholdSeconds; v != nil {
		fb.ThresholdSeconds = *v
	}
	return fb
}

func newBrokerViewWith(admin *brokeradmin.Client, fallback policy.BrokerSettings, log *slog.Logger) *brokerView {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &brokerView{admin: admin, fallback: fallback, log: log, now: time.Now, topics: map[string]topicEntry{}}
}

// ErrBrokerOffloads: the broker offloads the topic itself; tierkeeper
// wrote nothing (running both offloaders on one topic loses data).
var ErrBrokerOffloads = errors.New("left to the broker's own offloader")

// TopicGuard says, right before a job writes anything, whether the broker
// offloads a topic itself (policy.BrokerOffload), from fresh reads: the
// managed ledger, its namespace's policies, and with an admin client the
// topic's own offload policies and the broker's thresholds (cached for
// brokerViewTTL). Every read is bounded (ZooKeeper calls by the session,
// admin calls by the client's timeout).
type TopicGuard struct {
	conn   tzk.Reader
	ml     *mledger.Store
	chroot string
	view   *brokerView
}

// NewTopicGuard returns a guard reading namespace policies under chroot
// (the configuration store's) on conn. Without admin, the broker-level
// thresholds are taken as fallback says (the service: the configured
// broker_threshold_*; the offload command: off) and topic policies are
// not read (only the broker reads them, from a system topic).
func NewTopicGuard(conn tzk.Reader, ml *mledger.Store, admin *brokeradmin.Client, chroot string, fallback policy.BrokerSettings, log *slog.Logger) *TopicGuard {
	return &TopicGuard{conn: conn, ml: ml, chroot: chroot, view: newBrokerViewWith(admin, fallback, log)}
}

// Check is Refused as an error: nil when ml may be written; else one that
// wraps ErrBrokerOffloads (the topic is the broker's) or the read failure
// (it cannot be told). Either way nothing may be written.
func (g *TopicGuard) Check(ctx context.Context, ml string) error {
	why, err := g.Refused(ctx, ml)
	switch {
	case err != nil:
		return fmt.Errorf("cannot tell whether the broker offloads the topic itself (nothing was changed): %w", err)
	case why != "":
		return fmt.Errorf("%w: %s; nothing was changed", ErrBrokerOffloads, why)
	}
	return nil
}

// Refused returns why managed ledger ml is left to the broker's own
// offloader, "" when it is not; an error when something could not be
// read (then nothing may be written either).
func (g *TopicGuard) Refused(ctx context.Context, ml string) (string, error) {
	snap, err := g.ml.Get(ctx, ml)
	if err != nil {
		return "", err
	}
	t, err := policy.TopicFromInfo(ml, snap.Info)
	if err != nil {
		return "", err
	}
	sn := &snapshotter{conn: g.conn, chroot: g.chroot}
	ps := policy.Snapshot{Topics: []policy.Topic{t}, Broker: g.view.broker(ctx)}
	ps.Namespaces, ps.NamespaceErrors = sn.namespacePolicies(ctx, ps.Topics)
	if g.view.admin != nil {
		tp, err := g.view.topicPolicy(ctx, t)
		if err == nil {
			ps.TopicPolicies = map[string]policy.TopicPolicy{t.Topic.PartitionedTopic().String(): tp}
			g.view.mu.Lock()
			g.view.topics[t.Topic.PartitionedTopic().String()] = topicEntry{tp: tp, at: g.view.now()}
			g.view.mu.Unlock()
		} else if !errors.Is(err, brokeradmin.ErrTopicPoliciesDisabled) {
			return "", err
		}
	}
	return policy.BrokerOffload(t, ps), nil
}

// broker returns the broker-level thresholds.
func (v *brokerView) broker(ctx context.Context) *policy.BrokerSettings {
	if v.admin == nil {
		fb := v.fallback
		return &fb
	}
	v.mu.Lock()
	now := v.now()
	if v.settings != nil && now.Sub(v.triedAt) < brokerViewTTL {
		s := *v.settings
		v.mu.Unlock()
		return &s
	}
	v.mu.Unlock()
	bs := &policy.BrokerSettings{Source: "GET " + v.admin.URL() + "/admin/v2/brokers/configuration/runtime"}
	cfg, err := v.admin.RuntimeConfig(ctx)
	var th brokeradmin.OffloadThresholds
	if err == nil {
		th, err = brokeradmin.ThresholdsFrom(cfg)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.triedAt = now
	if err != nil {
		v.log.Warn("cannot read the broker's offload settings", "err", err)
		if v.settings != nil && v.settings.Err == "" && now.Sub(v.settingsAt) < brokerStale {
			s := *v.settings // the last good read still counts
			return &s
		}
		bs.Err = err.Error()
	} else {
		bs.ThresholdBytes, bs.ThresholdSeconds = th.Bytes, th.Seconds
		v.settingsAt = now
	}
	v.settings = bs
	s := *bs
	return &s
}

// topicPolicies returns the topic-level offload policies of the topics
// the rules consider (not excluded), by partitioned topic name. Without an
// admin URL, or while the broker has topic-level policies disabled, none.
func (v *brokerView) topicPolicies(ctx context.Context, topics []policy.Topic, rules *policy.Rules) map[string]policy.TopicPolicy {
	out := map[string]policy.TopicPolicy{}
	if v.admin == nil {
		return out
	}
	want := map[string]policy.Topic{}
	for _, t := range topics {
		if _, ok := rules.RuleFor(t.Topic); !ok {
			continue
		}
		if _, sys := policy.SystemTopic(t.Topic); sys {
			continue
		}
		want[t.Topic.PartitionedTopic().String()] = t
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	lookups := 0
	for _, n := range names {
		v.mu.Lock()
		now := v.now()
		disabled := now.Before(v.disabledUntil)
		e, ok := v.topics[n]
		v.mu.Unlock()
		if disabled {
			return map[string]policy.TopicPolicy{}
		}
		if ok && now.Sub(e.at) < brokerViewTTL {
			out[n] = e.tp
			continue
		}
		if lookups >= topicLookupsPerRound || ctx.Err() != nil {
			out[n] = policy.TopicPolicy{Err: "not looked up yet (at most " + fmt.Sprint(topicLookupsPerRound) + " topics per evaluation)"}
			continue
		}
		lookups++
		tp, err := v.topicPolicy(ctx, want[n])
		if errors.Is(err, brokeradmin.ErrTopicPoliciesDisabled) {
			v.mu.Lock()
			v.disabledUntil = now.Add(brokerViewTTL)
			v.mu.Unlock()
			return map[string]policy.TopicPolicy{}
		}
		v.mu.Lock()
		v.topics[n] = topicEntry{tp: tp, at: now}
		v.mu.Unlock()
		out[n] = tp
	}
	return out
}

// topicPolicy reads one topic's offload policies now.
func (v *brokerView) topicPolicy(ctx context.Context, t policy.Topic) (policy.TopicPolicy, error) {
	raw, err := v.admin.TopicOffloadPolicies(ctx, t.Topic)
	switch {
	case errors.Is(err, brokeradmin.ErrTopicPoliciesDisabled):
		return policy.TopicPolicy{}, err
	case errors.Is(err, brokeradmin.ErrNotFound):
		return policy.TopicPolicy{}, nil // deleted meanwhile: nothing to offload either
	case err != nil:
		return policy.TopicPolicy{Err: err.Error()}, nil
	case raw == nil:
		return policy.TopicPolicy{}, nil
	}
	p, err := policy.ParseOffloadPolicies(raw)
	if err != nil {
		return policy.TopicPolicy{Err: err.Error()}, nil
	}
	return policy.TopicPolicy{Policy: p}, nil
}
