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
package offloader
