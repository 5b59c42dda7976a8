// Package offloader is the offload service: its configuration (Config,
// parsed strictly from YAML with secrets from the environment or files),
// the start-up checks (Check) and the service that assembles discovery,
// policy, scheduler, pipeline and sweeper (docs/design.md shows how they
// fit together and the invariants they keep).
//
// # Config
//
// Parse decodes the document into a node tree, resolves the tags
// `!env NAME` and `!file PATH`, checks every key against the Go types
// (unknown keys are errors with their line and a suggestion), decodes,
// applies defaults and validates; every problem is reported at once.
// Values read through !env and !file are scrubbed from every error;
// secret fields (blob.Secret) redact themselves in fmt, JSON, YAML and
// slog, and the store section renders through its provider's config type.
//
// # Peers
//
// OpenPeers is the one way to open what the offloader works with: the
// ZooKeeper session and the managed-ledger store, BookKeeper's ledger
// metadata and the bookie client, the object store and the broker admin
// client, each open bounded in time and its error naming the peer. Its
// PeersConfig comes from a Config (Config.Peers) or from a command's
// flags. The service opens them once per ZooKeeper session; Plan, Check,
// Scrub, Sweep and the flows behind the commands (SelectOffload and
// Offload, VerifyTopic, InspectTopic, OpenLedgerSource) once per run.
//
// # Service
//
// service.go wires the service (New, Run, one ZooKeeper session's work),
// service_status.go holds the status document and its metrics (publish),
// service_http.go serves /status, /metrics, /healthz and /readyz.
package offloader
