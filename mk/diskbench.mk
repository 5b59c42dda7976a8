# diskbench: the disk benchmark engine (diskbench/) and its CLI (cmd/diskbench).
#
# fio is only needed by bench-fio (diskbench compare-fio), which checks the
# engine against fio on the same workloads.
APT_PACKAGES += fio

# Where the demo and the fio comparison put their (removed) files: a fresh
# directory under .cache/, i.e. on the disk holding the checkout. Set it to
# another directory on a real disk (not tmpfs/overlay) to measure that one.
DISKBENCH_DIR   ?= $(CACHE)/diskbench
DEMO_BUDGET     ?= 40s
DEMO_SVG        ?= $(BIN)/diskbench-demo.svg
FIO_DURATION    ?= 5s
FIO_REPEAT      ?= 3

.PHONY: diskbench-bin test-diskbench bench-fio bench-diskbench

diskbench-bin:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/diskbench ./cmd/diskbench

## demo: a short diskbench sweep (≤ $(DEMO_BUDGET), ≤ min(2 GiB, 10% free)) of a temp dir on the local disk; table on stdout, chart in bin/diskbench-demo.svg.
demo: diskbench-bin
	@mkdir -p $(DISKBENCH_DIR)
	@d=$$(mktemp -d $(DISKBENCH_DIR)/demo.XXXXXX) && trap 'rmdir "$$d"' EXIT && \
	  $(BIN)/diskbench sweep --dir "$$d" --time-budget $(DEMO_BUDGET) --svg $(DEMO_SVG)

## test-diskbench: the diskbench library and CLI tests (seconds).
test-diskbench:
	$(GO) test -count=1 ./diskbench/... ./cmd/diskbench/...

## bench-fio: fio and diskbench on the same workloads in the same run; table of diskbench/fio ratios (~6 min).
bench-fio: deps-apt diskbench-bin
	@mkdir -p $(DISKBENCH_DIR)
	@d=$$(mktemp -d $(DISKBENCH_DIR)/fio.XXXXXX) && trap 'rmdir "$$d"' EXIT && \
	  $(BIN)/diskbench compare-fio --dir "$$d" --duration $(FIO_DURATION) --repeat $(FIO_REPEAT)

## bench-diskbench: Go benchmarks of the engine's own overhead (histogram, per-op bookkeeping).
bench-diskbench:
	$(GO) test -run '^$$' -bench . -benchtime 1s ./diskbench/

bench: bench-diskbench bench-fio
