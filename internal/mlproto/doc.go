// Package mlproto holds the generated protobuf types for Pulsar's
// managed-ledger metadata (mldataformats.proto).
//
// Regenerate with `make proto`:
//
//	protoc --go_out=. --go_opt=paths=source_relative internal/mlproto/*.proto
package mlproto
