// Package offloadbench is `make bench-offload`: the offload pipeline
// measured against its baselines on real peers (ZooKeeper, three bookies,
// versitygw, Pulsar's own jcloud offloader and reader from Maven Central).
// Only its benchmark runs anything; see bench_test.go.
package offloadbench
