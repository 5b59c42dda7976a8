package policy

import (
	"regexp"
	"strings"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Pulsar's own system topics, never offloaded by tierkeeper whatever the
// rules say. The list follows Pulsar 4.0's BrokerService.isSystemTopic:
// NamespaceService.isSystemServiceNamespace (the pulsar/system namespace,
// the brokers' heartbeat namespaces pulsar/<host:port> and
// pulsar/<cluster>/<host:port>, the SLA-monitor namespaces
// <tenant>/<cluster>/<host:port>) or SystemTopicNames.isSystemTopic (on
// the partitioned topic's local name: the EVENTS_TOPIC_NAMES
// __change_events, __transaction_buffer_snapshot,
// __transaction_buffer_snapshot_segments and
// __transaction_buffer_snapshot_indexes, EventsTopicNames matching by
// suffix; the transaction coordinator's topics, all in pulsar/system; and
// the pending-ack stores, whose names end in __transaction_pending_ack).
var systemLocalSuffixes = []string{
	"__change_events",
	"__transaction_buffer_snapshot",
	"__transaction_buffer_snapshot_segments",
	"__transaction_buffer_snapshot_indexes",
	"__transaction_pending_ack",
}

// hostPort is a heartbeat or SLA-monitor namespace's last part (a broker
// id, host:port).
var hostPort = regexp.MustCompile(`^[^:/]+:[0-9]+$`)

// SystemTopic reports whether t is one of Pulsar's system topics and why.
func SystemTopic(t mledger.TopicName) (why string, ok bool) {
	switch {
	case t.Tenant == "pulsar" && t.Cluster == "" && t.Namespace == "system":
		return "Pulsar's system namespace pulsar/system", true
	case t.Tenant == "pulsar" && hostPort.MatchString(t.Namespace):
		return "a broker heartbeat namespace (" + t.NamespacePath() + ")", true
	case t.Cluster != "" && hostPort.MatchString(t.Namespace):
		return "an SLA-monitor or heartbeat namespace (" + t.NamespacePath() + ")", true
	}
	local := t.PartitionedTopic().Local
	for _, s := range systemLocalSuffixes {
		if strings.HasSuffix(local, s) {
			return "a Pulsar system topic (" + s + ")", true
		}
	}
	return "", false
}
