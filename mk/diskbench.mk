# diskbench: the disk benchmark engine (diskbench/) and its CLI (cmd/diskbench).
#
# fio is only needed by bench-fio (diskbench compare-fio), which checks the
# engine against fio on the same workloads.
APT_PACKAGES += fio
# strace: test/compat/journal_test.go compares the system calls of
# diskbench's journal model with those of BookKeeper's own Journal.
APT_PACKAGES += strace

# Where the demo and the fio comparison put their (removed) files: a fresh
# directory under .cache/, i.e. on the disk holding the checkout. Set it to
# another directory on a real disk (not tmpfs/overlay) to measure that one.
DISKBENCH_DIR   ?= $(CACHE)/diskbench
DEMO_BUDGET     ?= 40s
DEMO_SVG        ?= $(BIN)/diskbench-demo.svg
FIO_DURATION    ?= 5s
FIO_REPEAT      ?= 3

JOURNAL_ROUNDS   ?= 6
JOURNAL_DURATION ?= 2s
JOURNAL_CASES    ?= 1x4k,1x64k,2x4k,2x64k,4x4k,4x64k

.PHONY: diskbench-bin demo-diskbench test-diskbench bench-fio bench-diskbench bench-journal

diskbench-bin:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/diskbench ./cmd/diskbench

## demo-diskbench: a short diskbench sweep (≤ $(DEMO_BUDGET), ≤ min(2 GiB, 10% free)) of a temp dir on the local disk; table on stdout, chart in bin/diskbench-demo.svg.
demo-diskbench: diskbench-bin
	@mkdir -p $(DISKBENCH_DIR)
	@d=$$(mktemp -d $(DISKBENCH_DIR)/demo.XXXXXX) && trap 'rmdir "$$d"' EXIT && \
	  $(BIN)/diskbench sweep --dir "$$d" --time-budget $(DEMO_BUDGET) --svg $(DEMO_SVG)

## test-diskbench: the diskbench library and CLI tests (seconds).
test-diskbench:
	$(GO) test -count=1 ./diskbench/... ./cmd/diskbench/...

## bench-fio: fio and diskbench on the same workloads in the same run (journal sparse and preallocated); table of diskbench/fio ratios (~11 min).
bench-fio: deps-apt diskbench-bin
	@mkdir -p $(DISKBENCH_DIR)
	@d=$$(mktemp -d $(DISKBENCH_DIR)/fio.XXXXXX) && trap 'rmdir "$$d"' EXIT && \
	  $(BIN)/diskbench compare-fio --dir "$$d" --duration $(FIO_DURATION) --repeat $(FIO_REPEAT)

## bench-journal: diskbench's journal model vs BookKeeper 4.17.2's own Journal on the same directory, alternating; ratio table (~10 min).
bench-journal: deps compat-prepare
	@mkdir -p $(DISKBENCH_DIR)
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 TIERKEEPER_BENCH_JOURNAL_DIR=$(DISKBENCH_DIR) \
	  TIERKEEPER_BENCH_JOURNAL_ROUNDS=$(JOURNAL_ROUNDS) TIERKEEPER_BENCH_JOURNAL_DURATION=$(JOURNAL_DURATION) \
	  TIERKEEPER_BENCH_JOURNAL_CASES=$(JOURNAL_CASES) \
	  $(GO) test -run '^$$' -bench '^BenchmarkJournalVsBookKeeper$$' -benchtime 1x -timeout 90m ./test/compat/ \
	  | grep -v '^\[compat\]'

## bench-diskbench: Go benchmarks of the engine's own overhead (histogram, per-op bookkeeping).
bench-diskbench:
	$(GO) test -run '^$$' -bench . -benchtime 1s ./diskbench/

bench: bench-diskbench bench-fio bench-journal
