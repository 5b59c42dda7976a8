# BookKeeper reader (bookkeeper/..., cmd/offloader ledger*): unit, fault-
# injection (in-process fake bookie) and real-ZooKeeper tests run in
# `make test`; the real-bookie suite is test/compat/bk_test.go.
# See docs/bookkeeper.md.

# Size of the benchmark ledger (MiB) and rounds of Java-vs-Go reads.
BENCH_BK_MIB    ?= 512
BENCH_BK_ROUNDS ?= 3
# 1: the bookies of the benchmarks that measure what reading costs them
# (bench-bk, bench-offload) run in Pulsar's JVM settings (fixed heap, G1,
# both JIT compilers: testenv.BookieOptions.PulsarJVM); 0: the test
# suite's quick-start JVM (C1 only, serial GC).
BENCH_BOOKIE_PULSAR_JVM ?= 1

.PHONY: test-bk bench-bk

## test-bk: the BookKeeper reader's own tests plus its real-bookie compat tests.
test-bk: compat-prepare
	TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -count=1 ./bookkeeper/... ./cmd/offloader/
	TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -count=1 -run '^TestBK' ./test/compat/

## bench-bk: Go reader (v2 and v3 wire) vs BookKeeper's Java client (v2 and v3) reading the same 512 MiB ledger from 3 real bookies (MB/s, ratios, Go peak RSS, the bookies' CPU seconds per GiB each reader costs), after the bookies' read path is warmed until their CPU per GiB settles.
bench-bk: compat-prepare
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 TIERKEEPER_BENCH_BK_MIB=$(BENCH_BK_MIB) TIERKEEPER_BENCH_BK_ROUNDS=$(BENCH_BK_ROUNDS) TK_BENCH_BOOKIE_PULSAR_JVM=$(BENCH_BOOKIE_PULSAR_JVM) \
	  $(GO) test -run '^$$' -bench '^BenchmarkBKLedgerRead$$' -benchtime 1x -timeout 60m ./test/compat/ \
	  | grep -v '^\[compat\]'
bench: bench-bk

## bench-bk-read-buffers: how many BufferedReadChannel (readBufferSizeBytes heap buffers) 3 real bookies hold after reading a ledger spread over tens of small entry logs: on the heap and live after a full GC (jcmd GC.class_histogram), after one read, a second and 4 at once (~1 min).
BENCH_BK_HEAP_MIB ?= 256
BENCH_BK_HEAP_LOG_MIB ?= 4
.PHONY: bench-bk-read-buffers
bench: bench-bk-read-buffers
bench-bk-read-buffers: compat-prepare
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 TIERKEEPER_BENCH_BK_HEAP_MIB=$(BENCH_BK_HEAP_MIB) TIERKEEPER_BENCH_BK_HEAP_LOG_MIB=$(BENCH_BK_HEAP_LOG_MIB) TK_BENCH_BOOKIE_PULSAR_JVM=$(BENCH_BOOKIE_PULSAR_JVM) \
	  $(GO) test -count=1 -run '^$$' -bench '^BenchmarkBKReadBufferHeap$$' -benchtime 1x -timeout 30m -v ./test/compat/ \
	  | grep -E '^(Benchmark|    bk_heap_bench_test|ok|FAIL|---)' | sed 's/^    bk_heap_bench_test.go:[0-9]*: //'
