// Package bkproto holds the generated protobuf types for BookKeeper's ledger
// metadata (dataformats.proto) and its v3 wire protocol (protocol.proto).
//
// The .proto files are written from BookKeeper's documented field numbers
// (docs/bookkeeper.md). Regenerate with `make proto` (protoc from
// Debian's protobuf-compiler and protoc-gen-go v1.36.12):
//
//	protoc --go_out=. --go_opt=paths=source_relative internal/bkproto/*.proto
package bkproto
