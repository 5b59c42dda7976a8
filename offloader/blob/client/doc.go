// Package client builds a blob.Store from a config file:
//
//	type: s3              # fs | s3 | cos
//	config:               # the provider's Config (fs.Config, s3.Config, cos.Config)
//	  bucket: offload
//	  region: us-east-1
//	limits:               # optional token buckets (blob.Limits)
//	  upload_bytes_per_second: 104857600
//	  requests_per_second: 500
//
// YAML or JSON. Parsing is strict: an unknown key at any level is an error
// naming it. Missing keys take the provider's DefaultConfig values; Validate
// errors name the offending key. Examples: configs/blob-*.yaml.
//
// # Adding a provider
//
//  1. A package offloader/blob/<name> with Config (snake_case json tags),
//     DefaultConfig, Validate naming keys, New(…) returning a store that
//     implements blob.Store (and blob.MultipartLister if it can).
//  2. Its tests run blobtest.AcceptanceTest against a real server.
//  3. A case in New and in providerConfig below, a configs/blob-<name>.yaml,
//     and a section in docs/blobstores.md.
package client
