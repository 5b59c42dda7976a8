# Offload object format (offloader/format, offloader/format/upload).
.PHONY: test-format bench-format

## test-format: the format codec, reader and upload pipeline unit tests (fast, in-memory store).
test-format:
	$(GO) test -count=1 ./offloader/format/...

# Benchmark knobs: ledger sizes in MiB (the first is also the throughput
# size), block size, parts in flight, entry size, paired rounds.
BENCH_FORMAT_SIZES  ?= 1024,2048
BENCH_FORMAT_BLOCK  ?= 64
BENCH_FORMAT_PARTS  ?= 2
BENCH_FORMAT_ENTRY  ?= 64
BENCH_FORMAT_ROUNDS ?= 3

## bench-format: encode+multipart upload vs raw multipart on versitygw, and peak RSS at two ledger sizes.
bench-format: $(CACHE)/bin/versitygw
	TIERKEEPER_REQUIRE_PEERS=1 TK_BENCH_SIZES=$(BENCH_FORMAT_SIZES) TK_BENCH_BLOCK_MIB=$(BENCH_FORMAT_BLOCK) \
	  TK_BENCH_PARTS=$(BENCH_FORMAT_PARTS) TK_BENCH_ENTRY_KIB=$(BENCH_FORMAT_ENTRY) TK_BENCH_ROUNDS=$(BENCH_FORMAT_ROUNDS) \
	  $(GO) test -count=1 -run '^$$' -bench BenchmarkFormatUpload -benchtime 1x -timeout 60m ./offloader/format/upload/

bench: bench-format
