// Package brokeradmin is a small client of the Pulsar broker admin REST API:
// the calls the offloader needs after it rewrites a managed ledger's
// metadata in ZooKeeper (docs/design.md invariant 6), and to learn whether
// the broker offloads a topic by itself.
//
//	Unload         PUT /admin/v2/persistent/{tenant}/{ns}/{topic}/unload
//	               PUT /admin/persistent/{tenant}/{cluster}/{ns}/{topic}/unload (v1 names)
//	InternalStats  GET …/{topic}/internalStats (the broker's in-memory view:
//	               per ledger, whether it is served from the object store)
//	RuntimeConfig  GET /admin/v2/brokers/configuration/runtime (the offload
//	               thresholds the broker applies itself; ThresholdsFrom)
//	TopicOffloadPolicies
//	               GET …/{topic}/offloadPolicies (a topic's own offload
//	               policies; 405 when topic-level policies are disabled)
//
// A partitioned topic's base name unloads every partition (the broker fans
// out); a partition name ("x-partition-2") unloads that partition only.
// Topic names are Pulsar's (mledger.TopicName); the local name is
// URL-encoded in the path exactly as Pulsar's admin client does.
//
// # Why unload
//
// A broker reads a managed ledger's znode once, when it loads the topic,
// and never watches it. After tierkeeper marks a ledger offloaded, the
// broker keeps reading that ledger from BookKeeper until it reloads the
// topic. Unload closes the topic and its managed ledger without writing the
// znode; the next producer or consumer (clients reconnect at once) loads it
// again from the store and from then on reads the ledger from the object
// store.
//
// # Calls are bounded
//
// Every call has a deadline (Config.Timeout, default 30 s, on top of the
// caller's ctx) and says what it waited for. Redirects (307 to the broker
// that owns the topic) are followed at most 5 times and keep the
// Authorization header unless the redirect would downgrade https to http.
// Errors are *StatusError for HTTP answers (with the broker's "reason"),
// wrapping ErrNotFound (404), ErrUnauthorized (401/403) or ErrRefused
// (other 4xx/5xx); transport failures wrap ErrUnreachable.
//
// # Authentication and TLS
//
// Token authentication (Authorization: Bearer <token>, Pulsar's
// AuthenticationToken) from Config.Token or Config.TokenFile (re-read on
// every call, so a rotated token file works). TLS: Config.CAFile (PEM),
// Config.InsecureSkipVerify, and a client certificate (Config.CertFile,
// KeyFile) for brokers with TLS authentication. Tokens never appear in
// errors or logs.
package brokeradmin
